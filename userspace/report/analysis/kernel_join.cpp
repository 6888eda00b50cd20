#include "userspace/report/analysis/kernel_join.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "common/kernel_explain.h"
#include "common/printable.h"
#include "userspace/report/job/job.h"

namespace fabtrace::report {

const KernelExplanation* stall_cause(const KernelNode& n, long pid, uint32_t cq,
                                     uint64_t end_mono_ns, uint64_t gap_ns) {
  const KernelExplanation* best = nullptr;
  uint64_t best_off = UINT64_MAX;
  const uint64_t tolerance = std::max<uint64_t>(gap_ns / 100, 50000);
  for (const KernelExplanation& s : n.stalls) {
    if (static_cast<long>(s.pid) != pid || s.cq != cq) continue;
    const uint64_t d = s.dur_ns();
    if ((d > gap_ns ? d - gap_ns : gap_ns - d) > tolerance) continue;
    const uint64_t off = s.w.end > end_mono_ns ? s.w.end - end_mono_ns : end_mono_ns - s.w.end;
    if (off < best_off) {
      best_off = off;
      best = &s;
    }
  }
  // Both ends come from one host's CLOCK_MONOTONIC: anything but a near match
  // is another gap of the same length.
  return best && best_off <= tolerance ? best : nullptr;
}

bool parse_ip_port(const std::string& addr, int* family, uint8_t ip[16], uint16_t* port) {
  std::string s = addr;
  const size_t scheme = s.find("://");
  if (scheme != std::string::npos) s = s.substr(scheme + 3);
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon + 1 >= s.size()) return false;
  const std::string p = s.substr(colon + 1);
  char* end = nullptr;
  const unsigned long v = std::strtoul(p.c_str(), &end, 10);
  if (*end || v > 0xFFFF) return false;
  std::string host = s.substr(0, colon);
  std::memset(ip, 0, 16);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    if (inet_pton(AF_INET6, host.c_str(), ip) != 1) return false;
    *family = AF_INET6;
  } else {
    if (inet_pton(AF_INET, host.c_str(), ip) != 1) return false;
    *family = AF_INET;
  }
  *port = static_cast<uint16_t>(v);
  return true;
}

LinkNet link_net(const KernelNode& n, long pid, const std::string& local,
                 const std::string& remote) {
  LinkNet out;
  int lf = 0, rf = 0;
  uint8_t lip[16], rip[16];
  uint16_t lport = 0, rport = 0;
  if (!parse_ip_port(local, &lf, lip, &lport) || !parse_ip_port(remote, &rf, rip, &rport))
    return out;
  const size_t rlen = rf == AF_INET6 ? 16 : 4;
  for (const KernelConn& c : n.conns) {
    if (static_cast<long>(c.owner) != pid || c.t.family != rf) continue;
    const bool to_remote = std::memcmp(c.t.daddr, rip, rlen) == 0;
    // We connected to the remote's listening port, or the remote connected to
    // ours (its side is an ephemeral port, so only its address tells).
    const bool ours = to_remote && (c.t.dport == rport || c.t.sport == lport);
    if (!ours) continue;
    out.retrans += c.retrans;
    out.drops += c.drops;
  }
  return out;
}

const KernelNode* kernel_node(const Job& job, const std::string& host) {
  for (const KernelNode& n : job.kernel)
    if (n.host == host) return &n;
  return nullptr;
}

void join_kernel(Job* job) {
  if (job->kernel.empty()) return;
  for (Stall& s : job->stalls) {
    s.kernel_logged = s.has_cause = false;
    for (const KernelNode& n : job->kernel) {
      if (n.host != s.host) continue;
      s.kernel_logged = true;
      const KernelExplanation* w =
          stall_cause(n, s.pid, s.cq.id, s.end_mono_ns, static_cast<uint64_t>(s.cq.max_gap_ns));
      if (w) {
        s.has_cause = true;
        s.cause = *w;
        break;
      }
    }
  }
  for (LinkRow& l : job->links) {
    bool logged = false;
    uint64_t retrans = 0, drops = 0;
    for (const KernelNode& n : job->kernel) {
      if (n.host != l.host()) continue;
      logged = true;
      const LinkNet net = link_net(n, l.pid(), l.local(), l.remote());
      retrans += net.retrans;
      drops += net.drops;
    }
    l.set_kernel(logged, retrans, drops);
  }
}

std::string stall_why(const Stall& s) {
  if (s.has_cause) return printable(s.cause.verdict);
  if (s.kernel_logged)
    return "the kernel log has no record of this gap (under FABTRACE_STALL_US, or before the "
           "session attached)";
  return "";
}

}  // namespace fabtrace::report
