#include "preload/names.h"

namespace fabtrace {

std::string local_label(const EpWrap* ep) {
  for (const EpWrap* e = ep; e; e = e->parent) {
    std::lock_guard<std::mutex> lk(const_cast<EpWrap*>(e)->names_mu);
    if (!e->local_name.empty()) return e->local_name;
  }
  return ep->domain->name.empty() ? "?" : ep->domain->name;
}

std::string remote_label(const EpWrap* ep, fi_addr_t peer) {
  // A connected endpoint has one peer whatever fi_addr_t the op carried.
  if (ep->type == FI_EP_MSG) {
    std::lock_guard<std::mutex> lk(const_cast<EpWrap*>(ep)->names_mu);
    return ep->peer_name.empty() ? "(connected)" : ep->peer_name;
  }
  if (peer == FI_ADDR_UNSPEC || peer == FI_ADDR_NOTAVAIL) return "(any)";
  for (const EpWrap* e = ep; e; e = e->parent)
    if (e->av) {
      std::string n = e->av->name_of(peer);
      if (!n.empty()) return n;
    }
  return "fi_addr#" + std::to_string(static_cast<unsigned long long>(peer));
}

}  // namespace fabtrace
