#include "quirks.h"

#include <cstdlib>

namespace ftapp {
namespace {

bool quirks_disabled() {
  const char* v = std::getenv("FT_APP_NO_QUIRKS");
  return v != nullptr && *v != '\0' && *v != '0';
}

}  // namespace

std::string known_broken(const Options& opt, const std::string& fn) {
  if (quirks_disabled()) return std::string();
  if (opt.prov.find("ofi_rxd") != std::string::npos &&
      (fn.rfind("fi_fetch_atomic", 0) == 0 || fn.rfind("fi_compare_atomic", 0) == 0)) {
    return "ofi_rxd: fetching atomics crash in fi_cq_read (ofiwg/libfabric#11814)";
  }
  return std::string();
}

bool quirk_lost_remote_cq_data_flag(const Options& opt) {
  return !quirks_disabled() && opt.prov == "sockets";
}

}  // namespace ftapp
