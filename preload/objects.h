// Container structs around the application's libfabric objects.
//
// fabtrace does not hand the application new fids (as libfabric's hook
// providers do); it keeps the provider's objects and points their op tables at
// copies embedded in these containers. A shim recovers its container from the
// table pointer it was called through (container_of), so the data path never
// looks anything up in a global map. Containers are never freed before exit:
// the statistics and in-flight records that name them outlive the fid.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "preload/nic_busy.h"

namespace fabtrace {

#define FABTRACE_CONTAINER_OF(ptr, type, member) \
  reinterpret_cast<type*>(reinterpret_cast<char*>(ptr) - offsetof(type, member))

struct FabricWrap {
  struct fid_fabric* fabric = nullptr;
  const struct fi_ops_fabric* real_ops = nullptr;
  struct fi_ops_fabric ops = {};
  std::string prov_name;
};

struct DomainWrap {
  struct fid_domain* domain = nullptr;
  FabricWrap* fabric = nullptr;
  const struct fi_ops_domain* real_ops = nullptr;
  struct fi_ops_domain ops = {};
  std::string name;    // domain_attr->name: the NIC
  size_t addrlen = 0;  // the provider's address length (info->src_addrlen)
  uint32_t id = 0;
  // On cache lines of its own: the threads that complete this NIC's ops write
  // its lock and window, and every completion reads `id` and the fields above;
  // sharing a line made each read on one core miss after every flush by
  // another (2 threads on one NIC: +71 ns per op, 20 % of the samples on the
  // load of `id`).
  alignas(64) NicBusy nic;
};

// Address vector: fi_addr_t -> readable peer address, filled at insert time
// (control path) so the report never calls into the provider.
struct AvWrap {
  struct fid_av* av = nullptr;
  const struct fi_ops_av* real_ops = nullptr;
  struct fi_ops_av ops = {};
  size_t addrlen = 0;  // element size of fi_av_insert's address array, when known
  std::mutex mu;
  std::unordered_map<fi_addr_t, std::string> names;
  std::string name_of(fi_addr_t a);
};

struct CqWrap {
  struct fid_cq* cq = nullptr;
  DomainWrap* domain = nullptr;
  const struct fi_ops* real_fid = nullptr;
  const struct fi_ops_cq* real_ops = nullptr;
  struct fi_ops fid_ops = {};
  struct fi_ops_cq ops = {};
  // The application's entry format, and the one the provider writes (a format
  // with the length when the provider accepted one: cq_format.h).
  enum fi_cq_format format = FI_CQ_FORMAT_CONTEXT;
  size_t entry_size = sizeof(struct fi_cq_entry);
  enum fi_cq_format prov_format = FI_CQ_FORMAT_CONTEXT;
  size_t prov_entry_size = sizeof(struct fi_cq_entry);
  bool has_len = false;                // provider entries carry the received length
  bool translate = false;              // prov_format != format: entries pass through our stack
  uint32_t id = 0;                     // index into the per-thread poll tables (< kMaxCqs) or kNoCq
  std::atomic<uint64_t> last_poll{0};  // ticks of the latest poll by any thread
  std::atomic<bool> closed{false};     // the application closed it (the live snapshot says so)
};

// How a direction (transmit or receive) of an endpoint reports completions.
struct Direction {
  CqWrap* cq = nullptr;    // bound CQ, if any
  bool selective = false;  // bound with FI_SELECTIVE_COMPLETION
  uint64_t op_flags = 0;   // default op flags (tx/rx attr, FI_SETOPSFLAG)
  // Plain ops (no flags argument) get a completion and so can be timed.
  bool plain_timed() const {
    return cq && (!selective || (op_flags & FI_COMPLETION)) && !(op_flags & FI_MULTI_RECV);
  }
};

struct EpWrap {
  struct fid_ep* ep = nullptr;
  DomainWrap* domain = nullptr;
  EpWrap* parent = nullptr;  // scalable endpoint of a tx/rx context
  EpWrap* srx = nullptr;     // shared receive context bound to this endpoint
  const struct fi_ops* real_fid = nullptr;
  const struct fi_ops_ep* real_ep = nullptr;
  const struct fi_ops_cm* real_cm = nullptr;
  const struct fi_ops_msg* real_msg = nullptr;
  const struct fi_ops_tagged* real_tagged = nullptr;
  const struct fi_ops_rma* real_rma = nullptr;
  const struct fi_ops_atomic* real_atomic = nullptr;
  struct fi_ops fid_ops = {};
  struct fi_ops_ep ep_ops = {};
  struct fi_ops_cm cm_ops = {};
  struct fi_ops_msg msg_ops = {};
  struct fi_ops_tagged tagged_ops = {};
  struct fi_ops_rma rma_ops = {};
  struct fi_ops_atomic atomic_ops = {};

  enum fi_ep_type type = FI_EP_UNSPEC;
  uint32_t addr_format = FI_FORMAT_UNSPEC;
  Direction tx, rx;
  AvWrap* av = nullptr;

  // Readable addresses, set on the control path (enable, connect, accept).
  std::mutex names_mu;
  std::string local_name;
  std::string peer_name;  // connection-oriented endpoints

  // Re-point the provider's tables at ours, picking up tables the provider
  // installed since the last call (cxi installs its real ones at fi_enable).
  void install();
};

constexpr uint32_t kMaxCqs = 256;
constexpr uint32_t kNoCq = UINT32_MAX;

// Wrapping entry points, one per object family (wrap_*.cpp).
FabricWrap* wrap_fabric(struct fid_fabric* fabric, const char* prov_name);
DomainWrap* wrap_domain(struct fid_domain* domain, FabricWrap* fabric, const struct fi_info* info);
EpWrap* wrap_ep(struct fid_ep* ep, DomainWrap* domain, const struct fi_info* info, EpWrap* parent);
// Opens the provider's CQ for the application (in a format with the length
// when the application's has none) and wraps it.
int open_cq(DomainWrap* domain, struct fi_cq_attr* attr, struct fid_cq** cq, void* context);
CqWrap* wrap_cq(struct fid_cq* cq, DomainWrap* domain, enum fi_cq_format app_format,
                enum fi_cq_format prov_format);
AvWrap* wrap_av(struct fid_av* av, size_t addrlen);

// Installs the data-path shims of each family into an endpoint's tables.
void install_msg_shims(EpWrap* w);
void install_tagged_shims(EpWrap* w);
void install_rma_shims(EpWrap* w);
void install_atomic_shims(EpWrap* w);

// The container of a fid we wrapped, or nullptr for a fid that is not ours.
CqWrap* cq_wrap_of(struct fid* fid);
AvWrap* av_wrap_of(struct fid* fid);
EpWrap* ep_wrap_of(struct fid* fid);

// Releases the records of ops that will never complete on a CQ being closed.
void release_records_of_cq(CqWrap* cq);

}  // namespace fabtrace
