#include "userspace/record/uprobes/provider_functions.h"

#include <netinet/in.h>
#include <rdma/fabric.h>

namespace fabtrace {

namespace {

// From libfabric v1.17.0's source (git show v1.17.0:prov/...): each row is the
// initializer of the op table the provider installs for an RDM endpoint with
// msg, tagged, RMA and atomic caps at either threading level (rxm's
// "_thru" tables, rxm_msg_thru_ops and the like, serve only a core provider
// that does its own rendezvous: not tcp's, not probed here).
//
// Left out on purpose: cq.read of both providers is ofi_cq_read, which calls
// cq.readfrom through the op table (util_cq.c): readfrom's probe sees both (as
// the op-table path decides by calling it). fi_no_* stubs are never listed.
//
// Where later versions differ (the initializers of msg/tagged send and recv,
// ep bind, cq_open, getname and av insert compared in v1.18.0, v1.20.0 and
// v2.0.0): rxm's endpoint bind is its own rxm_ep_bind from 1.18 on (listed as
// the alternative after '|'); the others keep their names. A name missing
// from a library's symbols is reported as not attached, never guessed.
const std::vector<ProviderFunction> kFunctions = {
    // prov/rxm/src/rxm_domain.c rxm_domain_ops; rxm_ep.c rxm_ep_fi_ops (bind:
    // a static inline of include/ofi_util.h, one copy per file) and rxm_ops_cm;
    // prov/util/src/rxm_av.c rxm_av_ops; util_cq.c util_cq_ops (rxm_cq_ops).
    {"tcp;ofi_rxm", "domain", "cq_open", "rxm_cq_open"},
    {"tcp;ofi_rxm", "ep", "bind", "rxm_ep.c:ofi_ep_fid_bind|rxm_ep_bind"},
    {"tcp;ofi_rxm", "cm", "getname", "rxm_getname"},
    {"tcp;ofi_rxm", "av", "insert", "rxm_av_insert"},
    {"tcp;ofi_rxm", "cq", "readfrom", "ofi_cq_readfrom"},
    {"tcp;ofi_rxm", "cq", "sread", "ofi_cq_sread"},
    {"tcp;ofi_rxm", "cq", "sreadfrom", "ofi_cq_sreadfrom"},
    // prov/rxm/src/rxm_msg.c rxm_msg_ops.
    {"tcp;ofi_rxm", "msg", "recv", "rxm_recv"},
    {"tcp;ofi_rxm", "msg", "recvv", "rxm_recvv"},
    {"tcp;ofi_rxm", "msg", "recvmsg", "rxm_recvmsg"},
    {"tcp;ofi_rxm", "msg", "send", "rxm_send"},
    {"tcp;ofi_rxm", "msg", "sendv", "rxm_sendv"},
    {"tcp;ofi_rxm", "msg", "sendmsg", "rxm_sendmsg"},
    {"tcp;ofi_rxm", "msg", "inject", "rxm_inject"},
    {"tcp;ofi_rxm", "msg", "senddata", "rxm_senddata"},
    {"tcp;ofi_rxm", "msg", "injectdata", "rxm_injectdata"},
    // prov/rxm/src/rxm_tagged.c rxm_tagged_ops.
    {"tcp;ofi_rxm", "tagged", "recv", "rxm_trecv"},
    {"tcp;ofi_rxm", "tagged", "recvv", "rxm_trecvv"},
    {"tcp;ofi_rxm", "tagged", "recvmsg", "rxm_trecvmsg"},
    {"tcp;ofi_rxm", "tagged", "send", "rxm_tsend"},
    {"tcp;ofi_rxm", "tagged", "sendv", "rxm_tsendv"},
    {"tcp;ofi_rxm", "tagged", "sendmsg", "rxm_tsendmsg"},
    {"tcp;ofi_rxm", "tagged", "inject", "rxm_tinject"},
    {"tcp;ofi_rxm", "tagged", "senddata", "rxm_tsenddata"},
    {"tcp;ofi_rxm", "tagged", "injectdata", "rxm_tinjectdata"},
    // prov/rxm/src/rxm_rma.c rxm_rma_ops.
    {"tcp;ofi_rxm", "rma", "read", "rxm_ep_read"},
    {"tcp;ofi_rxm", "rma", "readv", "rxm_ep_readv"},
    {"tcp;ofi_rxm", "rma", "readmsg", "rxm_ep_readmsg"},
    {"tcp;ofi_rxm", "rma", "write", "rxm_ep_write"},
    {"tcp;ofi_rxm", "rma", "writev", "rxm_ep_writev"},
    {"tcp;ofi_rxm", "rma", "writemsg", "rxm_ep_writemsg"},
    {"tcp;ofi_rxm", "rma", "inject", "rxm_ep_inject_write"},
    {"tcp;ofi_rxm", "rma", "writedata", "rxm_ep_writedata"},
    {"tcp;ofi_rxm", "rma", "injectdata", "rxm_ep_inject_writedata"},
    // prov/rxm/src/rxm_atomic.c rxm_ops_atomic.
    {"tcp;ofi_rxm", "atomic", "write", "rxm_ep_atomic_write"},
    {"tcp;ofi_rxm", "atomic", "writev", "rxm_ep_atomic_writev"},
    {"tcp;ofi_rxm", "atomic", "writemsg", "rxm_ep_atomic_writemsg"},
    {"tcp;ofi_rxm", "atomic", "inject", "rxm_ep_atomic_inject"},
    {"tcp;ofi_rxm", "atomic", "readwrite", "rxm_ep_atomic_readwrite"},
    {"tcp;ofi_rxm", "atomic", "readwritev", "rxm_ep_atomic_readwritev"},
    {"tcp;ofi_rxm", "atomic", "readwritemsg", "rxm_ep_atomic_readwritemsg"},
    {"tcp;ofi_rxm", "atomic", "compwrite", "rxm_ep_atomic_compwrite"},
    {"tcp;ofi_rxm", "atomic", "compwritev", "rxm_ep_atomic_compwritev"},
    {"tcp;ofi_rxm", "atomic", "compwritemsg", "rxm_ep_atomic_compwritemsg"},
    // prov/shm/src/smr_domain.c smr_domain_ops; smr_ep.c smr_ep_fi_ops and
    // smr_cm_ops; smr_av.c smr_av_ops; the CQ is libfabric's utility CQ
    // (smr_cq.c: ofi_cq_init, util_cq_ops).
    {"shm", "domain", "cq_open", "smr_cq_open"},
    {"shm", "ep", "bind", "smr_ep_bind"},
    {"shm", "cm", "getname", "smr_getname"},
    {"shm", "av", "insert", "smr_av_insert"},
    {"shm", "cq", "readfrom", "ofi_cq_readfrom"},
    {"shm", "cq", "sread", "ofi_cq_sread"},
    {"shm", "cq", "sreadfrom", "ofi_cq_sreadfrom"},
    // prov/shm/src/smr_msg.c smr_msg_ops and smr_tag_ops.
    {"shm", "msg", "recv", "smr_recv"},
    {"shm", "msg", "recvv", "smr_recvv"},
    {"shm", "msg", "recvmsg", "smr_recvmsg"},
    {"shm", "msg", "send", "smr_send"},
    {"shm", "msg", "sendv", "smr_sendv"},
    {"shm", "msg", "sendmsg", "smr_sendmsg"},
    {"shm", "msg", "inject", "smr_inject"},
    {"shm", "msg", "senddata", "smr_senddata"},
    {"shm", "msg", "injectdata", "smr_injectdata"},
    {"shm", "tagged", "recv", "smr_trecv"},
    {"shm", "tagged", "recvv", "smr_trecvv"},
    {"shm", "tagged", "recvmsg", "smr_trecvmsg"},
    {"shm", "tagged", "send", "smr_tsend"},
    {"shm", "tagged", "sendv", "smr_tsendv"},
    {"shm", "tagged", "sendmsg", "smr_tsendmsg"},
    {"shm", "tagged", "inject", "smr_tinject"},
    {"shm", "tagged", "senddata", "smr_tsenddata"},
    {"shm", "tagged", "injectdata", "smr_tinjectdata"},
    // prov/shm/src/smr_rma.c smr_rma_ops.
    {"shm", "rma", "read", "smr_read"},
    {"shm", "rma", "readv", "smr_readv"},
    {"shm", "rma", "readmsg", "smr_readmsg"},
    {"shm", "rma", "write", "smr_write"},
    {"shm", "rma", "writev", "smr_writev"},
    {"shm", "rma", "writemsg", "smr_writemsg"},
    {"shm", "rma", "inject", "smr_rma_inject"},
    {"shm", "rma", "writedata", "smr_writedata"},
    {"shm", "rma", "injectdata", "smr_inject_writedata"},
    // prov/shm/src/smr_atomic.c smr_atomic_ops.
    {"shm", "atomic", "write", "smr_atomic_write"},
    {"shm", "atomic", "writev", "smr_atomic_writev"},
    {"shm", "atomic", "writemsg", "smr_atomic_writemsg"},
    {"shm", "atomic", "inject", "smr_atomic_inject"},
    {"shm", "atomic", "readwrite", "smr_atomic_readwrite"},
    {"shm", "atomic", "readwritev", "smr_atomic_readwritev"},
    {"shm", "atomic", "readwritemsg", "smr_atomic_readwritemsg"},
    {"shm", "atomic", "compwrite", "smr_atomic_compwrite"},
    {"shm", "atomic", "compwritev", "smr_atomic_compwritev"},
    {"shm", "atomic", "compwritemsg", "smr_atomic_compwritemsg"},
};

// tcp's addresses are sockaddr_in here (an IPv6-only host: sockaddr_in6, which
// the helper learns where it can open the provider); shm's are strings.
const ProviderAddress kAddresses[] = {
    {"tcp;ofi_rxm", FI_SOCKADDR_IN, sizeof(sockaddr_in)},
    {"shm", FI_ADDR_STR, 0},
};

}  // namespace

std::vector<ProviderFunction> provider_functions(const std::string& provider) {
  std::vector<ProviderFunction> out;
  for (const ProviderFunction& f : kFunctions)
    if (provider == f.provider) out.push_back(f);
  return out;
}

const std::vector<ProviderFunction>& all_provider_functions() { return kFunctions; }

bool provider_address(const std::string& provider, ProviderAddress* out) {
  for (const ProviderAddress& a : kAddresses)
    if (provider == a.provider) {
      *out = a;
      return true;
    }
  return false;
}

}  // namespace fabtrace
