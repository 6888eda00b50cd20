// The op-table probe's helper process: every provider opened in a forked
// child (probe_provider_here), its sites and layouts read back over a pipe.
#include <fcntl.h>
#include <poll.h>
#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bpf/uprobe_ops.h"
#include "common/clock.h"
#include "userspace/record/uprobes/optable_probe.h"

namespace fabtrace {

namespace {

// The providers' distinct layouts (res->layouts), and each site's: the one
// its providers have (a function shared by providers whose layouts differ, or
// by one without a layout, gets none: its CQs are not learnt rather than
// learnt wrong).
void assign_layouts(const std::vector<UprobeLayout>& per_provider, OptableResult* res) {
  std::map<std::string, uint32_t> of;  // provider -> index in res->layouts + 1
  for (const UprobeLayout& l : per_provider) {
    auto it = std::find(res->layouts.begin(), res->layouts.end(), l);
    if (it == res->layouts.end() && res->layouts.size() >= FT_UP_MAX_LAYOUTS) {
      res->notes.push_back(l.provider + ": more than " + std::to_string(FT_UP_MAX_LAYOUTS) +
                           " layouts: its CQs opened before the session are not learnt");
      continue;
    }
    if (it == res->layouts.end()) it = res->layouts.insert(res->layouts.end(), l);
    of[l.provider] = static_cast<uint32_t>(it - res->layouts.begin()) + 1;
  }
  for (OpSite& site : res->sites) {
    std::set<uint32_t> got;
    for (const std::string& p : site.providers()) got.insert(of.count(p) ? of[p] : 0);
    site.layout = got.size() == 1 ? *got.begin() : 0;
  }
}

}  // namespace

OptableResult probe_optables(const std::vector<std::string>& providers, int timeout_ms) {
  OptableResult res;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    res.notes.push_back(std::string("pipe: ") + std::strerror(errno));
    return res;
  }
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) {
    res.notes.push_back(std::string("fork: ") + std::strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return res;
  }
  if (child == 0) {
    // It dies with the collector, however the collector dies (a killed one
    // left it running on for its provider's timeouts); a parent gone already
    // before the call is caught by the check after it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    close(fds[0]);
    std::string text;
    // The library file the helper opened: the by-name path reads its symbols.
    const std::string lib = fabric_library_path();
    if (!lib.empty()) text += "F\t" + lib + "\n";
    for (const std::string& p : providers) {
      // Once per threading level and endpoint type: a provider may choose its
      // tables by threading, and offer RDM, MSG or DGRAM endpoints (several;
      // udp's DGRAM functions are not those rxd's RDM tables hold over it).
      // The layout from the first open with FI_THREAD_SAFE (RDM where the
      // provider has it, else MSG, else DGRAM: the utility objects).
      bool opened = false, layout_tried = false;
      std::vector<std::string> failed;
      UprobeLayout layout;
      for (const int ep_type : {FI_EP_RDM, FI_EP_MSG, FI_EP_DGRAM}) {
        for (const int threading : {FI_THREAD_SAFE, FI_THREAD_DOMAIN}) {
          std::vector<OpSite> sites;
          std::vector<std::string> notes;
          std::string why;
          const bool learn = threading == FI_THREAD_SAFE && !layout_tried;
          const bool ok = probe_provider_here(p, threading, ep_type, &sites, &why, &notes,
                                              learn ? &layout : nullptr);
          for (const std::string& n : notes) text += "#" + n + "\n";
          if (!ok) {
            failed.push_back(
                why + " (" + ep_type_name(ep_type) +
                (threading == FI_THREAD_SAFE ? ", FI_THREAD_SAFE)" : ", FI_THREAD_DOMAIN)"));
            continue;
          }
          opened = true;
          layout_tried = layout_tried || learn;
          for (const OpSite& s : sites) text += site_line(s) + "\n";
        }
      }
      // An endpoint type the provider does not offer is no news; a provider
      // that opened with neither is.
      if (!opened)
        for (const std::string& w : failed) text += "#" + w + "\n";
      if (!layout.path.empty()) text += layout_line(layout) + "\n";
    }
    size_t off = 0;
    while (off < text.size()) {
      const ssize_t n = write(fds[1], text.data() + off, text.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  const uint64_t deadline = mono_ns() + static_cast<uint64_t>(timeout_ms) * 1000000ULL;
  bool timed_out = false;
  for (;;) {
    const uint64_t now = mono_ns();
    if (now >= deadline) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>((deadline - now) / 1000000ULL) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      timed_out = r == 0;
      break;
    }
    char buf[4096];
    const ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > (1u << 20)) break;
  }
  close(fds[0]);
  if (timed_out) {
    kill(child, SIGKILL);
    res.notes.push_back("the op-table probe did not finish in " + std::to_string(timeout_ms) +
                        " ms: killed");
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  std::vector<OpSite> all;
  std::vector<UprobeLayout> layouts;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] == '#') {
      const std::string n = line.substr(1);
      if (std::find(res.notes.begin(), res.notes.end(), n) == res.notes.end())
        res.notes.push_back(n);
      continue;
    }
    if (line.rfind("F\t/", 0) == 0) {
      res.library = line.substr(2);
      continue;
    }
    UprobeLayout l;
    if (parse_layout_line(line, &l)) {
      layouts.push_back(l);
      continue;
    }
    OpSite s;
    if (parse_site_line(line, &s)) all.push_back(s);
  }
  res.sites = dedupe_sites(all, &res.notes);
  assign_layouts(layouts, &res);
  // A utility provider and its core probed together: the utility provider's
  // own core objects (opened and driven from inside it) look like an
  // application's, and its ops are counted twice.
  for (const std::string& layered : providers) {
    const size_t semi = layered.find(';');
    if (semi == std::string::npos) continue;
    const std::string core = layered.substr(0, semi);
    if (std::find(providers.begin(), providers.end(), core) != providers.end())
      res.notes.push_back(layered + " and " + core + " are probed together: a " + layered +
                          " process's inner " + core +
                          " endpoints and CQs look like an application's (its ops counted "
                          "twice): probe them in separate sessions");
  }
  return res;
}

}  // namespace fabtrace
