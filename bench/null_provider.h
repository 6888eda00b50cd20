// A null libfabric provider for the overhead benchmarks: hand-built fabric,
// domain, endpoint and CQ objects whose data ops complete at once, so that what
// a benchmark measures is the cost of the calls themselves (and of whatever
// sits in front of them: fabtrace's shims), never a network.
//
// Every data op (fi_send, fi_tsend, fi_trecv, fi_write, fi_read, their v/msg/
// data variants, and the inject calls) pushes one completion
// {op_context, flags, len, buf, data, tag} into the ring that is the bound CQ
// (inject calls and ops without a completion push nothing). fi_cq_read pops up
// to `count` entries in the CQ's format, or returns -FI_EAGAIN when the ring is
// empty. An op that finds its CQ ring full is refused with -FI_EAGAIN.
//
// The objects are opened through their own op tables, exactly as libfabric's
// inline calls reach a provider:
//
//   struct fid_fabric* fab;  null_fabric_open(&fab);
//   fi_domain(fab, null_info(FI_THREAD_COMPLETION), &dom, nullptr);
//   fi_cq_open(dom, &attr, &cq, nullptr);
//   fi_endpoint(dom, null_info(...), &ep, nullptr);
//   fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV);  fi_enable(ep);
//
// so the same code drives them raw, or wrapped by fabtrace (call
// fabtrace::wrap_fabric(fab, "null") right after null_fabric_open: the domain,
// CQ and endpoint are then wrapped by the preload's own fi_domain / fi_cq_open
// / fi_endpoint shims, and its fi_ep_bind shim learns the CQ binding).
//
// Threading follows the domain's fi_info: a domain opened with
// domain_attr->threading == FI_THREAD_SAFE gives CQs guarded by a mutex (any
// number of threads may issue on endpoints bound to one CQ and poll it); any
// other level gives unlocked CQs (one thread per CQ and the endpoints bound to
// it, as FI_THREAD_COMPLETION allows). Raw and wrapped objects behave the same.
//
// Nothing here links libfabric: only its headers' inline calls are used.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include <cstddef>

namespace fabtrace_bench {

// fi_cq_attr::flags bit of the null provider only: the CQ's fi_cq_read and
// fi_cq_sread call fi_cq_readfrom through the CQ's op table, as libfabric's
// utility CQ (ofi_cq_read, ofi_cq_sreadfrom) does for tcp;ofi_rxm, shm and
// udp;ofi_rxd, so that a tracer that replaced the table sees the call twice.
constexpr uint64_t kNullUtilCq = 1ULL << 62;

// Ring depth of a null CQ opened with fi_cq_attr::size == 0 (a non-zero size
// is rounded up to a power of two).
constexpr size_t kNullCqDefaultDepth = 1024;

// The fi_info the null provider's objects are opened with (RDM endpoint,
// FI_SOCKADDR_IN addresses, domain "null0", provider "null"). Static storage,
// one per threading level; never freed.
struct fi_info* null_info(enum fi_threading threading);

// Opens a null fabric (what fi_fabric() returns for the null provider).
int null_fabric_open(struct fid_fabric** fabric);

// The context the null provider received with the latest op on `ep`: the
// application's own when nothing sits in between, fabtrace's record when it
// times the op.
void* null_ep_last_context(struct fid_ep* ep);

// Completions waiting in a null CQ.
size_t null_cq_pending(struct fid_cq* cq);

}  // namespace fabtrace_bench
