#include "userspace/record/bpf_session.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "cxi.skel.h"
#include "irq.skel.h"
#include "mem.skel.h"
#include "net.skel.h"
#include "probes.skel.h"
#include "sched.skel.h"
#include "userspace/record/bpf_objects.h"

namespace fabtrace {

namespace {

// Classic tracepoints (SEC("tracepoint/...")) are found through tracefs: mount
// it where the kernel has it and nobody did. Returns why not, or "".
std::string ensure_tracefs() {
  struct stat st;
  if (stat("/sys/kernel/tracing/events", &st) == 0 ||
      stat("/sys/kernel/debug/tracing/events", &st) == 0)
    return "";
  if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, nullptr) != 0)
    return std::string("cannot mount tracefs: ") + std::strerror(errno);
  return "";
}

}  // namespace

struct BpfSession::Impl {
  BpfOptions opt;
  ftskel_probes* probes = nullptr;
  ftskel_net* net = nullptr;
  ftskel_irq* irq = nullptr;
  ftskel_cxi* cxi = nullptr;
  ftskel_sched* sched = nullptr;
  bool proc_changes_on = false;         // its fork and exec programs attached
  bool proc_loads_on = false;           // and its mmap one
  bool proc_ends_on = false;            // and its exit one
  uint64_t proc_changes_lost_seen = 0;  // what take_proc_changes() last saw
  UsdtLibraries usdt_files{kMaxUsdtFiles, kMaxUsdtFilesPerUser};
  // libbpf's USDT spec ids (one per distinct argument spec of a probe, per
  // attach; its __bpf_usdt_specs map's size): never asked for more than it
  // has, whose error path in libbpf 1.1 frees twice.
  size_t usdt_specs_used = 0;
  UprobeSession up;  // --uprobes
  BpfObjects objs;   // released before the files above are closed
  ring_buffer* rb = nullptr;
  int epfd = -1;  // the ring buffer's wakeups (edge-triggered)
  uint64_t ring_size = 0;
  const std::function<void(const void*, size_t)>* sink = nullptr;
  uint64_t taken = 0, count = 0;  // what one poll drained: bytes, records (at most ring_size)
  PollTurn last;
  // The live ring (live_fd): its own consumer, drained by the live thread.
  ring_buffer* live_rb = nullptr;
  int live_fd = -1;
  const std::function<void(const void*, size_t)>* live_sink = nullptr;

  ~Impl() {
    if (rb) ring_buffer__free(rb);
    if (live_rb) ring_buffer__free(live_rb);
    if (epfd >= 0) ::close(epfd);
  }

  void note(const std::string& program, const std::string& point, const std::string& state,
            const std::string& detail) {
    objs.note(program, point, state, detail);
  }

  void attach_usdt(const UsdtFile& file) {
    if (!probes) return;
    const std::string path = file.attach_path();
    const bpf_map* specs_map = bpf_object__find_map_by_name(probes->obj, "__bpf_usdt_specs");
    const size_t budget = specs_map ? bpf_map__max_entries(specs_map) : 0;
    struct Probe {
      bpf_program* prog;
      const char* name;
      bool poll;
    } const list[] = {{probes->progs.ft_thread_start, "thread_start", false},
                      {probes->progs.ft_cq_stall, "cq_stall", false},
                      {probes->progs.ft_slow_op, "slow_op", false},
                      {probes->progs.ft_op_error, "op_error", false},
                      {probes->progs.ft_mark, "mark", false},
                      {probes->progs.ft_phase_begin, "phase_begin", false},
                      {probes->progs.ft_phase_end, "phase_end", false},
                      {probes->progs.ft_poll, "poll", true}};
    for (const Probe& pr : list) {
      const std::string point = std::string("usdt:fabtrace:") + pr.name;
      if (pr.poll && !opt.polls) {
        note("probes", point, "absent", "per-poll probes are off (--polls turns them on)");
        continue;
      }
      const auto sp = file.specs.find(pr.name);
      if (sp == file.specs.end()) {
        note("probes", point, "absent",
             file.shown + " has no such probe (an older or SDT-less build)");
        continue;
      }
      std::string failed;
      bool attached = false;
      for (const pid_t pid : attach_pids(opt.only_pids)) {
        if (usdt_specs_used + sp->second > budget) {
          failed = file.shown + ": not attached: libbpf's " + std::to_string(budget) +
                   " USDT specs are spent (by " + std::to_string(usdt_files.size()) +
                   " library files)";
          break;
        }
        usdt_specs_used += sp->second;  // taken even when the attach fails
        take_log();
        bpf_link* l = bpf_program__attach_usdt(pr.prog, pid, path.c_str(), FT_USDT_PROVIDER,
                                               pr.name, nullptr);
        if (!l) {
          const int err = errno;
          failed = file.shown + (pid > 0 ? " pid " + std::to_string(pid) : "") + ": " +
                   reason_of(take_log(), err);
          continue;
        }
        objs.links.push_back(l);
        attached = true;
      }
      if (!attached)
        note("probes", point, "failed", failed);
      else
        note("probes", point, "attached",
             file.shown + (file.build_id.empty() ? "" : " (build-id " + file.build_id + ")") +
                 (file.copy_of.empty() ? ""
                                       : " (a copy of " + file.copy_of +
                                             ": probes are attached per file, so apart)") +
                 (opt.only_pids.empty() ? "" : " (the --pid processes only)"));
    }
  }
};

BpfSession::BpfSession() = default;
BpfSession::~BpfSession() = default;

size_t BpfSession::attached() const {
  size_t n = 0;
  for (const KernelAttach& a : attach_)
    if (a.state == "attached") ++n;
  return n;
}

bool BpfSession::attached(const std::string& point) const {
  return std::any_of(attach_.begin(), attach_.end(), [&point](const KernelAttach& a) {
    return a.point == point && a.state == "attached";
  });
}

bool BpfSession::start(const BpfOptions& opt, std::string* error) {
  attach_.clear();
  impl_ = std::make_unique<Impl>();
  Impl& im = *impl_;
  im.opt = opt;
  im.objs.attach = &attach_;
  libbpf_set_print(libbpf_log);
  if (geteuid() != 0) {
    *error = "needs root (it loads BPF programs and attaches to kernel tracepoints)";
    return false;
  }
  struct stat st;
  if (stat("/sys/kernel/btf/vmlinux", &st) != 0) {
    *error = "this kernel has no BTF (/sys/kernel/btf/vmlinux): the BPF programs cannot load";
    return false;
  }
  btf* vmlinux = btf__load_vmlinux_btf();
  const std::string tracefs = ensure_tracefs();

  // The scheduler's object first: it owns the shared maps the others reuse.
  BpfObjects& objs = im.objs;
  const int cpus = libbpf_num_possible_cpus();
  objs.ring_bytes = ring_bytes_for(cpus > 0 ? static_cast<unsigned>(cpus) : 1);
  if ((im.sched =
           objs.open("sched", ftskel_sched__open, ftskel_sched__load, ftskel_sched__destroy)))
    im.sched->rodata->ft_min_offcpu_ns = opt.min_offcpu_ns;
  if ((im.irq = objs.open("irq", ftskel_irq__open, ftskel_irq__load, ftskel_irq__destroy)))
    im.irq->rodata->ft_min_softirq_ns = opt.min_softirq_ns;
  objs.open("mem", ftskel_mem__open, ftskel_mem__load, ftskel_mem__destroy);
  if ((im.net = objs.open("net", ftskel_net__open, ftskel_net__load, ftskel_net__destroy)))
    im.net->rodata->ft_net_all = opt.net_all;
  im.cxi = objs.open("cxi", ftskel_cxi__open, ftskel_cxi__load, ftskel_cxi__destroy);
  // The USDT probes: per library file, below.
  im.probes =
      objs.open("probes", ftskel_probes__open, ftskel_probes__load, ftskel_probes__destroy, true);
  if (im.probes) {
    im.probes->rodata->ft_session_start_ns = opt.session_start_ns;
    im.probes->rodata->ft_usdt_rate = opt.usdt_rate;
    im.probes->rodata->ft_poll_rate = opt.poll_rate;
  }
  if (opt.uprobes.enabled) im.up.open(&objs, opt.uprobes, opt.only_pids);
  for (BpfObjects::Skel& k : objs.skels) objs.load(k, vmlinux);
  btf__free(vmlinux);

  for (BpfObjects::Skel& k : objs.skels) {
    if (!k.loaded || k.attached_apart) continue;
    bpf_program* p;
    bpf_object__for_each_program(p, k.obj) {
      if (!bpf_program__autoload(p)) continue;
      if (!tracefs.empty() &&
          std::string(bpf_program__section_name(p)).rfind("tracepoint/", 0) == 0) {
        im.note(k.name, bpf_program__section_name(p), "absent", tracefs);
        continue;
      }
      if (k.name == "cxi" && tracepoint_of(p).rfind("workqueue", 0) == 0) {
        if (opt.cxi_work.empty()) {
          im.note("cxi", bpf_program__section_name(p), "absent",
                  "the cxi driver is not loaded (no cxi work functions in /proc/kallsyms)");
          continue;
        }
      }
      objs.attach_program(k, p);
    }
    if (k.name == "cxi") {
      const int fd = bpf_map__fd(im.cxi->maps.cxi_work_funcs);
      for (size_t i = 0; i < opt.cxi_work.size(); ++i) {
        const __u64 addr = opt.cxi_work[i].addr;
        const __u32 cls = static_cast<__u32>(i);
        bpf_map_update_elem(fd, &addr, &cls, BPF_ANY);
      }
    }
  }
  if (!objs.loaded("probes")) im.probes = nullptr;
  if (!objs.loaded("sched")) im.sched = nullptr;
  im.proc_changes_on = im.sched && im.sched->bss && attached("tp_btf/sched_process_fork") &&
                       attached("tp_btf/sched_process_exec");
  im.proc_loads_on = attached("tracepoint/syscalls/sys_exit_mmap");
  im.proc_ends_on = attached("tp_btf/sched_process_exit");
  if (im.probes) {
    if (opt.usdt_libraries.empty())
      im.note("probes", "usdt:fabtrace:*", "absent", "no libfabtrace.so to attach the probes to");
    for (const std::string& lib : opt.usdt_libraries) {
      bool known = false;
      std::string why;
      if (const UsdtFile* f = im.usdt_files.add_own(lib, &known, &why))
        im.attach_usdt(*f);
      else if (!known)
        im.note("probes", "usdt:fabtrace:*", "failed", why);
    }
  }

  im.up.attach();

  const auto ev = objs.shared.find("events");
  if (ev == objs.shared.end()) {
    *error = "no BPF program could be loaded" +
             (attach_.empty() ? std::string() : ": " + attach_.front().detail);
    return false;
  }
  im.rb = ring_buffer__new(
      ev->second,
      [](void* ctx, void* data, size_t size) {
        auto* self = static_cast<Impl*>(ctx);
        if (self->sink) (*self->sink)(data, size);
        // A ring's worth drained: stop here (libbpf has consumed this record, and
        // leaves the rest for the next poll).
        self->taken += size;
        ++self->count;
        return self->ring_size && self->taken >= self->ring_size ? -EFBIG : 0;
      },
      &im, nullptr);
  if (!im.rb) {
    *error = "cannot open the ring buffer: " + std::string(std::strerror(errno));
    return false;
  }
  {
    bpf_map_info info{};
    __u32 len = sizeof(info);
    if (bpf_obj_get_info_by_fd(ev->second, &info, &len) == 0) im.ring_size = info.max_entries;
    im.epfd = ::epoll_create1(EPOLL_CLOEXEC);
    epoll_event e{};
    e.events = EPOLLIN | EPOLLET;
    if (im.epfd >= 0 && ::epoll_ctl(im.epfd, EPOLL_CTL_ADD, ev->second, &e) != 0) {
      ::close(im.epfd);
      im.epfd = -1;  // a timer, then
    }
  }
  if (im.probes) {
    const int fd = bpf_map__fd(im.probes->maps.live_events);
    im.live_rb = fd < 0 ? nullptr
                        : ring_buffer__new(
                              fd,
                              [](void* ctx, void* data, size_t size) {
                                auto* self = static_cast<Impl*>(ctx);
                                if (self->live_sink) (*self->live_sink)(data, size);
                                return 0;
                              },
                              &im, nullptr);
    if (im.live_rb) im.live_fd = fd;
  }
  if (attached() == 0) {
    *error = "no attach point could be attached";
    return false;
  }
  return true;
}

std::string BpfSession::attach_usdt_mapped(const std::string& proc_root, pid_t pid,
                                           const std::string& range, const std::string& path,
                                           uid_t uid) {
  if (!impl_ || !impl_->probes) return "";
  bool known = false;
  std::string why;
  const UsdtFile* f = impl_->usdt_files.add_mapped(proc_root, pid, range, path, uid, &known, &why);
  if (!f) return known ? "" : why;
  const size_t before = attach_.size();
  impl_->attach_usdt(*f);
  // The attach list's new lines: a probe that failed is said.
  for (size_t i = before; i < attach_.size(); ++i)
    if (attach_[i].state == "failed") return attach_[i].point + ": " + attach_[i].detail;
  return "";
}

void BpfSession::trace_process(pid_t pid, uint64_t since_ns) {
  if (!impl_ || !impl_->objs.shared.count("traced")) return;
  const __u32 key = static_cast<__u32>(pid);
  ft_proc v{};
  // Keep what the kernel side already knows (its since, the preload flag).
  if (bpf_map_lookup_elem(impl_->objs.shared["traced"], &key, &v) == 0) {
    v.flags |= FT_PROC_SCANNED;
  } else {
    v.flags = FT_PROC_SCANNED;
    v.since = since_ns;
  }
  bpf_map_update_elem(impl_->objs.shared["traced"], &key, &v, BPF_ANY);
}

void BpfSession::trace_connection(const ft_tuple& t, pid_t owner) {
  if (!impl_ || !impl_->objs.shared.count("traced_socks")) return;
  const __u32 v = static_cast<__u32>(owner);
  bpf_map_update_elem(impl_->objs.shared["traced_socks"], &t, &v, BPF_ANY);
}

void BpfSession::trace_listen_port(uint16_t port, pid_t owner) {
  if (!impl_ || !impl_->net) return;
  const __u32 v = static_cast<__u32>(owner);
  bpf_map_update_elem(bpf_map__fd(impl_->net->maps.traced_ports), &port, &v, BPF_ANY);
}

int BpfSession::poll(int timeout_ms, const std::function<void(const void*, size_t)>& on_record,
                     const std::function<void()>& on_drain) {
  if (!impl_ || !impl_->rb) return -1;
  impl_->last = {};
  // The programs submit without wakeups (see ft_submit) unless the ring is half
  // full: wait on its epoll for the timeout (a wakeup or a signal ends it
  // early), draining nothing there, then drain in one pass.
  // Edge-triggered: only a wakeup ends the wait early (level-triggered, data
  // that arrived since the last drain would end every wait at once).
  if (timeout_ms > 0) {
    epoll_event ev{};
    if (impl_->epfd >= 0)
      impl_->last.woken = ::epoll_wait(impl_->epfd, &ev, 1, timeout_ms) > 0;
    else
      usleep(static_cast<useconds_t>(timeout_ms) * 1000);
  }
  if (on_drain) on_drain();
  // One pass drains at most a ring's worth: libbpf's consume loops for as
  // long as records arrive, which under a flood is for ever.
  impl_->taken = impl_->count = 0;
  impl_->sink = &on_record;
  const int n = ring_buffer__consume(impl_->rb);
  impl_->sink = nullptr;
  impl_->last.bytes = impl_->taken;
  impl_->last.full = n == -EFBIG;
  if (impl_->last.full) return static_cast<int>(std::min<uint64_t>(impl_->count, INT_MAX));
  return n < 0 && n != -EINTR ? -1 : (n < 0 ? 0 : n);
}

bool BpfSession::record_header(const void* data, size_t size, ft_hdr* h) {
  if (size < sizeof(ft_hdr)) return false;
  std::memcpy(h, data, sizeof(*h));
  return h->size <= size && size - h->size < 8;
}

int BpfSession::live_fd() const { return impl_ ? impl_->live_fd : -1; }

int BpfSession::drain_live(const std::function<void(const void*, size_t)>& on_record) {
  if (!impl_ || !impl_->live_rb) return 0;
  impl_->live_sink = &on_record;
  const int n = ring_buffer__consume(impl_->live_rb);
  impl_->live_sink = nullptr;
  return n;
}

const BpfSession::PollTurn& BpfSession::last_poll() const {
  static const PollTurn none;
  return impl_ ? impl_->last : none;
}

uint64_t BpfSession::ring_bytes_for(unsigned cpus) {
  uint64_t want = static_cast<uint64_t>(cpus) * kRingBytesPerCpu, size = kMinRingBytes;
  while (size < want && size < kMaxRingBytes) size <<= 1;
  return size;
}

uint64_t BpfSession::ring_bytes() const { return impl_ ? impl_->ring_size : 0; }

void BpfSession::each_softirq_sum(
    const std::function<void(const ft_softirq_key&, const ft_softirq_sum&)>& on) const {
  if (!impl_ || !impl_->irq) return;
  const int fd = bpf_map__fd(impl_->irq->maps.softirq_sums);
  if (fd >= 0) each_entry<ft_softirq_key, ft_softirq_sum>(fd, on);
}

bool BpfSession::take_proc_changes(ProcChanges* out) {
  if (!impl_ || !impl_->proc_changes_on) return false;
  out->loads = impl_->proc_loads_on;
  out->ends = impl_->proc_ends_on;
  const int fd = bpf_map__fd(impl_->sched->maps.proc_changes);
  // The keys first, then their deletion: a change made meanwhile is either
  // among them (and the caller reads the process after this) or left for the
  // next call. Bounded by the map's size, in case it changes under the walk.
  std::vector<__u32> keys;
  const size_t most = bpf_map__max_entries(impl_->sched->maps.proc_changes);
  each_key<__u32>(fd, [&](__u32 k) {
    keys.push_back(k);
    return keys.size() < most;
  });
  for (const __u32 k : keys) {
    bpf_map_delete_elem(fd, &k);
    out->pids.insert(static_cast<pid_t>(k));
  }
  const uint64_t lost = __atomic_load_n(&impl_->sched->bss->proc_changes_lost, __ATOMIC_RELAXED);
  if (lost == impl_->proc_changes_lost_seen) return true;
  impl_->proc_changes_lost_seen = lost;
  return false;
}

KernelStats BpfSession::stats() const {
  KernelStats s;
  if (!impl_ || !impl_->objs.shared.count("counters")) return s;
  const int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return s;
  std::vector<__u64> v(static_cast<size_t>(ncpu));
  const int fd = impl_->objs.shared.at("counters");
  auto sum = [&](__u32 key) {
    __u64 t = 0;
    if (bpf_map_lookup_elem(fd, &key, v.data()) == 0)
      for (__u64 x : v) t += x;
    return t;
  };
  for (__u32 k = 1; k < FT_EV_KINDS; ++k) {
    s.emitted[k] = sum(k);
    s.lost[k] = sum(FT_EV_KINDS + k);
  }
  s.untraced_retrans = sum(FT_CNT_UNTRACED_RETRANS);
  s.untraced_drops = sum(FT_CNT_UNTRACED_DROP);
  s.threads_full = sum(FT_CNT_THREADS_FULL);
  s.threads_over_share = sum(FT_CNT_THREADS_OVER_SHARE);
  s.in_without_out = sum(FT_CNT_IN_WITHOUT_OUT);
  s.in_unseen = sum(FT_CNT_IN_UNSEEN);
  s.usdt_over_budget = sum(FT_CNT_USDT_OVER_BUDGET);
  s.usdt_malformed = sum(FT_CNT_USDT_MALFORMED);
  // Per process: USDT records over budget or malformed, uprobe rows over quota.
  if (impl_->probes)
    each_entry<__u32, ft_usdt_budget>(
        bpf_map__fd(impl_->probes->maps.usdt_budget), [&s](__u32 pid, const ft_usdt_budget& b) {
          if ((b.over_budget || b.malformed) && s.per_process.size() < kMaxStatsProcesses) {
            s.per_process[pid].over_budget = b.over_budget;
            s.per_process[pid].malformed = b.malformed;
          }
        });
  if (impl_->objs.shared.count("thread_share"))
    each_entry<__u32, ft_thread_share>(impl_->objs.shared.at("thread_share"),
                                       [&s](__u32 pid, const ft_thread_share& t) {
                                         if (t.over && s.per_process.size() < kMaxStatsProcesses)
                                           s.per_process[pid].threads_over_share = t.over;
                                       });
  impl_->up.add_quota_stats(&s);
  for (const BpfObjects::Skel& k : impl_->objs.skels) {
    if (!k.loaded) continue;
    bpf_program* p;
    bpf_object__for_each_program(p, k.obj) {
      const int pfd = bpf_program__fd(p);
      if (pfd < 0) continue;
      bpf_prog_info info{};
      __u32 len = sizeof(info);
      if (bpf_obj_get_info_by_fd(pfd, &info, &len) == 0)
        s.recursion_misses += info.recursion_misses;
    }
  }
  return s;
}

const UprobeSession& BpfSession::uprobes() const {
  static const UprobeSession none{};
  return impl_ ? impl_->up : none;
}

std::vector<KernelSymbol> BpfSession::drop_reason_names() {
  std::vector<KernelSymbol> out;
  btf* b = btf__load_vmlinux_btf();
  if (!b) return out;
  const __s32 id = btf__find_by_name_kind(b, "skb_drop_reason", BTF_KIND_ENUM);
  if (id > 0) {
    const btf_type* t = btf__type_by_id(b, static_cast<__u32>(id));
    const struct btf_enum* e = btf_enum(t);
    for (__u16 i = 0; i < btf_vlen(t); ++i) {
      std::string n = btf__name_by_offset(b, e[i].name_off);
      const std::string pre = "SKB_DROP_REASON_";
      if (n.rfind(pre, 0) == 0) n = n.substr(pre.size());
      out.push_back({static_cast<uint64_t>(static_cast<__u32>(e[i].val)), n, "drop_reason"});
    }
  }
  btf__free(b);
  return out;
}

std::vector<KernelAttach> BpfSession::probe_all(const BpfOptions& opt, std::string* error) {
  BpfSession s;
  BpfOptions o = opt;
  o.polls = true;
  s.start(o, error);
  return s.attach_list();  // destroyed (detached) on return
}

}  // namespace fabtrace
