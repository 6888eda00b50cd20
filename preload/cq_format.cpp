#include "preload/cq_format.h"

namespace fabtrace {

enum fi_cq_format cq_unspec_layout(const std::string& prov_name) {
  const size_t semi = prov_name.rfind(';');
  const std::string p = semi == std::string::npos ? prov_name : prov_name.substr(semi + 1);
  // What each provider's cq_open does with FI_CQ_FORMAT_UNSPEC (libfabric 1.x):
  // ofi_cq_init reads it as fi_cq_entry; sockets writes CONTEXT back; efa
  // reads MSG; psm, psm2 and psm3 write TAGGED back.
  for (const char* ctx : {"tcp", "udp", "shm", "sockets", "verbs", "ofi_rxm", "ofi_rxd"})
    if (p == ctx) return FI_CQ_FORMAT_CONTEXT;
  if (p == "efa") return FI_CQ_FORMAT_MSG;
  for (const char* tagged : {"psm", "psm2", "psm3"})
    if (p == tagged) return FI_CQ_FORMAT_TAGGED;
  return FI_CQ_FORMAT_UNSPEC;
}

}  // namespace fabtrace
