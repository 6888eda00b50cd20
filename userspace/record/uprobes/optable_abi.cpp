// The fixed offsets and values the uprobe programs read (bpf/uprobe_ops.h)
// checked against libfabric's own headers at build time: a libfabric whose
// structs moved fails to build here rather than pairing the wrong fields.
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cstddef>

#include "bpf/uprobe_ops.h"

// The BPF side reads these fields at fixed offsets.
static_assert(offsetof(fi_msg, msg_iov) == FT_UP_MSG_IOV_OFF, "fi_msg layout");
static_assert(offsetof(fi_msg, iov_count) == FT_UP_MSG_COUNT_OFF, "fi_msg layout");
static_assert(offsetof(fi_msg, context) == FT_UP_MSG_CTX_OFF, "fi_msg layout");
static_assert(offsetof(fi_msg_tagged, msg_iov) == FT_UP_MSG_IOV_OFF, "fi_msg_tagged layout");
static_assert(offsetof(fi_msg_tagged, iov_count) == FT_UP_MSG_COUNT_OFF, "fi_msg_tagged layout");
static_assert(offsetof(fi_msg_tagged, context) == FT_UP_TMSG_CTX_OFF, "fi_msg_tagged layout");
static_assert(offsetof(fi_msg_rma, msg_iov) == FT_UP_MSG_IOV_OFF, "fi_msg_rma layout");
static_assert(offsetof(fi_msg_rma, iov_count) == FT_UP_MSG_COUNT_OFF, "fi_msg_rma layout");
static_assert(offsetof(fi_msg_rma, context) == FT_UP_RMSG_CTX_OFF, "fi_msg_rma layout");
static_assert(offsetof(fi_msg_atomic, msg_iov) == FT_UP_MSG_IOV_OFF, "fi_msg_atomic layout");
static_assert(offsetof(fi_msg_atomic, iov_count) == FT_UP_MSG_COUNT_OFF, "fi_msg_atomic layout");
static_assert(offsetof(fi_msg_atomic, datatype) == FT_UP_AMSG_DT_OFF && sizeof(fi_datatype) == 4,
              "fi_msg_atomic layout");
static_assert(offsetof(fi_msg_atomic, context) == FT_UP_AMSG_CTX_OFF, "fi_msg_atomic layout");
// iov_bytes sums a fi_ioc array as an iovec array: element count where iov_len is.
static_assert(sizeof(fi_ioc) == sizeof(iovec) &&
                  offsetof(fi_ioc, count) == offsetof(iovec, iov_len),
              "fi_ioc layout");
static_assert(FI_INT8 == 0 && FI_UINT64 == 7 && FI_DOUBLE == 9 && FI_LONG_DOUBLE == 12 &&
                  FI_LONG_DOUBLE_COMPLEX == 13 && FI_INT128 == 14 && FI_UINT128 == 15,
              "enum fi_datatype (ft_up_datatype_size)");
static_assert(offsetof(fi_cq_attr, format) == FT_UP_CQ_ATTR_FORMAT_OFF, "fi_cq_attr layout");
// Each message struct's peer where FT_UP_PEER_MSG reads it.
static_assert(offsetof(fi_msg, addr) == FT_UP_MSG_ADDR_OFF &&
                  offsetof(fi_msg_tagged, addr) == FT_UP_MSG_ADDR_OFF &&
                  offsetof(fi_msg_rma, addr) == FT_UP_MSG_ADDR_OFF &&
                  offsetof(fi_msg_atomic, addr) == FT_UP_MSG_ADDR_OFF,
              "the messages' ->addr (FT_UP_PEER_MSG)");
static_assert(FI_ADDR_UNSPEC == FT_UP_ADDR_UNSPEC && FI_ADDR_NOTAVAIL == FT_UP_ADDR_UNSPEC,
              "fi_addr_t's any / not available");
static_assert(FI_CLASS_AV == FT_UP_FI_CLASS_AV && offsetof(fid, fclass) == 0, "struct fid's class");
// What an endpoint open reads of its info (uprobe_ops.bpf.c, ft_up_ep_open).
static_assert(offsetof(fi_info, addr_format) == FT_UP_INFO_ADDR_FORMAT_OFF &&
                  offsetof(fi_info, src_addrlen) == FT_UP_INFO_SRC_ADDRLEN_OFF &&
                  offsetof(fi_info, dest_addrlen) == FT_UP_INFO_DEST_ADDRLEN_OFF &&
                  offsetof(fi_info, src_addr) == FT_UP_INFO_SRC_ADDR_OFF &&
                  offsetof(fi_info, dest_addr) == FT_UP_INFO_DEST_ADDR_OFF &&
                  offsetof(fi_info, ep_attr) == FT_UP_INFO_EP_ATTR_OFF &&
                  offsetof(fi_ep_attr, type) == 0 && FI_EP_MSG == FT_UP_FI_EP_MSG,
              "fi_info layout");
static_assert(offsetof(fi_info, tx_attr) == FT_UP_INFO_TX_ATTR_OFF &&
                  offsetof(fi_info, rx_attr) == FT_UP_INFO_RX_ATTR_OFF &&
                  offsetof(fi_tx_attr, op_flags) == FT_UP_ATTR_OP_FLAGS_OFF &&
                  offsetof(fi_rx_attr, op_flags) == FT_UP_ATTR_OP_FLAGS_OFF,
              "fi_info's tx_attr and rx_attr op_flags");
// The flags that decide whether an op completes (op_completes).
static_assert(FI_MULTI_RECV == FT_UP_FI_MULTI_RECV && FI_PEEK == FT_UP_FI_PEEK &&
                  FI_TRIGGER == FT_UP_FI_TRIGGER && FI_COMPLETION == FT_UP_FI_COMPLETION &&
                  FI_INJECT == FT_UP_FI_INJECT && FI_CLAIM == FT_UP_FI_CLAIM &&
                  FI_SELECTIVE_COMPLETION == FT_UP_FI_SELECTIVE_COMPLETION &&
                  FI_EAGAIN == FT_UP_FI_EAGAIN,
              "op and bind flags");
static_assert(FI_SOCKADDR == FT_UP_FI_SOCKADDR && FI_SOCKADDR_IN6 == FT_UP_FI_SOCKADDR_IN6 &&
                  AF_INET == FT_UP_AF_INET && AF_INET6 == FT_UP_AF_INET6,
              "sockaddr formats and families (ft_up_connect_ret)");
// The endpoint open's call in flight and a connected endpoint are built from
// up_zero's all-zero row (lookup_or_zero).
static_assert(sizeof(ft_up_stats) >= sizeof(ft_up_conn_call) &&
                  sizeof(ft_up_stats) >= sizeof(ft_up_conn),
              "up_zero is large enough");
static_assert(sizeof(fi_cq_entry) == 8 && sizeof(fi_cq_msg_entry) == 24 &&
                  sizeof(fi_cq_data_entry) == 40 && sizeof(fi_cq_tagged_entry) == 48,
              "CQ entry sizes (uprobe_ops.bpf.c entry_size)");
