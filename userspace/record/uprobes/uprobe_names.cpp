#include "userspace/record/uprobes/uprobe_names.h"

#include <cstdio>
#include <set>

#include "bpf/uprobe_ops.h"
#include "common/addr_format.h"

namespace fabtrace {

namespace {

std::string label_of(const UprobeAddr& a) {
  return address_label(a.addr_format, a.bytes.data(), a.bytes.size(), a.straddr_form);
}

// A connected endpoint's address as the preload prints it (format_addr: it
// has no AV whose straddr to ask), a sockaddr cut to its family's length.
std::string conn_label(const UprobeAddr& a) {
  const size_t len = sockaddr_len(a.addr_format, a.bytes.data());
  return format_addr(a.addr_format, a.bytes.data(),
                     len && len <= a.bytes.size() ? len : a.bytes.size());
}

// A sockaddr's port (0 for another format, or one too short to hold it): an
// info's src_addr names the endpoint only once it has one.
uint16_t sockaddr_port(const UprobeAddr& a) {
  const size_t len = sockaddr_len(a.addr_format, a.bytes.data());
  if (!len || len > a.bytes.size()) return 0;
  // sin_port and sin6_port: the same place, after the family, network order.
  const auto* p = reinterpret_cast<const unsigned char*>(a.bytes.data());
  return static_cast<uint16_t>(p[2] << 8 | p[3]);
}

// The one passive endpoint name of process `pid` that is `src` but for its
// port (0 in `src`); NULL when there is none or several differ.
const UprobeAddr* listener_of(uint32_t pid, const UprobeAddr& src, const UprobeNames& names) {
  const size_t len = sockaddr_len(src.addr_format, src.bytes.data());
  if (!len || len > src.bytes.size()) return nullptr;
  const UprobeAddr* found = nullptr;
  for (auto it = names.ep_names.lower_bound({pid, 0});
       it != names.ep_names.end() && it->first.first == pid; ++it) {
    const UprobeAddr& a = it->second;
    if (!a.passive || a.bytes.size() < len || !sockaddr_port(a)) continue;
    // The family, then all past the port (sockaddr_in's address and zero
    // padding, sockaddr_in6's flow info, address and scope).
    if (a.bytes.compare(0, 2, src.bytes, 0, 2) != 0 ||
        a.bytes.compare(4, len - 4, src.bytes, 4, len - 4) != 0)
      continue;
    if (found && found->bytes.compare(0, len, a.bytes, 0, len) != 0) return nullptr;
    found = &a;
  }
  return found;
}

const UprobeConn* conn_of(uint32_t pid, uint64_t ep, const UprobeNames& names) {
  const auto it = names.ep_conns.find({pid, ep});
  return it == names.ep_conns.end() ? nullptr : &it->second;
}

}  // namespace

std::string uprobe_local_label(uint32_t pid, uint64_t ep, const UprobeNames& names) {
  const UprobeConn* conn = conn_of(pid, ep, names);
  const auto it = names.ep_names.find({pid, ep});
  if (it != names.ep_names.end() && !it->second.bytes.empty())
    return conn ? conn_label(it->second) : label_of(it->second);
  if (conn && sockaddr_port(conn->local)) return conn_label(conn->local);
  if (conn && !conn->local.bytes.empty())
    if (const UprobeAddr* l = listener_of(pid, conn->local, names)) return conn_label(*l);
  char hex[32];
  std::snprintf(hex, sizeof(hex), "0x%llx", static_cast<unsigned long long>(ep));
  return "pid " + std::to_string(pid) + " ep " + hex;
}

std::string uprobe_remote_label(uint32_t pid, uint64_t ep, uint64_t peer,
                                const UprobeNames& names) {
  if (const UprobeConn* conn = conn_of(pid, ep, names))
    return conn->peer.bytes.empty() ? "(connected)" : conn_label(conn->peer);
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
