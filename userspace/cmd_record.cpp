// fabtrace record: the privileged node-wide session (one per node, as root).
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/comma_list.h"
#include "common/env.h"
#include "userspace/commands.h"
#include "userspace/launch.h"

#if FABTRACE_HAVE_BPF
#include "bpf/uprobe_ops.h"
#include "common/uprobe_stats.h"
#include "userspace/record/collector.h"
#endif

namespace fabtrace {

namespace {

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

void usage(std::FILE* f) {
  std::fprintf(
      f,
      "usage: fabtrace record [-o DIR] [--duration S] [--pid PID]... [--polls] [--net-all]\n"
      "                       [--min-offcpu-us N] [--no-preload] [--uprobes]\n"
      "                       [--uprobe-providers P,...] [--symbols FILE] [--uprobe-by-name]\n"
      "                       [--uprobe-perf-events] [--usdt-rate N] [--max-log-mb N] [--list]\n"
      "                       [-- CMD ARGS...]\n"
      "  As root, once per node. Loads the BPF programs and writes what the kernel saw\n"
      "  (off-CPU intervals and who ran instead, IRQs, page faults, TCP retransmits and\n"
      "  drops, cxi driver events, and the cause of every stall and slow op the\n"
      "  preload reports) to DIR/fabtrace_kernel.<host>.p<pid>.klog, beside the ranks'\n"
      "  outputs. Traces every process that maps libfabtrace.so or libfabric,\n"
      "  including ones started later.\n"
      "  -- CMD     run CMD with the preload (and FABTRACE_DIR=DIR), stop when it exits\n"
      "  --duration S   stop after S seconds (otherwise at SIGINT/SIGTERM or CMD's exit)\n"
      "  --pid PID      also trace PID (even without libfabric); repeatable\n"
      "  --only-pids    trace only the --pid processes (no discovery)\n"
      "  --polls        time every CQ poll in the kernel too (costs about 1 us per poll)\n"
      "  --net-all      record retransmits and drops of every socket, not only traced ones\n"
      "  --min-offcpu-us N  log off-CPU intervals from N us (shorter ones still count\n"
      "                 in the stall breakdowns); default 0\n"
      "  --no-preload   run CMD without the preload (kernel-level tracing only)\n"
      "  --uprobes      pair ops with completions in the kernel, with uprobes on the\n"
      "                 providers' op-table functions, for processes without the\n"
      "                 preload (every process mapping libfabric.so.1, or only the\n"
      "                 --pid ones with --only-pids; running ones too); costs a trap\n"
      "                 per op and two per CQ read; writes their per-rank reports\n"
      "  --uprobe-providers P,...  the providers whose functions are probed\n"
      "                 (default tcp;ofi_rxm,shm; also tested: udp;ofi_rxd, sockets,\n"
      "                 tcp; never a utility provider with its core, e.g. tcp;ofi_rxm,tcp)\n"
      "  --symbols FILE the libfabric's symbol table (the unstripped library or its\n"
      "                 debug file, of the same build-id): the probed functions are\n"
      "                 named, and a provider the helper cannot open is attached by\n"
      "                 name (without it: the library's own, or its debug file by\n"
      "                 build-id under /usr/lib/debug, where there is one)\n"
      "  --uprobe-by-name  attach every provider by name through the symbols (the op\n"
      "                 tables only check them)\n"
      "  --uprobe-perf-events  one perf-event uprobe per probe, as on kernels before\n"
      "                 6.6, instead of one uprobe_multi link per program and file\n"
      "                 (those detach together at exit; perf events one by one)\n"
      "  --usdt-rate N  records each process's probes may add per second (default 1000;\n"
      "                 --polls' poll records apart); the rest are counted per process\n"
      "  --max-log-mb N the kernel log's bound in MiB (default 4096): later events are counted\n"
      "  --list         print every program and attach point and whether it attaches here\n");
}

bool parse_u64(const char* s, uint64_t* out) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (errno || !*s || *end || *s == '-') return false;
  *out = v;
  return true;
}

}  // namespace

int cmd_record(int argc, char** argv) {
#if !FABTRACE_HAVE_BPF
  (void)argc;
  (void)argv;
  std::fprintf(stderr,
               "fabtrace record: this fabtrace was built without BPF support (clang, bpftool, "
               "libbpf or kernel BTF were missing at build time); the preload-only mode "
               "(fabtrace run) works\n");
  return 2;
#else
  CollectorOptions opt;
  if (const char* d = std::getenv("FABTRACE_DIR"); d && *d) opt.dir = d;
  uint64_t duration_s = 0;
  bool list = false, preload = true;
  std::vector<std::string> cmd;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* what) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "fabtrace record: %s needs a value\n", what);
        return nullptr;
      }
      return argv[++i];
    };
    if (a == "--") {
      cmd.assign(argv + i + 1, argv + argc);
      break;
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (a == "-o" || a == "--dir") {
      const char* v = value("-o");
      if (!v) return 2;
      opt.dir = v;
    } else if (a == "--duration") {
      const char* v = value("--duration");
      if (!v || !parse_u64(v, &duration_s)) {
        std::fprintf(stderr, "fabtrace record: bad --duration\n");
        return 2;
      }
    } else if (a == "--pid") {
      const char* v = value("--pid");
      uint64_t p = 0;
      if (!v || !parse_u64(v, &p) || p == 0 || p > 0x3fffffff) {
        std::fprintf(stderr, "fabtrace record: bad --pid\n");
        return 2;
      }
      opt.pids.push_back(static_cast<pid_t>(p));
    } else if (a == "--only-pids") {
      opt.discover = false;
    } else if (a == "--polls") {
      opt.bpf.polls = true;
    } else if (a == "--net-all") {
      opt.bpf.net_all = true;
    } else if (a == "--min-offcpu-us") {
      const char* v = value("--min-offcpu-us");
      uint64_t us = 0;
      if (!v || !parse_u64(v, &us)) {
        std::fprintf(stderr, "fabtrace record: bad --min-offcpu-us\n");
        return 2;
      }
      opt.bpf.min_offcpu_ns = us * 1000;
    } else if (a == "--uprobes") {
      opt.bpf.uprobes = true;
    } else if (a == "--uprobe-providers") {
      const char* v = value("--uprobe-providers");
      if (!v) return 2;
      opt.uprobe_providers = split_commas(v);
      if (opt.uprobe_providers.empty()) {
        std::fprintf(
            stderr, "fabtrace record: bad --uprobe-providers (a list such as 'tcp;ofi_rxm,shm')\n");
        return 2;
      }
    } else if (a == "--symbols") {
      const char* v = value("--symbols");
      if (!v || !*v) return 2;
      opt.symbols_file = v;
    } else if (a == "--uprobe-by-name") {
      opt.uprobe_by_name = true;
    } else if (a == "--uprobe-perf-events") {
      opt.bpf.uprobe_perf_events = true;
    } else if (a == "--usdt-rate" || a == "--max-log-mb") {
      const char* v = value(a.c_str());
      uint64_t n = 0;
      if (!v || !parse_u64(v, &n) || n == 0 || n > (1u << 30)) {
        std::fprintf(stderr, "fabtrace record: bad %s\n", a.c_str());
        return 2;
      }
      if (a == "--usdt-rate") opt.bpf.usdt_rate = static_cast<uint32_t>(n);
      if (a == "--max-log-mb") opt.max_log_bytes = n << 20;
    } else if (a == "--no-preload") {
      preload = false;
    } else if (a == "--list") {
      list = true;
    } else {
      std::fprintf(stderr, "fabtrace record: unknown option %s\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }
  if ((opt.uprobe_by_name || !opt.symbols_file.empty() || opt.bpf.uprobe_perf_events) &&
      !opt.bpf.uprobes) {
    std::fprintf(stderr,
                 "fabtrace record: --symbols, --uprobe-by-name and --uprobe-perf-events go with "
                 "--uprobes\n");
    return 2;
  }
  // FABTRACE_PRELOAD may be a list (a sanitizer runtime first): the probes live
  // in the entry that is libfabtrace.so.
  const std::string lib = find_preload();
  for (size_t a = 0; a < lib.size();) {
    size_t b = lib.find(':', a);
    if (b == std::string::npos) b = lib.size();
    const std::string one = lib.substr(a, b - a);
    if (one.size() >= 14 && one.compare(one.size() - 14, 14, "libfabtrace.so") == 0)
      opt.bpf.usdt_libraries.push_back(one);
    a = b + 1;
  }

  if (list) {
    std::string err;
    const auto points = BpfSession::probe_all(opt.bpf, &err);
    if (!err.empty()) std::printf("# %s\n", err.c_str());
    std::printf("%-8s %-38s %-9s %s\n", "program", "attach point", "state", "detail");
    for (const KernelAttach& a : points)
      std::printf("%-8s %-38s %-9s %s\n", a.program.c_str(), a.point.c_str(), a.state.c_str(),
                  a.detail.c_str());
    return points.empty() ? 2 : 0;
  }
  if (!cmd.empty() && preload && lib.empty()) {
    std::fprintf(stderr, "fabtrace record: libfabtrace.so not found (set FABTRACE_PRELOAD)\n");
    return 2;
  }
  for (const std::string& c : cmd) opt.command += (opt.command.empty() ? "" : " ") + c;

  Collector col(opt);
  std::string err;
  if (!col.start(&err)) {
    std::fprintf(stderr,
                 "fabtrace record: %s; nothing traced (the preload-only mode, fabtrace run, "
                 "needs no privilege)\n",
                 err.c_str());
    return 2;
  }
  size_t attached = 0;
  for (const KernelAttach& a : col.attach_list()) {
    if (a.state == "attached") {
      ++attached;
    } else {
      std::fprintf(stderr, "fabtrace record: %s %s %s: %s\n", a.program.c_str(), a.point.c_str(),
                   a.state.c_str(), a.detail.c_str());
    }
  }
  std::fprintf(stderr, "fabtrace record: %zu attach points attached; kernel log -> %s\n", attached,
               col.log_path().c_str());
  if (opt.bpf.uprobes) {
    for (const std::string& n : col.uprobe_notes())
      std::fprintf(stderr, "fabtrace record: uprobes: %s\n", n.c_str());
    if (!opt.discover)
      std::fprintf(stderr,
                   "fabtrace record: uprobes: --only-pids: probes attached to the --pid "
                   "processes only; a process started during the session is not probed\n");
    for (const KernelAttach& a : col.attach_list())
      if (a.point == "uprobe_multi" && a.state == "attached")
        std::fprintf(stderr, "fabtrace record: uprobes: uprobe_multi: %s\n", a.detail.c_str());
    std::fprintf(stderr, "fabtrace record: uprobes: %zu provider functions probed\n",
                 col.uprobe_sites().size());
  }

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  pid_t child = -1;
  if (!cmd.empty()) {
    std::vector<std::pair<std::string, std::string> > env = {{"FABTRACE_DIR", opt.dir}};
    if (preload) {
      std::string p = lib;
      if (const char* old = std::getenv("LD_PRELOAD"); old && *old) p += std::string(":") + old;
      env.push_back({"LD_PRELOAD", p});
    }
    child = launch(cmd, env, &err);
    if (child < 0) {
      std::fprintf(stderr, "fabtrace record: %s\n", err.c_str());
      col.finish();
      return 127;
    }
  }
  const uint64_t t0 = mono_ns();
  int status = 0;
  bool child_done = child < 0;
  while (!g_stop) {
    col.step(50);
    if (!child_done && waitpid(child, &status, WNOHANG) == child) {
      child_done = true;
      break;
    }
    if (duration_s && mono_ns() - t0 >= duration_s * 1000000000ULL) break;
  }
  if (!child_done) {
    if (g_stop) kill(child, SIGTERM);
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    child_done = true;
  }
  col.finish();
  const KernelStats s = col.stats();
  std::fprintf(stderr,
               "fabtrace record: %llu events written (%llu lost in the kernel, %llu malformed), "
               "%zu processes traced -> %s\n",
               static_cast<unsigned long long>(col.records()),
               static_cast<unsigned long long>(s.lost_total()),
               static_cast<unsigned long long>(col.malformed()), col.traced_processes(),
               col.log_path().c_str());
  const int lost_rc = report_lost_data(col);
  if (!col.counters_path().empty())
    std::fprintf(stderr, "fabtrace record: node NIC counters -> %s\n", col.counters_path().c_str());
  if (opt.bpf.uprobes) {
    const auto& sites = col.uprobe_sites();
    const auto& hits = col.uprobe_hits();
    for (size_t i = 0; i < sites.size(); ++i)
      std::fprintf(stderr, "fabtrace record: uprobe %s+0x%llx %s: %llu hits\n",
                   sites[i].path.c_str(), static_cast<unsigned long long>(sites[i].offset),
                   sites[i].what().c_str(),
                   static_cast<unsigned long long>(i < hits.size() ? hits[i] : 0));
    // The rows, as many as a terminal takes (a process may hold thousands):
    // all of them are in the log.
    constexpr size_t kRowsShown = 200;
    const std::vector<UprobeRow>& rows = col.uprobe_rows();
    for (size_t i = 0; i < rows.size() && i < kRowsShown; ++i)
      std::fprintf(stderr, "fabtrace record: uprobe pid %u %-12s %s\n", rows[i].pid,
                   uprobe_op_name(rows[i].op).c_str(),
                   uprobe_stats_detail(rows[i].record(0)).c_str());
    if (rows.size() > kRowsShown)
      std::fprintf(stderr, "fabtrace record: ... and %zu more uprobe rows (in the kernel log)\n",
                   rows.size() - kRowsShown);
    // Rows and addresses the programs could not keep: counted, never silent.
    const std::vector<uint64_t>& lost = col.uprobe_lost();
    if (lost.size() > FT_UP_LOST_ADDRS && (lost[FT_UP_LOST_STATS] || lost[FT_UP_LOST_ADDRS]))
      std::fprintf(stderr,
                   "fabtrace record: uprobes: %llu updates of a new link's row lost to a full "
                   "statistics map (%u rows), %llu addresses not kept (their map full)\n",
                   static_cast<unsigned long long>(lost[FT_UP_LOST_STATS]), col.uprobe_max_rows(),
                   static_cast<unsigned long long>(lost[FT_UP_LOST_ADDRS]));
    for (const ScannedProcess& p : col.unprobed_later())
      std::fprintf(stderr,
                   "fabtrace record: uprobes: pid %d (%s) started during the session and maps "
                   "libfabric: not probed (--only-pids)\n",
                   static_cast<int>(p.pid), p.comm.c_str());
  }
  const int rc = child < 0 ? 0 : exit_code_of(status);
  return rc ? rc : lost_rc;
#endif
}

}  // namespace fabtrace
