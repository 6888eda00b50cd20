#include "preload/names.h"

namespace fabtrace {

namespace {
std::unique_lock<std::mutex> lock(std::mutex& m, bool wait) {
  return wait ? std::unique_lock<std::mutex>(m) : std::unique_lock<std::mutex>(m, std::try_to_lock);
}
}  // namespace

std::string local_label(const EpWrap* ep, bool wait) {
  for (const EpWrap* e = ep; e; e = e->parent) {
    const auto lk = lock(const_cast<EpWrap*>(e)->names_mu, wait);
    if (!lk.owns_lock()) return "";
    if (!e->local_name.empty()) return e->local_name;
  }
  return ep->domain->name.empty() ? "?" : ep->domain->name;
}

std::string remote_label(const EpWrap* ep, fi_addr_t peer, bool wait) {
  // A connected endpoint has one peer whatever fi_addr_t the op carried.
  if (ep->type == FI_EP_MSG) {
    const auto lk = lock(const_cast<EpWrap*>(ep)->names_mu, wait);
    if (!lk.owns_lock()) return "";
    return ep->peer_name.empty() ? "(connected)" : ep->peer_name;
  }
  if (peer == FI_ADDR_UNSPEC || peer == FI_ADDR_NOTAVAIL) return "(any)";
  for (const EpWrap* e = ep; e; e = e->parent)
    if (e->av) {
      const auto lk = lock(e->av->mu, wait);
      if (!lk.owns_lock()) return "";
      const auto it = e->av->names.find(peer);
      if (it != e->av->names.end() && !it->second.empty()) return it->second;
    }
  return "fi_addr#" + std::to_string(static_cast<unsigned long long>(peer));
}

}  // namespace fabtrace
