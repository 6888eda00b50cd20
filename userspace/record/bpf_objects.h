// The BPF objects of one `fabtrace record` session, as libbpf holds them: the
// skeletons it opened, the maps they share, the links it made, and the attach
// list that says of each program and attach point whether it is attached,
// absent or failed (with libbpf's reason, from its log kept here). The session
// (bpf_session.h) and the uprobe mode's (uprobes/uprobe_session.h) each open
// their skeletons here, so that all share one set of maps and one release.
#pragma once

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/kernel_log.h"

namespace fabtrace {

// libbpf's messages: kept (the last few lines) to explain a refusal in one
// line, printed only with FABTRACE_BPF_DEBUG=1 (libbpf_set_print's callback).
int libbpf_log(enum libbpf_print_level level, const char* fmt, va_list ap);
// What libbpf said since the last call.
std::string take_log();
// The most telling line of libbpf's log: the verifier's or the kernel's words.
std::string reason_of(const std::string& log, int err);
// Which tracepoint a tp_btf/raw_tp program attaches to ("" for others).
std::string tracepoint_of(const bpf_program* p);

// The pids a probe is attached for: every process (-1), or --only-pids'.
inline std::vector<pid_t> attach_pids(const std::vector<pid_t>& only_pids) {
  return only_pids.empty() ? std::vector<pid_t>{-1} : only_pids;
}

// Every (key, value) of a BPF hash map.
template <typename K, typename F>
void each_key(int fd, F&& on) {
  K at{}, next{};
  bool first = true;
  while (bpf_map_get_next_key(fd, first ? nullptr : &at, &next) == 0) {
    first = false;
    at = next;
    if (!on(at)) return;
  }
}

template <typename K, typename V, typename F>
void each_entry(int fd, F&& on) {
  each_key<K>(fd, [&](const K& k) {
    V v{};
    if (bpf_map_lookup_elem(fd, &k, &v) == 0) on(k, v);
    return true;
  });
}

struct BpfObjects {
  struct Skel {
    std::string name;  // "sched", ...
    bpf_object* obj = nullptr;
    std::function<int()> load;
    std::function<void()> destroy;
    bool loaded = false;
    // Its programs are attached by its owner (per library file), not one by
    // one at the load.
    bool attached_apart = false;
  };

  std::vector<Skel> skels;
  std::map<std::string, int> shared;  // map name -> fd, from the first loaded object
  std::vector<bpf_link*> links;
  std::vector<int> link_fds;  // links made without libbpf (uprobes/uprobe_multi.h): their fds
  std::vector<KernelAttach>* attach = nullptr;
  uint64_t ring_bytes = 0;  // the shared ring buffer's size (0: the programs' own)

  BpfObjects() = default;
  BpfObjects(const BpfObjects&) = delete;
  BpfObjects& operator=(const BpfObjects&) = delete;
  // Detaches everything, then destroys the objects.
  ~BpfObjects();

  void note(const std::string& program, const std::string& point, const std::string& state,
            const std::string& detail) {
    attach->push_back({program, point, state, detail});
  }

  // Opens one skeleton (its failure is a line in the attach list), tells it
  // the collector's own pid, and keeps it to be loaded with the others.
  template <typename S>
  S* open(const char* name, S* (*open_fn)(), int (*load_fn)(S*), void (*destroy_fn)(S*),
          bool attached_apart = false) {
    S* s = open_fn();
    if (!s) {
      note(name, "(object)", "failed", reason_of(take_log(), errno));
      return nullptr;
    }
    s->rodata->ft_self_tgid = static_cast<__u32>(getpid());
    Skel k;
    k.name = name;
    k.obj = s->obj;
    k.load = [s, load_fn] { return load_fn(s); };
    k.destroy = [s, destroy_fn] { destroy_fn(s); };
    k.attached_apart = attached_apart;
    skels.push_back(std::move(k));
    return s;
  }
  bool loaded(const std::string& name) const;

  // Loads one object: shares the maps, leaves out programs whose tracepoint
  // this kernel does not have (listed as absent).
  void load(Skel& k, const btf* vmlinux);
  // Attaches one program where its section says.
  void attach_program(const Skel& k, bpf_program* p);
};

}  // namespace fabtrace
