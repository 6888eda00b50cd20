#include "userspace/record/uprobe_names.h"

#include <cstdio>
#include <set>

#include "bpf/uprobe_ops.h"
#include "common/addr_format.h"

namespace fabtrace {

namespace {

std::string label_of(const UprobeAddr& a) {
  return address_label(a.addr_format, a.bytes.data(), a.bytes.size(), a.straddr_form);
}

}  // namespace

std::string uprobe_local_label(uint32_t pid, uint64_t ep, const UprobeNames& names) {
  const auto it = names.ep_names.find({pid, ep});
  if (it != names.ep_names.end() && !it->second.bytes.empty()) return label_of(it->second);
  char hex[32];
  std::snprintf(hex, sizeof(hex), "0x%llx", static_cast<unsigned long long>(ep));
  return "pid " + std::to_string(pid) + " ep " + hex;
}

std::string uprobe_remote_label(uint32_t pid, uint64_t ep, uint64_t peer,
                                const UprobeNames& names) {
  if (peer == FT_UP_ADDR_UNSPEC) return "(any)";
  const auto av = names.ep_av.find({pid, ep});
  if (av != names.ep_av.end()) {
    const auto it = names.av_addrs.find({pid, av->second, peer});
    if (it != names.av_addrs.end()) return label_of(it->second);
  } else {
    std::set<std::string> seen;
    for (auto it = names.av_addrs.lower_bound({pid, 0, 0});
         it != names.av_addrs.end() && std::get<0>(it->first) == pid; ++it)
      if (std::get<2>(it->first) == peer) seen.insert(label_of(it->second));
    if (seen.size() == 1) return *seen.begin();
  }
  return "fi_addr#" + std::to_string(static_cast<unsigned long long>(peer));
}

}  // namespace fabtrace
