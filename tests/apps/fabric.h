// libfabric object setup and teardown for one test family on one rank:
// fi_getinfo hints, fabric/domain/CQs/AV/EQ/endpoint, memory registration.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "options.h"

namespace ftapp {

class Oob;

struct FabricSpec {
  uint64_t caps = 0;
  bool thread_safe = false;   // domain threading FI_THREAD_SAFE
  bool single_cq = false;     // one CQ bound for FI_TRANSMIT | FI_RECV
  bool cq_wait = false;       // CQ with a wait object (for fi_cq_sread)
  bool tx_selective = false;  // TX CQ bound with FI_SELECTIVE_COMPLETION
  size_t contexts = 0;        // >0: scalable endpoint with this many tx and rx contexts
  bool shared_rx = false;     // receives go to a shared receive context (fi_srx_context)
  uint64_t rx_op_flags = 0;   // added to the endpoint's default receive flags
};

// A registered buffer. `remote_addr` is what a peer puts in RMA/atomic addresses.
struct Buffer {
  uint8_t* data = nullptr;
  size_t len = 0;
  fid_mr* mr = nullptr;
  void* desc = nullptr;
  uint64_t key = 0;
  uint64_t remote_addr = 0;
};

// Remote memory as described to the peer.
struct RemoteMem {
  uint64_t addr = 0;
  uint64_t key = 0;
  uint64_t len = 0;
};

std::string encode_remote(const Buffer& b);
RemoteMem decode_remote(const std::string& s);

// fi_getinfo with the program's hints (and the spec's threading and endpoint
// context counts); nullptr (and *why) if nothing matches.
fi_info* query_info(const Options& opt, uint64_t caps, const FabricSpec& spec, std::string* why);

class Fabric {
 public:
  Fabric() = default;
  ~Fabric();
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  // Takes ownership of `info`. Opens everything and connects to / addresses the peer.
  void open(const Options& opt, int rank, fi_info* info, const FabricSpec& spec, Oob& oob);
  // Allocates and (when the provider needs it, or for remote access) registers memory.
  Buffer* alloc(size_t len, bool remote_access);
  // Closes every fid; returns descriptions of failed closes.
  std::vector<std::string> close();

  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_eq* eq = nullptr;
  fid_av* av = nullptr;
  fid_cq* txcq = nullptr;
  fid_cq* rxcq = nullptr;                     // == txcq with single_cq
  fid_ep* ep = nullptr;                       // the scalable endpoint with FabricSpec::contexts
  fid_ep* rx_ep = nullptr;                    // where receives are posted: ep, or srx
  fid_ep* srx = nullptr;                      // shared receive context (FabricSpec::shared_rx)
  std::vector<fid_ep*> tx_ctx, rx_ctx;        // scalable endpoint contexts
  std::vector<fid_cq*> tx_ctx_cq, rx_ctx_cq;  // each context's own CQ
  int rx_ctx_bits = 0;                        // for fi_rx_addr
  fid_pep* pep = nullptr;
  fi_addr_t peer = FI_ADDR_UNSPEC;
  bool msg_ep = false;
  bool cq_has_wait = false;
  uint64_t mr_mode = 0;
  size_t inject_size = 0;
  size_t cq_data_size = 0;
  size_t tx_iov_limit = 1;
  size_t rx_iov_limit = 1;
  size_t rma_iov_limit = 1;

 private:
  friend void connect_rdm(Fabric& f, Oob& oob, int timeout_ms);
  friend void connect_msg(Fabric& f, Oob& oob, int rank, int timeout_ms);
  void open_cqs(const Options& opt, const FabricSpec& spec);
  void open_ep(fi_info* ep_info, const FabricSpec& spec, bool selective);
  // fabric_ctx.cpp: scalable endpoints and shared receive contexts.
  void open_scalable(fi_info* ep_info, const FabricSpec& spec);
  void open_srx(fi_info* ep_info);
  void close_contexts(std::vector<std::string>* errs);

  std::vector<std::unique_ptr<Buffer>> bufs_;
  fi_info* conn_info_ = nullptr;  // FI_CONNREQ info of the accepted endpoint
  uint64_t next_key_ = 1;
  fi_cq_format cq_format_ = FI_CQ_FORMAT_CONTEXT;
  bool selective_ = false;
  FabricSpec spec_;
};

// Address exchange (addr_exchange.cpp).
void connect_rdm(Fabric& f, Oob& oob, int timeout_ms);
void connect_msg(Fabric& f, Oob& oob, int rank, int timeout_ms);
std::string get_name(fid_t fid);

}  // namespace ftapp
