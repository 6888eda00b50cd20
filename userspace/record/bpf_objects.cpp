#include "userspace/record/bpf_objects.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>

namespace fabtrace {

namespace {

std::mutex g_log_mu;
std::string g_log;

// The maps every object shares; the first object that loads owns them.
const char* const kSharedMaps[] = {"traced", "threads",  "thread_share", "traced_socks",
                                   "events", "counters", "run_log"};

}  // namespace

int libbpf_log(enum libbpf_print_level level, const char* fmt, va_list ap) {
  char buf[1024];
  vsnprintf(buf, sizeof(buf), fmt, ap);
  if (std::getenv("FABTRACE_BPF_DEBUG")) std::fputs(buf, stderr);
  if (level == LIBBPF_DEBUG) return 0;
  std::lock_guard<std::mutex> lk(g_log_mu);
  g_log += buf;
  if (g_log.size() > 8192) g_log.erase(0, g_log.size() - 8192);
  return 0;
}

std::string take_log() {
  std::lock_guard<std::mutex> lk(g_log_mu);
  std::string s;
  s.swap(g_log);
  return s;
}

std::string reason_of(const std::string& log, int err) {
  std::string best;
  size_t pos = 0;
  while (pos < log.size()) {
    size_t end = log.find('\n', pos);
    if (end == std::string::npos) end = log.size();
    std::string line = log.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty()) continue;
    if (line.rfind("libbpf: ", 0) == 0) line = line.substr(8);
    if (best.empty() || line.find("failed") != std::string::npos ||
        line.find("invalid") != std::string::npos)
      best = line;
  }
  const std::string e = std::strerror(err > 0 ? err : -err);
  if (best.empty()) return e;
  if (best.size() > 200) best.resize(200);
  return best + " (" + e + ")";
}

std::string tracepoint_of(const bpf_program* p) {
  const std::string sec = bpf_program__section_name(p);
  for (const char* pre : {"tp_btf/", "raw_tp/"})
    if (sec.rfind(pre, 0) == 0) return sec.substr(std::strlen(pre));
  return "";
}

BpfObjects::~BpfObjects() {
  // Each release waits for the kernel's grace periods (tens of ms for a
  // uprobe_multi link, about 100 for a perf-event uprobe such as a USDT
  // probe's): the links made without libbpf are closed on a thread of their
  // own meanwhile.
  auto close_fds = [fds = link_fds] {
    for (int fd : fds) close(fd);
  };
  std::thread closer;
  try {
    if (!link_fds.empty()) closer = std::thread(close_fds);
  } catch (const std::system_error&) {
    close_fds();  // no thread to be had: one after the other
  }
  for (bpf_link* l : links) bpf_link__destroy(l);
  if (closer.joinable()) closer.join();
  for (Skel& s : skels)
    if (s.destroy) s.destroy();
}

bool BpfObjects::loaded(const std::string& name) const {
  for (const Skel& k : skels)
    if (k.name == name && k.loaded) return true;
  return false;
}

void BpfObjects::load(Skel& k, const btf* vmlinux) {
  bpf_program* p;
  bpf_object__for_each_program(p, k.obj) {
    const std::string tp = tracepoint_of(p);
    const std::string sec = bpf_program__section_name(p);
    if (sec.rfind("tp_btf/", 0) != 0) continue;
    const std::string type = "btf_trace_" + tp;
    if (!vmlinux || btf__find_by_name_kind(vmlinux, type.c_str(), BTF_KIND_TYPEDEF) < 0) {
      bpf_program__set_autoload(p, false);
      note(k.name, sec, "absent", "this kernel has no tracepoint " + tp);
    }
  }
  for (const char* m : kSharedMaps) {
    bpf_map* map = bpf_object__find_map_by_name(k.obj, m);
    const auto it = shared.find(m);
    if (map && it != shared.end() && bpf_map__reuse_fd(map, it->second) != 0)
      note(k.name, std::string("map ") + m, "failed", reason_of(take_log(), errno));
    // The ring buffer is sized by its owner (the first object), for the node.
    if (map && it == shared.end() && ring_bytes && std::strcmp(m, "events") == 0)
      bpf_map__set_max_entries(map, static_cast<__u32>(ring_bytes));
  }
  take_log();
  const int err = k.load();
  if (err) {
    const std::string why = reason_of(take_log(), err);
    bpf_object__for_each_program(p, k.obj) {
      if (bpf_program__autoload(p)) note(k.name, bpf_program__section_name(p), "failed", why);
    }
    return;
  }
  k.loaded = true;
  for (const char* m : kSharedMaps) {
    bpf_map* map = bpf_object__find_map_by_name(k.obj, m);
    if (map && !shared.count(m)) shared[m] = bpf_map__fd(map);
  }
}

void BpfObjects::attach_program(const Skel& k, bpf_program* p) {
  const std::string sec = bpf_program__section_name(p);
  take_log();
  bpf_link* l = bpf_program__attach(p);
  if (!l) {
    const int err = errno;
    // A raw tracepoint the kernel does not have (a module's, not loaded).
    if (err == ENOENT && sec.rfind("raw_tp/", 0) == 0) {
      note(k.name, sec, "absent", "no tracepoint " + tracepoint_of(p) + " (module not loaded)");
      take_log();
    } else {
      note(k.name, sec, "failed", reason_of(take_log(), err));
    }
    return;
  }
  links.push_back(l);
  note(k.name, sec, "attached", "");
}

}  // namespace fabtrace
