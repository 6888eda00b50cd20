#include "userspace/record/bpf_session.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>
#include <tuple>

#include "common/addr_format.h"
#include "common/op_kinds.h"
#include "common/uprobe_stats.h"
#include "cxi.skel.h"
#include "irq.skel.h"
#include "mem.skel.h"
#include "net.skel.h"
#include "probes.skel.h"
#include "sched.skel.h"
#include "uprobe_ops.h"
#include "uprobe_ops.skel.h"
#include "userspace/record/uprobe_multi.h"

namespace fabtrace {

namespace {

// libbpf's messages: kept (the last few lines) to explain a refusal in one line,
// printed only with FABTRACE_BPF_DEBUG=1.
std::mutex g_log_mu;
std::string g_log;

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

// The most telling line of libbpf's log: the verifier's or the kernel's words.
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

// Which tracepoint a tp_btf/raw_tp program attaches to ("" for others).
std::string tracepoint_of(const bpf_program* p) {
  const std::string sec = bpf_program__section_name(p);
  for (const char* pre : {"tp_btf/", "raw_tp/"})
    if (sec.rfind(pre, 0) == 0) return sec.substr(std::strlen(pre));
  return "";
}

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

struct Skel {
  std::string name;  // "sched", ...
  bpf_object* obj = nullptr;
  std::function<int()> load;
  std::function<void()> destroy;
  bool loaded = false;
};

// Every (key, value) of a BPF hash map.
template <typename K, typename V, typename F>
void each_entry(int fd, F&& on) {
  K at{}, next{};
  bool first = true;
  while (bpf_map_get_next_key(fd, first ? nullptr : &at, &next) == 0) {
    first = false;
    at = next;
    V v{};
    if (bpf_map_lookup_elem(fd, &at, &v) == 0) on(at, v);
  }
}

// The maps every object shares; the first object that loads owns them.
const char* const kSharedMaps[] = {"traced", "threads",  "thread_share", "traced_socks",
                                   "events", "counters", "run_log"};

}  // namespace

struct BpfSession::Impl {
  BpfOptions opt;
  std::vector<Skel> skels;
  ftskel_probes* probes = nullptr;
  ftskel_net* net = nullptr;
  ftskel_cxi* cxi = nullptr;
  ftskel_uprobe_ops* up = nullptr;
  std::vector<OpSite> up_sites;       // as attached: the index is the cookie's site
  std::vector<uint64_t> up_offsets;   // each site's probed file offset (probe_offset: read once)
  std::map<std::string, int> shared;  // map name -> fd, from the first loaded object
  std::vector<bpf_link*> links;
  bool up_multi = false;         // --uprobes through uprobe_multi links (uprobe_multi.h)
  std::vector<int> multi_links;  // their fds
  UsdtLibraries usdt_files{kMaxUsdtFiles, kMaxUsdtFilesPerUser};
  // libbpf's USDT spec ids (one per distinct argument spec of a probe, per
  // attach; its __bpf_usdt_specs map's size): never asked for more than it
  // has, whose error path in libbpf 1.1 frees twice.
  size_t usdt_specs_used = 0;
  ring_buffer* rb = nullptr;
  const std::function<void(const void*, size_t)>* sink = nullptr;
  std::vector<KernelAttach>* attach = nullptr;

  ~Impl() {
    if (rb) ring_buffer__free(rb);
    // Each release waits for the kernel's grace periods (tens of ms for a
    // uprobe_multi link, about 100 for a perf-event uprobe such as a USDT
    // probe's): the links are closed on a thread of their own meanwhile.
    auto close_multi = [fds = multi_links] {
      for (int fd : fds) close(fd);
    };
    std::thread closer;
    try {
      if (!multi_links.empty()) closer = std::thread(close_multi);
    } catch (const std::system_error&) {
      close_multi();  // no thread to be had: one after the other
    }
    for (bpf_link* l : links) bpf_link__destroy(l);
    if (closer.joinable()) closer.join();
    for (Skel& s : skels)
      if (s.destroy) s.destroy();
  }

  void note(const std::string& program, const std::string& point, const std::string& state,
            const std::string& detail) {
    attach->push_back({program, point, state, detail});
  }

  template <typename S>
  S* open(const char* name, S* (*open_fn)(), int (*load_fn)(S*), void (*destroy_fn)(S*)) {
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
    skels.push_back(std::move(k));
    return s;
  }

  // Loads one object: shares the maps, leaves out programs whose tracepoint
  // this kernel does not have (listed as absent).
  void load(Skel& k, const btf* vmlinux) {
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

  void attach_program(const Skel& k, bpf_program* p) {
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

  // --uprobes, before the load: the sites to attach (their index is the
  // cookie's site) and what the programs need to learn the CQs and endpoints
  // of processes started before the session (the providers' layouts, each
  // site's, and each CQ read site's probed offset in its layout's library).
  void configure_uprobes() {
    choose_uprobe_links();
    for (const OpSite& site : opt.uprobe_sites) {
      if (up_sites.size() >= FT_UP_MAX_SITES) break;
      if (site.role < FT_UP_ROLE_OP || site.role > FT_UP_ROLE_LAST) continue;
      const size_t index = up_sites.size();
      const uint64_t probed = probe_offset(site.path, site.offset);
      if (site.layout && site.layout <= opt.uprobe_layouts.size() &&
          site.layout <= FT_UP_MAX_LAYOUTS) {
        up->rodata->ft_site_layout[index] = static_cast<__u8>(site.layout);
        if (site.role == FT_UP_ROLE_CQ_READ &&
            site.path == opt.uprobe_layouts[site.layout - 1].path)
          up->rodata->ft_site_off[index] = probed;
      }
      if (site.role == FT_UP_ROLE_AV_INSERT || site.role == FT_UP_ROLE_CONNECT)
        up->rodata->ft_site_addrlen[index] = site.addrlen;
      if (site.role == FT_UP_ROLE_CONNECT)
        up->rodata->ft_site_addr_format[index] = site.addr_format;
      up_sites.push_back(site);
      up_offsets.push_back(probed);
    }
    // The statistics rows: a per-CPU row of ft_up_stats each, so as many as
    // fit kStatsBudget on this machine's CPUs (all of them on a small one).
    constexpr uint64_t kStatsBudget = 256ULL << 20;
    const int ncpu = libbpf_num_possible_cpus();
    const uint64_t fit =
        kStatsBudget / (sizeof(ft_up_stats) * static_cast<uint64_t>(ncpu > 0 ? ncpu : 1));
    const auto rows = static_cast<__u32>(fit < FT_UP_MAX_STATS ? fit : FT_UP_MAX_STATS);
    bpf_map__set_max_entries(up->maps.up_stats, rows);
    // One process's share: others keep their rows whatever one process does.
    up->rodata->ft_up_rows_per_proc = opt.uprobe_rows_per_process
                                          ? opt.uprobe_rows_per_process
                                          : std::max<__u32>(1, rows / BpfOptions::kUprobeRowShares);
    for (size_t i = 0; i < opt.uprobe_layouts.size() && i < FT_UP_MAX_LAYOUTS; ++i) {
      const UprobeLayout& l = opt.uprobe_layouts[i];
      auto& r = up->rodata->ft_layouts[i];
      r.cq_fmt_kind = l.cq_kind;
      r.cq_fmt_off = l.cq_fmt_off;
      for (int f = 0; f < 5; ++f) r.fmt_fn[f] = l.fmt_fn[f];
      for (const int side : {FT_UP_TX, FT_UP_RX}) {
        r.ep_cq_hops[side] = l.ep_hops[side];
        for (int h = 0; h <= FT_UP_EP_HOPS_MAX; ++h) r.ep_cq_path[side][h] = l.ep_path[side][h];
      }
    }
  }

  // uprobe_multi links where the kernel makes them (and --uprobe-perf-events
  // does not say otherwise): the uprobe programs are then loaded with that
  // attach type, which perf-event uprobes do not take, so this is decided
  // once, before the load.
  void choose_uprobe_links() {
    std::string why = "--uprobe-perf-events";
    up_multi = !opt.uprobe_perf_events && uprobe_multi_usable(!opt.only_pids.empty(), &why);
    if (!up_multi) {
      note("uprobe_ops", "uprobe_multi", "absent",
           why + ": one perf-event uprobe per probe (each detached on its own at exit)");
      return;
    }
    bpf_program* p;
    bpf_object__for_each_program(p, up->obj) {
      const std::string sec = bpf_program__section_name(p);
      if (sec.rfind("uprobe", 0) == 0 || sec.rfind("uretprobe", 0) == 0)
        bpf_program__set_expected_attach_type(p,
                                              static_cast<bpf_attach_type>(kBpfTraceUprobeMulti));
    }
  }

  // One site's probes: the programs on its function, return probe first.
  struct SiteProg {
    bpf_program* prog;
    bool ret;
  };
  std::vector<SiteProg> site_programs(const OpSite& site) const {
    // A function's return probe is attached before its entry probe: a
    // uretprobe takes hold at a call's entry, so every call whose entry is
    // seen then has its return seen too (the other way round, a call that
    // returns in between leaves its entry's record behind).
    switch (site.role) {
      case FT_UP_ROLE_OP:
        // Injects too: their return tells accepted from refused calls.
        return {{up->progs.ft_up_op_ret, true}, {up->progs.ft_up_op, false}};
      case FT_UP_ROLE_EP_BIND:
        return {{up->progs.ft_up_ep_bind, false}};
      case FT_UP_ROLE_CQ_READ:
        return {{up->progs.ft_up_cq_read_ret, true}, {up->progs.ft_up_cq_read, false}};
      case FT_UP_ROLE_AV_INSERT:
        return {{up->progs.ft_up_av_insert_ret, true}, {up->progs.ft_up_av_insert, false}};
      case FT_UP_ROLE_GETNAME:
        return {{up->progs.ft_up_getname_ret, true}, {up->progs.ft_up_getname, false}};
      case FT_UP_ROLE_EP_OPEN:
        return {{up->progs.ft_up_ep_open_ret, true}, {up->progs.ft_up_ep_open, false}};
      case FT_UP_ROLE_CONNECT:
        return {{up->progs.ft_up_connect_ret, true}, {up->progs.ft_up_connect, false}};
      default:
        return {{up->progs.ft_up_cq_open_ret, true}, {up->progs.ft_up_cq_open, false}};
    }
  }

  uint64_t site_cookie(uint32_t index) const {
    const OpSite& site = up_sites[index];
    const bool rx = site.role == FT_UP_ROLE_OP &&
                    site.op_kind < static_cast<uint32_t>(kOpKindCount) &&
                    op_is_recv(static_cast<OpKind>(site.op_kind));
    // A CQ read's class says whether it blocks (fi_cq_sread*: its poll is
    // stamped at its entry, as the preload stamps it).
    const bool blocking =
        site.role == FT_UP_ROLE_CQ_READ && (site.op == "sread" || site.op == "sreadfrom");
    return FT_UP_COOKIE(index, site.role, site.op_kind, site.ctx, site.len, rx || blocking ? 1 : 0,
                        site.peer);
  }

  std::string site_point(uint32_t index) const {
    const OpSite& site = up_sites[index];
    return "uprobe:" + site.path + hex_offset(up_offsets[index]);
  }

  // --uprobes: every site on its library file, for all processes (pid -1) or
  // for each of only_pids, by file offset (past an endbr64: see probe_offset).
  void attach_uprobes() {
    if (!up) return;
    std::vector<bool> ok(up_sites.size(), true);
    if (up_multi)
      attach_uprobe_links(&ok);
    else
      attach_uprobe_events(&ok);
    for (uint32_t index = 0; index < up_sites.size(); ++index)
      if (ok[index]) note("uprobe_ops", site_point(index), "attached", up_sites[index].what());
    if (up_sites.empty())
      note("uprobe_ops", "uprobe:*", "absent", "no provider function found to probe");
    attach_connect_sockets();
    // Every probe in place: they start together (uprobe_ops.bpf.c).
    __atomic_store_n(&up->bss->ft_up_armed, 1u, __ATOMIC_RELEASE);
  }

  void site_failed(uint32_t index, pid_t pid, bool ret, const std::string& why,
                   std::vector<bool>* ok) {
    note("uprobe_ops",
         site_point(index) + (pid > 0 ? " pid " + std::to_string(pid) : "") +
             (ret ? " (return)" : ""),
         "failed", up_sites[index].what() + ": " + why);
    (*ok)[index] = false;
  }

  // One perf-event uprobe per probe (kernels before 6.6).
  void attach_uprobe_events(std::vector<bool>* ok) {
    for (uint32_t index = 0; index < up_sites.size(); ++index) {
      const OpSite& site = up_sites[index];
      const uint64_t off = up_offsets[index];
      for (const pid_t pid : attach_pids())
        for (const SiteProg& p : site_programs(site)) {
          LIBBPF_OPTS(bpf_uprobe_opts, uo);
          uo.retprobe = p.ret;
          uo.bpf_cookie = site_cookie(index);
          take_log();
          bpf_link* l = bpf_program__attach_uprobe_opts(p.prog, pid, site.path.c_str(),
                                                        static_cast<size_t>(off), &uo);
          if (!l) {
            site_failed(index, pid, p.ret, reason_of(take_log(), errno), ok);
            continue;
          }
          links.push_back(l);
        }
    }
  }

  // One uprobe_multi link per (program, library file, process), return
  // programs' links before entry programs' (as site_programs orders them per
  // site). A link the kernel refuses is retried site by site, so that one bad
  // offset costs its own site only.
  void attach_uprobe_links(std::vector<bool>* ok) {
    struct Group {
      std::vector<uint32_t> sites;
      std::vector<uint64_t> offsets, cookies;
    };
    // (return first, program, path) -> its sites, in site order.
    std::map<std::tuple<bool, bpf_program*, std::string>, Group> groups;
    for (uint32_t index = 0; index < up_sites.size(); ++index) {
      const OpSite& site = up_sites[index];
      for (const SiteProg& p : site_programs(site)) {
        Group& g = groups[{!p.ret, p.prog, site.path}];
        g.sites.push_back(index);
        g.offsets.push_back(up_offsets[index]);
        g.cookies.push_back(site_cookie(index));
      }
    }
    size_t made = 0, placed = 0;
    for (const pid_t pid : attach_pids())
      for (const auto& [key, g] : groups) {
        const bool ret = !std::get<0>(key);
        const int prog_fd = bpf_program__fd(std::get<1>(key));
        const std::string& path = std::get<2>(key);
        const int fd = uprobe_multi_attach(prog_fd, path, g.offsets, g.cookies, ret, pid);
        if (fd >= 0) {
          multi_links.push_back(fd);
          ++made;
          placed += g.sites.size();
          continue;
        }
        for (size_t i = 0; i < g.sites.size(); ++i) {
          const int one =
              uprobe_multi_attach(prog_fd, path, {g.offsets[i]}, {g.cookies[i]}, ret, pid);
          if (one < 0) {
            site_failed(g.sites[i], pid, ret, std::strerror(-one), ok);
            continue;
          }
          multi_links.push_back(one);
          ++made;
          ++placed;
        }
      }
    if (made)
      note("uprobe_ops", "uprobe_multi", "attached",
           std::to_string(placed) + " probes in " + std::to_string(made) +
               " links (one per program, library file and process; detached together)");
  }

  // The connecting side's own address (uprobe_ops.bpf.c, ft_up_sk_state):
  // the TCP socket a probed connect moves to SYN_SENT. Only with a connect
  // site; the tracepoint fires node-wide, and returns at once outside one.
  void attach_connect_sockets() {
    bool connect = false;
    for (const OpSite& s : up_sites) connect = connect || s.role == FT_UP_ROLE_CONNECT;
    bpf_program* p = up->progs.ft_up_sk_state;
    if (!connect || !bpf_program__autoload(p)) return;
    take_log();
    bpf_link* l = bpf_program__attach(p);
    if (!l) {
      note("uprobe_ops", bpf_program__section_name(p), "failed", reason_of(take_log(), errno));
      return;
    }
    links.push_back(l);
    note("uprobe_ops", bpf_program__section_name(p), "attached",
         "the connecting side's own address");
  }

  // The pids a probe is attached for: every process (-1), or --only-pids'.
  std::vector<pid_t> attach_pids() const {
    return opt.only_pids.empty() ? std::vector<pid_t>{-1} : opt.only_pids;
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
                      {probes->progs.ft_poll_enter, "poll_enter", true},
                      {probes->progs.ft_poll_exit, "poll_exit", true}};
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
      for (const pid_t pid : attach_pids()) {
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
        links.push_back(l);
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

bool BpfSession::start(const BpfOptions& opt, std::string* error) {
  attach_.clear();
  impl_ = std::make_unique<Impl>();
  Impl& im = *impl_;
  im.opt = opt;
  im.attach = &attach_;
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
  if (auto* s = im.open("sched", ftskel_sched__open, ftskel_sched__load, ftskel_sched__destroy))
    s->rodata->ft_min_offcpu_ns = opt.min_offcpu_ns;
  im.open("irq", ftskel_irq__open, ftskel_irq__load, ftskel_irq__destroy);
  im.open("mem", ftskel_mem__open, ftskel_mem__load, ftskel_mem__destroy);
  if ((im.net = im.open("net", ftskel_net__open, ftskel_net__load, ftskel_net__destroy)))
    im.net->rodata->ft_net_all = opt.net_all;
  im.cxi = im.open("cxi", ftskel_cxi__open, ftskel_cxi__load, ftskel_cxi__destroy);
  im.probes = im.open("probes", ftskel_probes__open, ftskel_probes__load, ftskel_probes__destroy);
  if (im.probes) {
    im.probes->rodata->ft_session_start_ns = opt.session_start_ns;
    im.probes->rodata->ft_usdt_rate = opt.usdt_rate;
    im.probes->rodata->ft_poll_rate = opt.poll_rate;
  }
  if (opt.uprobes && (im.up = im.open("uprobe_ops", ftskel_uprobe_ops__open,
                                      ftskel_uprobe_ops__load, ftskel_uprobe_ops__destroy)))
    im.configure_uprobes();
  for (Skel& k : im.skels) im.load(k, vmlinux);
  btf__free(vmlinux);

  for (Skel& k : im.skels) {
    if (!k.loaded) continue;
    if (k.name == "probes" || k.name == "uprobe_ops") continue;  // per library file, below
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
      im.attach_program(k, p);
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
  bool probes_loaded = false;
  for (const Skel& k : im.skels)
    if (k.name == "probes" && k.loaded) probes_loaded = true;
  if (!probes_loaded) im.probes = nullptr;
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

  bool up_loaded = false;
  for (const Skel& k : im.skels)
    if (k.name == "uprobe_ops" && k.loaded) up_loaded = true;
  if (!up_loaded) im.up = nullptr;
  im.attach_uprobes();

  const auto ev = im.shared.find("events");
  if (ev == im.shared.end()) {
    *error = "no BPF program could be loaded" +
             (attach_.empty() ? std::string() : ": " + attach_.front().detail);
    return false;
  }
  im.rb = ring_buffer__new(
      ev->second,
      [](void* ctx, void* data, size_t size) {
        auto* self = static_cast<Impl*>(ctx);
        if (self->sink) (*self->sink)(data, size);
        return 0;
      },
      &im, nullptr);
  if (!im.rb) {
    *error = "cannot open the ring buffer: " + std::string(std::strerror(errno));
    return false;
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
  if (!impl_ || !impl_->shared.count("traced")) return;
  const __u32 key = static_cast<__u32>(pid);
  ft_proc v{};
  // Keep what the kernel side already knows (its since, the preload flag).
  if (bpf_map_lookup_elem(impl_->shared["traced"], &key, &v) == 0) {
    v.flags |= FT_PROC_SCANNED;
  } else {
    v.flags = FT_PROC_SCANNED;
    v.since = since_ns;
  }
  bpf_map_update_elem(impl_->shared["traced"], &key, &v, BPF_ANY);
}

void BpfSession::trace_connection(const ft_tuple& t, pid_t owner) {
  if (!impl_ || !impl_->shared.count("traced_socks")) return;
  const __u32 v = static_cast<__u32>(owner);
  bpf_map_update_elem(impl_->shared["traced_socks"], &t, &v, BPF_ANY);
}

void BpfSession::trace_listen_port(uint16_t port, pid_t owner) {
  if (!impl_ || !impl_->net) return;
  const __u32 v = static_cast<__u32>(owner);
  bpf_map_update_elem(bpf_map__fd(impl_->net->maps.traced_ports), &port, &v, BPF_ANY);
}

int BpfSession::poll(int timeout_ms, const std::function<void(const void*, size_t)>& on_record) {
  if (!impl_ || !impl_->rb) return -1;
  impl_->sink = &on_record;
  // The programs submit without wakeups (see ft_submit): wait, then drain.
  if (timeout_ms > 0) usleep(static_cast<useconds_t>(timeout_ms) * 1000);
  const int n = ring_buffer__consume(impl_->rb);
  impl_->sink = nullptr;
  return n < 0 && n != -EINTR ? -1 : (n < 0 ? 0 : n);
}

KernelStats BpfSession::stats() const {
  KernelStats s;
  if (!impl_ || !impl_->shared.count("counters")) return s;
  const int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return s;
  std::vector<__u64> v(static_cast<size_t>(ncpu));
  const int fd = impl_->shared.at("counters");
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
  if (impl_->shared.count("thread_share"))
    each_entry<__u32, ft_thread_share>(impl_->shared.at("thread_share"),
                                       [&s](__u32 pid, const ft_thread_share& t) {
                                         if (t.over && s.per_process.size() < kMaxStatsProcesses)
                                           s.per_process[pid].threads_over_share = t.over;
                                       });
  if (impl_->up)
    each_entry<__u32, ft_up_quota>(
        bpf_map__fd(impl_->up->maps.up_quota), [&s](__u32 pid, const ft_up_quota& q) {
          if ((q.over || q.objs_over || q.inflight_over) &&
              s.per_process.size() < kMaxStatsProcesses) {
            s.per_process[pid].uprobe_rows_over_quota = q.over;
            s.per_process[pid].uprobe_objects_over_quota = q.objs_over;
            s.per_process[pid].uprobe_inflight_over_quota = q.inflight_over;
          }
        });
  for (const Skel& k : impl_->skels) {
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

const std::vector<OpSite>& BpfSession::uprobe_sites() const {
  static const std::vector<OpSite> none;
  return impl_ ? impl_->up_sites : none;
}

std::vector<uint64_t> BpfSession::uprobe_site_hits() const {
  std::vector<uint64_t> hits;
  if (!impl_ || !impl_->up) return hits;
  const int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return hits;
  std::vector<__u64> v(static_cast<size_t>(ncpu));
  const int fd = bpf_map__fd(impl_->up->maps.up_hits);
  for (__u32 i = 0; i < impl_->up_sites.size(); ++i) {
    __u64 t = 0;
    if (bpf_map_lookup_elem(fd, &i, v.data()) == 0)
      for (__u64 x : v) t += x;
    hits.push_back(t);
  }
  return hits;
}

std::vector<UprobeRow> BpfSession::uprobe_rows() const {
  std::vector<UprobeRow> rows;
  if (!impl_ || !impl_->up) return rows;
  const int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return rows;
  // By (pid, op, endpoint, peer, size class, sized as posted).
  std::map<std::tuple<uint32_t, uint32_t, uint64_t, uint64_t, uint32_t, bool>, UprobeRow> by;
  auto row = [&by](uint32_t pid, uint32_t op, uint64_t ep, uint64_t peer, uint32_t size_class,
                   bool posted) -> UprobeRow& {
    UprobeRow& r = by[{pid, op, ep, peer, size_class, posted}];
    r.pid = pid;
    r.op = op;
    r.ep = ep;
    r.peer = peer;
    r.size_class = size_class;
    r.posted = posted;
    return r;
  };
  // The statistics, summed over CPUs.
  const int sfd = bpf_map__fd(impl_->up->maps.up_stats);
  std::vector<ft_up_stats> v(static_cast<size_t>(ncpu));
  ft_up_stat_key key{}, next{};
  bool first = true;
  while (bpf_map_get_next_key(sfd, first ? nullptr : &key, &next) == 0) {
    first = false;
    key = next;
    if (bpf_map_lookup_elem(sfd, &key, v.data()) != 0) continue;
    UprobeRow& r = row(key.tgid, key.op, key.ep, key.peer, key.size_class, key.posted != 0);
    for (const ft_up_stats& c : v) add_uprobe_stats(&r.s, c);
  }
  // Ops still waiting for their completion (by context, and by order).
  auto count_pending = [&row](const auto& k, const ft_up_pending& p) {
    UprobeRow& r = row(k.tgid, p.op, p.ep, p.peer, ft_up_size_class(p.bytes), p.rx != 0);
    ++r.pending;
    r.pending_bytes += p.bytes;
  };
  each_entry<ft_up_key, ft_up_pending>(bpf_map__fd(impl_->up->maps.up_pending), count_pending);
  each_entry<ft_up_dup_key, ft_up_pending>(bpf_map__fd(impl_->up->maps.up_dup), count_pending);
  each_entry<ft_up_seq_key, ft_up_pending>(bpf_map__fd(impl_->up->maps.up_seq_pending),
                                           count_pending);
  for (auto& kv : by) rows.push_back(kv.second);
  return rows;
}

std::vector<UprobeCq> BpfSession::uprobe_cqs() const {
  std::vector<UprobeCq> out;
  if (!impl_ || !impl_->up) return out;
  each_entry<ft_up_key, ft_up_cq>(bpf_map__fd(impl_->up->maps.up_cqs),
                                  [&out](const ft_up_key& k, const ft_up_cq& c) {
                                    if (!c.polls) return;
                                    UprobeCq q;
                                    q.pid = k.tgid;
                                    q.cq = k.ptr;
                                    q.opened = c.opened;
                                    q.polls = c.polls;
                                    for (int i = 0; i < FT_UP_GAP_CLASSES; ++i)
                                      q.gaps[i] = c.gaps[i];
                                    q.max_gap_ns = c.max_gap;
                                    q.max_gap_end = c.max_gap_end;
                                    out.push_back(q);
                                  });
  return out;
}

UprobeNames BpfSession::uprobe_names() const {
  UprobeNames n;
  if (!impl_ || !impl_->up) return n;
  const std::vector<OpSite>& sites = impl_->up_sites;
  auto addr_of = [&sites](const ft_up_addr& a) {
    UprobeAddr u;
    const __u32 len = a.len < FT_UP_ADDR_MAX ? a.len : FT_UP_ADDR_MAX;
    u.bytes.assign(reinterpret_cast<const char*>(a.bytes), len);
    if (a.site < sites.size()) {
      u.addr_format = sites[a.site].addr_format;
      u.straddr_form = sites[a.site].straddr_form;
      u.passive = sites[a.site].table == "pep";
    }
    return u;
  };
  each_entry<ft_up_key, ft_up_addr>(bpf_map__fd(impl_->up->maps.up_ep_names),
                                    [&](const ft_up_key& k, const ft_up_addr& a) {
                                      n.ep_names[{k.tgid, k.ptr}] = addr_of(a);
                                    });
  // Connected endpoints: their addresses in the format their info gave.
  auto conn_addr = [](const ft_up_conn& c, const __u8* bytes, __u32 len) {
    UprobeAddr u;
    u.bytes.assign(reinterpret_cast<const char*>(bytes),
                   len < FT_UP_ADDR_MAX ? len : FT_UP_ADDR_MAX);
    u.addr_format = c.addr_format;
    u.straddr_form = kStraddrPlain;
    return u;
  };
  each_entry<ft_up_key, ft_up_conn>(
      bpf_map__fd(impl_->up->maps.up_ep_conns), [&](const ft_up_key& k, const ft_up_conn& c) {
        n.ep_conns[{k.tgid, k.ptr}] = {conn_addr(c, c.peer, c.peer_len),
                                       conn_addr(c, c.local, c.local_len)};
      });
  each_entry<ft_up_key, __u64>(bpf_map__fd(impl_->up->maps.up_ep_av),
                               [&](const ft_up_key& k, const __u64& av) {
                                 n.ep_av[{k.tgid, k.ptr}] = av;
                               });
  each_entry<ft_up_av_key, ft_up_addr>(bpf_map__fd(impl_->up->maps.up_av_addrs),
                                       [&](const ft_up_av_key& k, const ft_up_addr& a) {
                                         n.av_addrs[{k.tgid, k.av, k.fi_addr}] = addr_of(a);
                                       });
  return n;
}

std::vector<uint64_t> BpfSession::uprobe_lost() const {
  std::vector<uint64_t> lost(FT_UP_LOST_KINDS, 0);
  if (!impl_ || !impl_->up) return lost;
  const int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return lost;
  std::vector<__u64> v(static_cast<size_t>(ncpu));
  const int fd = bpf_map__fd(impl_->up->maps.up_lost);
  for (__u32 i = 0; i < FT_UP_LOST_KINDS; ++i)
    if (bpf_map_lookup_elem(fd, &i, v.data()) == 0)
      for (__u64 x : v) lost[i] += x;
  return lost;
}

uint32_t BpfSession::uprobe_max_rows() const {
  return impl_ && impl_->up ? bpf_map__max_entries(impl_->up->maps.up_stats) : 0;
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
