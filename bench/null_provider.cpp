#include "bench/null_provider.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <sys/uio.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>

namespace fabtrace_bench {

namespace {

// Each object starts with its libfabric fid struct and is standard-layout, so
// the fid pointer libfabric passes around converts back to the object.
struct NullFabric {
  struct fid_fabric fabric;
};

struct NullDomain {
  struct fid_domain domain;
  NullFabric* fabric;
  bool thread_safe;  // FI_THREAD_SAFE: CQs take a lock
};

struct NullCq {
  struct fid_cq cq;
  NullDomain* domain;
  bool locked;
  enum fi_cq_format format;
  size_t entry_size;
  size_t mask;
  uint64_t head;  // next entry to read
  uint64_t tail;  // next entry to write
  struct fi_cq_tagged_entry* ring;
  pthread_mutex_t mu;
};

struct NullEp {
  struct fid_ep ep;
  NullDomain* domain;
  NullCq* tx_cq;
  NullCq* rx_cq;
  bool tx_selective;
  bool rx_selective;
  bool enabled;
  uint64_t tx_op_flags;
  uint64_t rx_op_flags;
  void* last_context;
  struct sockaddr_in name;
};

static_assert(std::is_standard_layout<NullFabric>::value, "fid first");
static_assert(std::is_standard_layout<NullDomain>::value, "fid first");
static_assert(std::is_standard_layout<NullCq>::value, "fid first");
static_assert(std::is_standard_layout<NullEp>::value, "fid first");

inline NullEp* ep_of(struct fid_ep* ep) { return reinterpret_cast<NullEp*>(ep); }
inline NullEp* ep_of(struct fid* fid) { return reinterpret_cast<NullEp*>(fid); }
inline NullCq* cq_of(struct fid_cq* cq) { return reinterpret_cast<NullCq*>(cq); }

// ---------------------------------------------------------------------------
// The CQ ring.

struct CqLock {
  explicit CqLock(NullCq* q) : q_(q) {
    if (q_->locked) pthread_mutex_lock(&q_->mu);
  }
  ~CqLock() {
    if (q_->locked) pthread_mutex_unlock(&q_->mu);
  }
  CqLock(const CqLock&) = delete;
  CqLock& operator=(const CqLock&) = delete;

 private:
  NullCq* q_;
};

inline ssize_t push(NullCq* q, void* ctx, uint64_t flags, size_t len, const void* buf,
                    uint64_t data, uint64_t tag) {
  CqLock lk(q);
  if (q->tail - q->head > q->mask) return -FI_EAGAIN;
  struct fi_cq_tagged_entry& e = q->ring[q->tail & q->mask];
  e.op_context = ctx;
  e.flags = flags;
  e.len = len;
  e.buf = const_cast<void*>(buf);
  e.data = data;
  e.tag = tag;
  ++q->tail;
  return 0;
}

// Whether a plain op (no flags argument) of a direction completes.
inline bool plain_completes(const NullCq* q, bool selective, uint64_t op_flags) {
  return q && (!selective || (op_flags & FI_COMPLETION));
}

// Whether an op with explicit flags (the *msg calls) completes. FI_INJECT
// without FI_COMPLETION reports nothing, as fabtrace assumes.
inline bool flagged_completes(const NullCq* q, bool selective, uint64_t flags) {
  if (!q) return false;
  if (flags & FI_INJECT) return (flags & FI_COMPLETION) != 0;
  return !selective || (flags & FI_COMPLETION);
}

inline ssize_t tx_done(struct fid_ep* fep, bool completes, void* ctx, uint64_t cflags, size_t len,
                       const void* buf, uint64_t data, uint64_t tag) {
  NullEp* ep = ep_of(fep);
  ep->last_context = ctx;
  if (!completes) return 0;
  return push(ep->tx_cq, ctx, cflags, len, buf, data, tag);
}

inline ssize_t rx_done(struct fid_ep* fep, bool completes, void* ctx, uint64_t cflags, size_t len,
                       const void* buf, uint64_t tag) {
  NullEp* ep = ep_of(fep);
  ep->last_context = ctx;
  if (!completes) return 0;
  return push(ep->rx_cq, ctx, cflags, len, buf, 0, tag);
}

inline bool tx_plain(struct fid_ep* fep) {
  const NullEp* ep = ep_of(fep);
  return plain_completes(ep->tx_cq, ep->tx_selective, ep->tx_op_flags);
}
inline bool rx_plain(struct fid_ep* fep) {
  const NullEp* ep = ep_of(fep);
  return plain_completes(ep->rx_cq, ep->rx_selective, ep->rx_op_flags);
}
inline bool tx_flagged(struct fid_ep* fep, uint64_t flags) {
  const NullEp* ep = ep_of(fep);
  return flagged_completes(ep->tx_cq, ep->tx_selective, flags);
}
inline bool rx_flagged(struct fid_ep* fep, uint64_t flags) {
  const NullEp* ep = ep_of(fep);
  return flagged_completes(ep->rx_cq, ep->rx_selective, flags);
}

inline size_t iov_len(const struct iovec* iov, size_t n) {
  size_t b = 0;
  for (size_t i = 0; i < n; ++i) b += iov[i].iov_len;
  return b;
}
inline const void* iov_buf(const struct iovec* iov, size_t n) {
  return n ? iov[0].iov_base : nullptr;
}

// ---------------------------------------------------------------------------
// Untagged messages.

constexpr uint64_t kSendFlags = FI_SEND | FI_MSG;
constexpr uint64_t kRecvFlags = FI_RECV | FI_MSG;
constexpr uint64_t kTsendFlags = FI_SEND | FI_TAGGED;
constexpr uint64_t kTrecvFlags = FI_RECV | FI_TAGGED;
constexpr uint64_t kWriteFlags = FI_RMA | FI_WRITE;
constexpr uint64_t kReadFlags = FI_RMA | FI_READ;

ssize_t msg_recv(struct fid_ep* ep, void* buf, size_t len, void*, fi_addr_t, void* context) {
  return rx_done(ep, rx_plain(ep), context, kRecvFlags, len, buf, 0);
}
ssize_t msg_recvv(struct fid_ep* ep, const struct iovec* iov, void**, size_t count, fi_addr_t,
                  void* context) {
  return rx_done(ep, rx_plain(ep), context, kRecvFlags, iov_len(iov, count), iov_buf(iov, count),
                 0);
}
ssize_t msg_recvmsg(struct fid_ep* ep, const struct fi_msg* msg, uint64_t flags) {
  return rx_done(ep, rx_flagged(ep, flags), msg->context, kRecvFlags,
                 iov_len(msg->msg_iov, msg->iov_count), iov_buf(msg->msg_iov, msg->iov_count), 0);
}
ssize_t msg_send(struct fid_ep* ep, const void* buf, size_t len, void*, fi_addr_t, void* context) {
  return tx_done(ep, tx_plain(ep), context, kSendFlags, len, buf, 0, 0);
}
ssize_t msg_sendv(struct fid_ep* ep, const struct iovec* iov, void**, size_t count, fi_addr_t,
                  void* context) {
  return tx_done(ep, tx_plain(ep), context, kSendFlags, iov_len(iov, count), iov_buf(iov, count), 0,
                 0);
}
ssize_t msg_sendmsg(struct fid_ep* ep, const struct fi_msg* msg, uint64_t flags) {
  return tx_done(ep, tx_flagged(ep, flags), msg->context, kSendFlags,
                 iov_len(msg->msg_iov, msg->iov_count), iov_buf(msg->msg_iov, msg->iov_count),
                 msg->data, 0);
}
ssize_t msg_inject(struct fid_ep* ep, const void*, size_t, fi_addr_t) {
  ep_of(ep)->last_context = nullptr;
  return 0;
}
ssize_t msg_senddata(struct fid_ep* ep, const void* buf, size_t len, void*, uint64_t data,
                     fi_addr_t, void* context) {
  return tx_done(ep, tx_plain(ep), context, kSendFlags | FI_REMOTE_CQ_DATA, len, buf, data, 0);
}
ssize_t msg_injectdata(struct fid_ep* ep, const void*, size_t, uint64_t, fi_addr_t) {
  ep_of(ep)->last_context = nullptr;
  return 0;
}

// ---------------------------------------------------------------------------
// Tagged messages.

ssize_t t_recv(struct fid_ep* ep, void* buf, size_t len, void*, fi_addr_t, uint64_t tag, uint64_t,
               void* context) {
  return rx_done(ep, rx_plain(ep), context, kTrecvFlags, len, buf, tag);
}
ssize_t t_recvv(struct fid_ep* ep, const struct iovec* iov, void**, size_t count, fi_addr_t,
                uint64_t tag, uint64_t, void* context) {
  return rx_done(ep, rx_plain(ep), context, kTrecvFlags, iov_len(iov, count), iov_buf(iov, count),
                 tag);
}
ssize_t t_recvmsg(struct fid_ep* ep, const struct fi_msg_tagged* msg, uint64_t flags) {
  return rx_done(ep, rx_flagged(ep, flags), msg->context, kTrecvFlags,
                 iov_len(msg->msg_iov, msg->iov_count), iov_buf(msg->msg_iov, msg->iov_count),
                 msg->tag);
}
ssize_t t_send(struct fid_ep* ep, const void* buf, size_t len, void*, fi_addr_t, uint64_t tag,
               void* context) {
  return tx_done(ep, tx_plain(ep), context, kTsendFlags, len, buf, 0, tag);
}
ssize_t t_sendv(struct fid_ep* ep, const struct iovec* iov, void**, size_t count, fi_addr_t,
                uint64_t tag, void* context) {
  return tx_done(ep, tx_plain(ep), context, kTsendFlags, iov_len(iov, count), iov_buf(iov, count),
                 0, tag);
}
ssize_t t_sendmsg(struct fid_ep* ep, const struct fi_msg_tagged* msg, uint64_t flags) {
  return tx_done(ep, tx_flagged(ep, flags), msg->context, kTsendFlags,
                 iov_len(msg->msg_iov, msg->iov_count), iov_buf(msg->msg_iov, msg->iov_count),
                 msg->data, msg->tag);
}
ssize_t t_inject(struct fid_ep* ep, const void*, size_t, fi_addr_t, uint64_t) {
  ep_of(ep)->last_context = nullptr;
  return 0;
}
ssize_t t_senddata(struct fid_ep* ep, const void* buf, size_t len, void*, uint64_t data, fi_addr_t,
                   uint64_t tag, void* context) {
  return tx_done(ep, tx_plain(ep), context, kTsendFlags | FI_REMOTE_CQ_DATA, len, buf, data, tag);
}
ssize_t t_injectdata(struct fid_ep* ep, const void*, size_t, uint64_t, fi_addr_t, uint64_t) {
  ep_of(ep)->last_context = nullptr;
  return 0;
}

// ---------------------------------------------------------------------------
// RMA. Initiator completions go to the transmit CQ.

inline size_t rma_len(const struct fi_msg_rma* msg) {
  size_t b = 0;
  for (size_t i = 0; i < msg->rma_iov_count; ++i) b += msg->rma_iov[i].len;
  return b;
}

ssize_t r_read(struct fid_ep* ep, void* buf, size_t len, void*, fi_addr_t, uint64_t, uint64_t,
               void* context) {
  return tx_done(ep, tx_plain(ep), context, kReadFlags, len, buf, 0, 0);
}
ssize_t r_readv(struct fid_ep* ep, const struct iovec* iov, void**, size_t count, fi_addr_t,
                uint64_t, uint64_t, void* context) {
  return tx_done(ep, tx_plain(ep), context, kReadFlags, iov_len(iov, count), iov_buf(iov, count), 0,
                 0);
}
ssize_t r_readmsg(struct fid_ep* ep, const struct fi_msg_rma* msg, uint64_t flags) {
  return tx_done(ep, tx_flagged(ep, flags), msg->context, kReadFlags, rma_len(msg),
                 iov_buf(msg->msg_iov, msg->iov_count), 0, 0);
}
ssize_t r_write(struct fid_ep* ep, const void* buf, size_t len, void*, fi_addr_t, uint64_t,
                uint64_t, void* context) {
  return tx_done(ep, tx_plain(ep), context, kWriteFlags, len, buf, 0, 0);
}
ssize_t r_writev(struct fid_ep* ep, const struct iovec* iov, void**, size_t count, fi_addr_t,
                 uint64_t, uint64_t, void* context) {
  return tx_done(ep, tx_plain(ep), context, kWriteFlags, iov_len(iov, count), iov_buf(iov, count),
                 0, 0);
}
ssize_t r_writemsg(struct fid_ep* ep, const struct fi_msg_rma* msg, uint64_t flags) {
  return tx_done(ep, tx_flagged(ep, flags), msg->context, kWriteFlags, rma_len(msg),
                 iov_buf(msg->msg_iov, msg->iov_count), msg->data, 0);
}
ssize_t r_inject(struct fid_ep* ep, const void*, size_t, fi_addr_t, uint64_t, uint64_t) {
  ep_of(ep)->last_context = nullptr;
  return 0;
}
ssize_t r_writedata(struct fid_ep* ep, const void* buf, size_t len, void*, uint64_t data, fi_addr_t,
                    uint64_t, uint64_t, void* context) {
  return tx_done(ep, tx_plain(ep), context, kWriteFlags | FI_REMOTE_CQ_DATA, len, buf, data, 0);
}
ssize_t r_injectdata(struct fid_ep* ep, const void*, size_t, uint64_t, fi_addr_t, uint64_t,
                     uint64_t) {
  ep_of(ep)->last_context = nullptr;
  return 0;
}

// ---------------------------------------------------------------------------
// Endpoint control.

int ep_close(struct fid* fid) {
  delete ep_of(fid);
  return 0;
}

int ep_bind(struct fid* fid, struct fid* bfid, uint64_t flags) {
  NullEp* ep = ep_of(fid);
  if (!bfid) return -FI_EINVAL;
  switch (bfid->fclass) {
    case FI_CLASS_CQ: {
      NullCq* cq = reinterpret_cast<NullCq*>(bfid);
      const bool sel = (flags & FI_SELECTIVE_COMPLETION) != 0;
      const bool both = !(flags & (FI_TRANSMIT | FI_RECV));
      if (both || (flags & FI_TRANSMIT)) ep->tx_cq = cq, ep->tx_selective = sel;
      if (both || (flags & FI_RECV)) ep->rx_cq = cq, ep->rx_selective = sel;
      return 0;
    }
    case FI_CLASS_AV:
      return 0;  // addresses are not resolved: every peer is the null peer
    default:
      return -FI_EINVAL;
  }
}

int ep_control(struct fid* fid, int command, void* arg) {
  NullEp* ep = ep_of(fid);
  switch (command) {
    case FI_ENABLE:
      ep->enabled = true;
      return 0;
    case FI_SETOPSFLAG: {
      if (!arg) return -FI_EINVAL;
      const uint64_t f = *static_cast<uint64_t*>(arg);
      const uint64_t v = f & ~(FI_TRANSMIT | FI_RECV);
      if (f & FI_TRANSMIT) ep->tx_op_flags = v;
      if (f & FI_RECV) ep->rx_op_flags = v;
      return 0;
    }
    case FI_GETOPSFLAG: {
      if (!arg) return -FI_EINVAL;
      uint64_t* f = static_cast<uint64_t*>(arg);
      *f = (*f & FI_RECV) ? ep->rx_op_flags : ep->tx_op_flags;
      return 0;
    }
    default:
      return -FI_ENOSYS;
  }
}

int no_ops_open(struct fid*, const char*, uint64_t, void**, void*) { return -FI_ENOSYS; }

ssize_t ep_cancel(struct fid*, void*) { return -FI_ENOENT; }
int ep_getopt(struct fid*, int, int, void*, size_t*) { return -FI_ENOPROTOOPT; }
int ep_setopt(struct fid*, int, int, const void*, size_t) { return -FI_ENOPROTOOPT; }
int ep_tx_ctx(struct fid_ep*, int, struct fi_tx_attr*, struct fid_ep**, void*) {
  return -FI_ENOSYS;
}
int ep_rx_ctx(struct fid_ep*, int, struct fi_rx_attr*, struct fid_ep**, void*) {
  return -FI_ENOSYS;
}
ssize_t size_left(NullCq* q) {
  if (!q) return -FI_EOPBADSTATE;
  CqLock lk(q);
  return static_cast<ssize_t>(q->mask + 1 - (q->tail - q->head));
}
ssize_t ep_rx_size_left(struct fid_ep* ep) { return size_left(ep_of(ep)->rx_cq); }
ssize_t ep_tx_size_left(struct fid_ep* ep) { return size_left(ep_of(ep)->tx_cq); }

int cm_getname(struct fid* fid, void* addr, size_t* addrlen) {
  const NullEp* ep = ep_of(fid);
  const size_t have = *addrlen;
  *addrlen = sizeof(ep->name);
  if (have < sizeof(ep->name)) return -FI_ETOOSMALL;
  std::memcpy(addr, &ep->name, sizeof(ep->name));
  return 0;
}
int cm_getpeer(struct fid_ep*, void*, size_t*) { return -FI_ENOSYS; }

// ---------------------------------------------------------------------------
// CQ.

inline void copy_out(const NullCq* q, void* buf, size_t n) {
  const uint64_t h = q->head;
  if (q->format == FI_CQ_FORMAT_TAGGED) {
    auto* out = static_cast<struct fi_cq_tagged_entry*>(buf);
    for (size_t i = 0; i < n; ++i) out[i] = q->ring[(h + i) & q->mask];
    return;
  }
  // Every format is a prefix of fi_cq_tagged_entry.
  char* out = static_cast<char*>(buf);
  for (size_t i = 0; i < n; ++i, out += q->entry_size)
    std::memcpy(out, &q->ring[(h + i) & q->mask], q->entry_size);
}

ssize_t cq_read(struct fid_cq* fcq, void* buf, size_t count) {
  NullCq* q = cq_of(fcq);
  CqLock lk(q);
  const size_t n = std::min<uint64_t>(count, q->tail - q->head);
  if (n == 0) return -FI_EAGAIN;
  if (buf) copy_out(q, buf, n);
  q->head += n;
  return static_cast<ssize_t>(n);
}

ssize_t cq_readfrom(struct fid_cq* fcq, void* buf, size_t count, fi_addr_t* src) {
  const ssize_t n = cq_read(fcq, buf, count);
  if (n > 0 && src) std::fill(src, src + n, FI_ADDR_NOTAVAIL);
  return n;
}

// The utility-CQ way (kNullUtilCq): through the table, whoever is in it.
ssize_t cq_read_util(struct fid_cq* fcq, void* buf, size_t count) {
  return fi_cq_readfrom(fcq, buf, count, nullptr);
}
ssize_t cq_sread_util(struct fid_cq* fcq, void* buf, size_t count, const void*, int) {
  return fi_cq_readfrom(fcq, buf, count, nullptr);
}

ssize_t cq_readerr(struct fid_cq*, struct fi_cq_err_entry*, uint64_t) { return -FI_EAGAIN; }

// Completions are there at once or never: a blocking read does not block.
ssize_t cq_sread(struct fid_cq* fcq, void* buf, size_t count, const void*, int) {
  return cq_read(fcq, buf, count);
}
ssize_t cq_sreadfrom(struct fid_cq* fcq, void* buf, size_t count, fi_addr_t* src, const void*,
                     int) {
  return cq_readfrom(fcq, buf, count, src);
}
int cq_signal(struct fid_cq*) { return 0; }
const char* cq_strerror(struct fid_cq*, int, const void*, char* buf, size_t len) {
  if (buf && len) {
    std::strncpy(buf, "null provider error", len - 1);
    buf[len - 1] = '\0';
  }
  return "null provider error";
}

int cq_close(struct fid* fid) {
  NullCq* q = reinterpret_cast<NullCq*>(fid);
  pthread_mutex_destroy(&q->mu);
  ::operator delete[](q->ring, std::align_val_t(64));
  delete q;
  return 0;
}
int no_bind(struct fid*, struct fid*, uint64_t) { return -FI_ENOSYS; }
int no_control(struct fid*, int, void*) { return -FI_ENOSYS; }

// ---------------------------------------------------------------------------
// Domain and fabric.

std::atomic<uint16_t> g_next_port{20000};

int domain_endpoint(struct fid_domain* fdom, struct fi_info* info, struct fid_ep** ep,
                    void* context);
int domain_cq_open(struct fid_domain* fdom, struct fi_cq_attr* attr, struct fid_cq** cq,
                   void* context);

int domain_close(struct fid* fid) {
  delete reinterpret_cast<NullDomain*>(fid);
  return 0;
}
int fabric_close(struct fid* fid) {
  delete reinterpret_cast<NullFabric*>(fid);
  return 0;
}

int no_av_open(struct fid_domain*, struct fi_av_attr*, struct fid_av**, void*) {
  return -FI_ENOSYS;
}
int no_scalable_ep(struct fid_domain*, struct fi_info*, struct fid_ep**, void*) {
  return -FI_ENOSYS;
}
int no_cntr_open(struct fid_domain*, struct fi_cntr_attr*, struct fid_cntr**, void*) {
  return -FI_ENOSYS;
}
int no_poll_open(struct fid_domain*, struct fi_poll_attr*, struct fid_poll**) { return -FI_ENOSYS; }
int no_stx_ctx(struct fid_domain*, struct fi_tx_attr*, struct fid_stx**, void*) {
  return -FI_ENOSYS;
}
int no_srx_ctx(struct fid_domain*, struct fi_rx_attr*, struct fid_ep**, void*) {
  return -FI_ENOSYS;
}
int no_query_atomic(struct fid_domain*, enum fi_datatype, enum fi_op, struct fi_atomic_attr*,
                    uint64_t) {
  return -FI_ENOSYS;
}
int no_query_collective(struct fid_domain*, enum fi_collective_op, struct fi_collective_attr*,
                        uint64_t) {
  return -FI_ENOSYS;
}
int domain_endpoint2(struct fid_domain* fdom, struct fi_info* info, struct fid_ep** ep,
                     uint64_t flags, void* context) {
  if (flags) return -FI_EBADFLAGS;
  return domain_endpoint(fdom, info, ep, context);
}

int fabric_domain(struct fid_fabric* ffab, struct fi_info* info, struct fid_domain** dom,
                  void* context);
int fabric_domain2(struct fid_fabric* ffab, struct fi_info* info, struct fid_domain** dom,
                   uint64_t flags, void* context) {
  if (flags) return -FI_EBADFLAGS;
  return fabric_domain(ffab, info, dom, context);
}
int no_passive_ep(struct fid_fabric*, struct fi_info*, struct fid_pep**, void*) {
  return -FI_ENOSYS;
}
int no_eq_open(struct fid_fabric*, struct fi_eq_attr*, struct fid_eq**, void*) {
  return -FI_ENOSYS;
}
int no_wait_open(struct fid_fabric*, struct fi_wait_attr*, struct fid_wait**) { return -FI_ENOSYS; }
int no_trywait(struct fid_fabric*, struct fid**, int) { return 0; }

// ---------------------------------------------------------------------------
// The op tables, shared by every object of a kind (as in real providers).

template <typename T>
T zeroed() {
  T t;
  std::memset(&t, 0, sizeof(t));
  t.size = sizeof(T);
  return t;
}

struct fi_ops make_ep_fid_ops() {
  auto o = zeroed<struct fi_ops>();
  o.close = ep_close;
  o.bind = ep_bind;
  o.control = ep_control;
  o.ops_open = no_ops_open;
  return o;
}
struct fi_ops_ep make_ep_ops() {
  auto o = zeroed<struct fi_ops_ep>();
  o.cancel = ep_cancel;
  o.getopt = ep_getopt;
  o.setopt = ep_setopt;
  o.tx_ctx = ep_tx_ctx;
  o.rx_ctx = ep_rx_ctx;
  o.rx_size_left = ep_rx_size_left;
  o.tx_size_left = ep_tx_size_left;
  return o;
}
struct fi_ops_cm make_cm_ops() {
  auto o = zeroed<struct fi_ops_cm>();
  o.getname = cm_getname;
  o.getpeer = cm_getpeer;
  return o;
}
struct fi_ops_msg make_msg_ops() {
  auto o = zeroed<struct fi_ops_msg>();
  o.recv = msg_recv;
  o.recvv = msg_recvv;
  o.recvmsg = msg_recvmsg;
  o.send = msg_send;
  o.sendv = msg_sendv;
  o.sendmsg = msg_sendmsg;
  o.inject = msg_inject;
  o.senddata = msg_senddata;
  o.injectdata = msg_injectdata;
  return o;
}
struct fi_ops_tagged make_tagged_ops() {
  auto o = zeroed<struct fi_ops_tagged>();
  o.recv = t_recv;
  o.recvv = t_recvv;
  o.recvmsg = t_recvmsg;
  o.send = t_send;
  o.sendv = t_sendv;
  o.sendmsg = t_sendmsg;
  o.inject = t_inject;
  o.senddata = t_senddata;
  o.injectdata = t_injectdata;
  return o;
}
struct fi_ops_rma make_rma_ops() {
  auto o = zeroed<struct fi_ops_rma>();
  o.read = r_read;
  o.readv = r_readv;
  o.readmsg = r_readmsg;
  o.write = r_write;
  o.writev = r_writev;
  o.writemsg = r_writemsg;
  o.inject = r_inject;
  o.writedata = r_writedata;
  o.injectdata = r_injectdata;
  return o;
}
struct fi_ops make_cq_fid_ops() {
  auto o = zeroed<struct fi_ops>();
  o.close = cq_close;
  o.bind = no_bind;
  o.control = no_control;
  o.ops_open = no_ops_open;
  return o;
}
struct fi_ops_cq make_cq_ops() {
  auto o = zeroed<struct fi_ops_cq>();
  o.read = cq_read;
  o.readfrom = cq_readfrom;
  o.readerr = cq_readerr;
  o.sread = cq_sread;
  o.sreadfrom = cq_sreadfrom;
  o.signal = cq_signal;
  o.strerror = cq_strerror;
  return o;
}
struct fi_ops_cq make_util_cq_ops() {
  auto o = make_cq_ops();
  o.read = cq_read_util;
  o.sread = cq_sread_util;
  return o;
}
struct fi_ops make_domain_fid_ops() {
  auto o = zeroed<struct fi_ops>();
  o.close = domain_close;
  o.bind = no_bind;
  o.control = no_control;
  o.ops_open = no_ops_open;
  return o;
}
struct fi_ops_domain make_domain_ops() {
  auto o = zeroed<struct fi_ops_domain>();
  o.av_open = no_av_open;
  o.cq_open = domain_cq_open;
  o.endpoint = domain_endpoint;
  o.scalable_ep = no_scalable_ep;
  o.cntr_open = no_cntr_open;
  o.poll_open = no_poll_open;
  o.stx_ctx = no_stx_ctx;
  o.srx_ctx = no_srx_ctx;
  o.query_atomic = no_query_atomic;
  o.query_collective = no_query_collective;
  o.endpoint2 = domain_endpoint2;
  return o;
}
struct fi_ops make_fabric_fid_ops() {
  auto o = zeroed<struct fi_ops>();
  o.close = fabric_close;
  o.bind = no_bind;
  o.control = no_control;
  o.ops_open = no_ops_open;
  return o;
}
struct fi_ops_fabric make_fabric_ops() {
  auto o = zeroed<struct fi_ops_fabric>();
  o.domain = fabric_domain;
  o.passive_ep = no_passive_ep;
  o.eq_open = no_eq_open;
  o.wait_open = no_wait_open;
  o.trywait = no_trywait;
  o.domain2 = fabric_domain2;
  return o;
}

struct fi_ops g_ep_fid_ops = make_ep_fid_ops();
struct fi_ops_ep g_ep_ops = make_ep_ops();
struct fi_ops_cm g_cm_ops = make_cm_ops();
struct fi_ops_msg g_msg_ops = make_msg_ops();
struct fi_ops_tagged g_tagged_ops = make_tagged_ops();
struct fi_ops_rma g_rma_ops = make_rma_ops();
struct fi_ops g_cq_fid_ops = make_cq_fid_ops();
struct fi_ops_cq g_cq_ops = make_cq_ops();
struct fi_ops_cq g_util_cq_ops = make_util_cq_ops();
struct fi_ops g_domain_fid_ops = make_domain_fid_ops();
struct fi_ops_domain g_domain_ops = make_domain_ops();
struct fi_ops g_fabric_fid_ops = make_fabric_fid_ops();
struct fi_ops_fabric g_fabric_ops = make_fabric_ops();

int domain_endpoint(struct fid_domain* fdom, struct fi_info* info, struct fid_ep** out,
                    void* context) {
  if (!out) return -FI_EINVAL;
  auto* ep = new (std::nothrow) NullEp();
  if (!ep) return -FI_ENOMEM;
  ep->ep.fid.fclass = FI_CLASS_EP;
  ep->ep.fid.context = context;
  ep->ep.fid.ops = &g_ep_fid_ops;
  ep->ep.ops = &g_ep_ops;
  ep->ep.cm = &g_cm_ops;
  ep->ep.msg = &g_msg_ops;
  ep->ep.rma = &g_rma_ops;
  ep->ep.tagged = &g_tagged_ops;
  ep->ep.atomic = nullptr;
  ep->ep.collective = nullptr;
  ep->domain = reinterpret_cast<NullDomain*>(fdom);
  if (info && info->tx_attr) ep->tx_op_flags = info->tx_attr->op_flags;
  if (info && info->rx_attr) ep->rx_op_flags = info->rx_attr->op_flags;
  ep->name.sin_family = AF_INET;
  ep->name.sin_port = htons(g_next_port.fetch_add(1, std::memory_order_relaxed));
  ep->name.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  *out = &ep->ep;
  return 0;
}

int domain_cq_open(struct fid_domain* fdom, struct fi_cq_attr* attr, struct fid_cq** out,
                   void* context) {
  if (!out) return -FI_EINVAL;
  const NullDomain* dom = reinterpret_cast<NullDomain*>(fdom);
  size_t depth = attr && attr->size ? attr->size : kNullCqDefaultDepth;
  size_t n = 1;
  while (n < depth) n <<= 1;
  auto* q = new (std::nothrow) NullCq();
  if (!q) return -FI_ENOMEM;
  q->ring = static_cast<struct fi_cq_tagged_entry*>(
      ::operator new[](n * sizeof(struct fi_cq_tagged_entry), std::align_val_t(64), std::nothrow));
  if (!q->ring) {
    delete q;
    return -FI_ENOMEM;
  }
  std::memset(q->ring, 0, n * sizeof(struct fi_cq_tagged_entry));
  q->cq.fid.fclass = FI_CLASS_CQ;
  q->cq.fid.context = context;
  q->cq.fid.ops = &g_cq_fid_ops;
  q->cq.ops = attr && (attr->flags & kNullUtilCq) ? &g_util_cq_ops : &g_cq_ops;
  q->domain = const_cast<NullDomain*>(dom);
  q->locked = dom->thread_safe;
  q->mask = n - 1;
  q->format = attr && attr->format != FI_CQ_FORMAT_UNSPEC ? attr->format : FI_CQ_FORMAT_CONTEXT;
  switch (q->format) {
    case FI_CQ_FORMAT_MSG:
      q->entry_size = sizeof(struct fi_cq_msg_entry);
      break;
    case FI_CQ_FORMAT_DATA:
      q->entry_size = sizeof(struct fi_cq_data_entry);
      break;
    case FI_CQ_FORMAT_TAGGED:
      q->entry_size = sizeof(struct fi_cq_tagged_entry);
      break;
    default:
      q->entry_size = sizeof(struct fi_cq_entry);
      break;
  }
  pthread_mutex_init(&q->mu, nullptr);
  *out = &q->cq;
  return 0;
}

int fabric_domain(struct fid_fabric* ffab, struct fi_info* info, struct fid_domain** out,
                  void* context) {
  if (!out) return -FI_EINVAL;
  auto* d = new (std::nothrow) NullDomain();
  if (!d) return -FI_ENOMEM;
  d->domain.fid.fclass = FI_CLASS_DOMAIN;
  d->domain.fid.context = context;
  d->domain.fid.ops = &g_domain_fid_ops;
  d->domain.ops = &g_domain_ops;
  d->domain.mr = nullptr;
  d->fabric = reinterpret_cast<NullFabric*>(ffab);
  d->thread_safe = info && info->domain_attr && info->domain_attr->threading == FI_THREAD_SAFE;
  *out = &d->domain;
  return 0;
}

// ---------------------------------------------------------------------------
// fi_info.

struct InfoStore {
  struct fi_info info;
  struct fi_tx_attr tx;
  struct fi_rx_attr rx;
  struct fi_ep_attr ep;
  struct fi_domain_attr domain;
  struct fi_fabric_attr fabric;
  char domain_name[16];
  char fabric_name[16];
  char prov_name[16];

  explicit InfoStore(enum fi_threading threading) {
    std::memset(&info, 0, sizeof(info));
    std::memset(&tx, 0, sizeof(tx));
    std::memset(&rx, 0, sizeof(rx));
    std::memset(&ep, 0, sizeof(ep));
    std::memset(&domain, 0, sizeof(domain));
    std::memset(&fabric, 0, sizeof(fabric));
    std::strcpy(domain_name, "null0");
    std::strcpy(fabric_name, "null");
    std::strcpy(prov_name, "null");
    info.caps = FI_MSG | FI_TAGGED | FI_RMA | FI_SEND | FI_RECV | FI_READ | FI_WRITE;
    info.addr_format = FI_SOCKADDR_IN;
    info.src_addrlen = sizeof(struct sockaddr_in);
    info.tx_attr = &tx;
    info.rx_attr = &rx;
    info.ep_attr = &ep;
    info.domain_attr = &domain;
    info.fabric_attr = &fabric;
    tx.caps = rx.caps = info.caps;
    tx.size = rx.size = kNullCqDefaultDepth;
    tx.iov_limit = rx.iov_limit = 4;
    tx.inject_size = 64;
    ep.type = FI_EP_RDM;
    ep.protocol = FI_PROTO_UNSPEC;
    ep.max_msg_size = SIZE_MAX;
    domain.name = domain_name;
    domain.threading = threading;
    domain.control_progress = FI_PROGRESS_MANUAL;
    domain.data_progress = FI_PROGRESS_MANUAL;
    domain.cq_cnt = 256;
    domain.ep_cnt = 256;
    fabric.name = fabric_name;
    fabric.prov_name = prov_name;
    fabric.api_version = FI_VERSION(1, 17);
  }
};

}  // namespace

struct fi_info* null_info(enum fi_threading threading) {
  static InfoStore safe(FI_THREAD_SAFE);
  static InfoStore domain(FI_THREAD_DOMAIN);
  static InfoStore completion(FI_THREAD_COMPLETION);
  static InfoStore endpoint(FI_THREAD_ENDPOINT);
  static InfoStore unspec(FI_THREAD_UNSPEC);
  switch (threading) {
    case FI_THREAD_SAFE:
      return &safe.info;
    case FI_THREAD_DOMAIN:
      return &domain.info;
    case FI_THREAD_COMPLETION:
      return &completion.info;
    case FI_THREAD_ENDPOINT:
      return &endpoint.info;
    default:
      return &unspec.info;
  }
}

int null_fabric_open(struct fid_fabric** out) {
  if (!out) return -FI_EINVAL;
  auto* f = new (std::nothrow) NullFabric();
  if (!f) return -FI_ENOMEM;
  f->fabric.fid.fclass = FI_CLASS_FABRIC;
  f->fabric.fid.context = nullptr;
  f->fabric.fid.ops = &g_fabric_fid_ops;
  f->fabric.ops = &g_fabric_ops;
  f->fabric.api_version = FI_VERSION(1, 17);
  *out = &f->fabric;
  return 0;
}

void* null_ep_last_context(struct fid_ep* ep) { return ep_of(ep)->last_context; }

size_t null_cq_pending(struct fid_cq* cq) {
  NullCq* q = cq_of(cq);
  CqLock lk(q);
  return static_cast<size_t>(q->tail - q->head);
}

}  // namespace fabtrace_bench
