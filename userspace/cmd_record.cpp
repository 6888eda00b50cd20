// fabtrace record: the privileged node-wide session (one per node, as root).
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/comma_list.h"
#include "common/decimal.h"
#include "common/env.h"
#include "common/path_template.h"
#include "common/printable.h"
#include "userspace/cli/cli.h"
#include "userspace/commands.h"
#include "userspace/launch.h"

#if FABTRACE_HAVE_BPF
#include "bpf/uprobe_ops.h"
#include "common/uprobe_stats.h"
#include "userspace/record/collector.h"
#include "userspace/record/proc_scan.h"
#endif

namespace fabtrace {

namespace {

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

// How often the collector drains the ring buffer (the programs wake it sooner
// when the ring is half full): each drain is a wakeup that takes a CPU from
// whatever runs there, a rank on a busy node.
constexpr int kDrainMs = 250;

}  // namespace

void add_record_command(cli::Cli& cli, CLI::App& parent) {
  auto a = std::make_shared<RecordArgs>();
  CLI::App* c = cli.add_command(
      parent, "record",
      "as root, once per node: BPF programs record what the kernel saw (off-CPU time and who ran "
      "instead, IRQs, page faults, TCP retransmits and drops, cxi driver events, the cause of "
      "every stall and slow op the preload reports) into a kernel log in DIR, beside the ranks' "
      "outputs; --uprobes times the ops of processes without the preload",
      [a] { return record_session(*a); });
  c->add_option("-o,--dir", a->dir,
                "where the kernel log goes, and FABTRACE_DIR of CMD (default: FABTRACE_DIR, else "
                "the current directory); %j, %h, %p and %q{VAR} expand (fabtrace-env(7))")
      ->type_name("DIR");
  cli::add_number(c, "--duration",
                  "stop after S seconds (otherwise at SIGINT/SIGTERM or when CMD exits)", 0,
                  366ULL * 24 * 3600, [a](uint64_t v) { a->duration_s = v; })
      ->type_name("S");
  cli::add_number(
      c, "--pid", "also trace PID (even without libfabric); repeatable", 1, 0x3fffffff,
      [a](uint64_t v) { a->pids.push_back(v); }, true)
      ->type_name("PID");
  c->add_flag("--only-pids", a->only_pids, "trace only the --pid processes (no discovery)");
  c->add_option("--owner", a->owner,
                "the outputs are this user's: DIR must exist and be owned by UID, and every file "
                "is created in it and given to UID:GID (a session run by Slurm's plugin for a "
                "user's step)")
      ->type_name("UID:GID");
  c->add_flag("--polls", a->polls,
              "hand every CQ poll to the kernel too, as runs of one thread's polls of one CQ");
  c->add_flag("--net-all", a->net_all,
              "record retransmits and drops of every socket, not only the traced ones");
  cli::add_number(c, "--min-offcpu-us",
                  "log off-CPU intervals from N us (shorter ones still count in the stall "
                  "breakdowns; default 0)",
                  0, 3600ULL * 1000000, [a](uint64_t v) { a->min_offcpu_us = v; });
  cli::add_number(c, "--min-softirq-us",
                  "with --raw windows, write softirqs from N us (shorter ones are summed per "
                  "thread, counted, and still count in the stall breakdowns; default 10, 0: all)",
                  0, 3600ULL * 1000000, [a](uint64_t v) { a->min_softirq_us = v; });
  c->add_flag("--no-preload", a->no_preload,
              "run CMD without the preload (kernel-level tracing only)");
  c->add_flag("--uprobes", a->uprobes,
              "pair ops with completions in the kernel, with uprobes on the providers' op-table "
              "functions, for processes without the preload (every process mapping "
              "libfabric.so.1, or only the --pid ones with --only-pids; running ones too); "
              "costs a trap per op and two per CQ read; writes their per-rank reports");
  c->add_option("--uprobe-providers", a->uprobe_providers,
                "the providers whose functions are probed (default tcp;ofi_rxm,shm; also "
                "tested: udp;ofi_rxd, sockets, tcp; never a utility provider with its core, "
                "e.g. tcp;ofi_rxm,tcp)")
      ->type_name("P,...")
      ->check(CLI::Validator(
          [](const std::string& v) {
            return split_commas(v).empty() ? "a list such as 'tcp;ofi_rxm,shm'" : "";
          },
          ""));
  c->add_option("--symbols", a->symbols,
                "the libfabric's symbol table (the unstripped library or its debug file, of the "
                "same build-id): the probed functions are named, and a provider the helper "
                "cannot open is attached by name (without it: the library's own, or its debug "
                "file by build-id under /usr/lib/debug)")
      ->type_name("FILE")
      ->check(CLI::Validator(
          [](const std::string& v) { return v.empty() ? "an empty file name" : ""; }, ""));
  c->add_flag("--uprobe-by-name", a->uprobe_by_name,
              "attach every provider by name through the symbols (the op tables only check them)");
  c->add_flag("--uprobe-perf-events", a->uprobe_perf_events,
              "one perf-event uprobe per probe, as on kernels before 6.6, instead of one "
              "uprobe_multi link per program and file");
  cli::add_number(c, "--usdt-rate",
                  "records each process's probes may add per second (default 1000; --polls' "
                  "poll records apart); the rest are counted per process",
                  1, 1ULL << 30, [a](uint64_t v) { a->usdt_rate = v; })
      ->type_name("N");
  c->add_option_function<std::string>(
       "--max-size",
       [a](const std::string& v) {
         uint64_t b = 0;
         if (!parse_byte_size(v, &b) || b < (1ULL << 20))
           throw CLI::ValidationError("--max-size",
                                      "takes a size of at least 1M (4096M, 2G, "
                                      "1TiB: powers of 1024), not '" +
                                          v + "'");
         a->max_size = b;
       },
       "the kernel log's bound (default 1G): stalls and slow ops with their breakdowns, "
       "marks, errors, retransmits and drops, and the per-thread sums of the raw events are "
       "always kept; the raw events themselves (off-CPU intervals, IRQs, faults) make room, "
       "oldest first, and are counted")
      ->type_name("SIZE");
  cli::add_number(c, "--max-log-mb", "--max-size in MiB (its older name)", 1, 1ULL << 30,
                  [a](uint64_t v) { a->max_size = v << 20; })
      ->type_name("N");
  c->add_option("--raw", a->raw,
                "which raw events are written (all are summed per thread): windows (the "
                "default: those around each stall and slow op, 10 ms on each side), all, none")
      ->type_name("WHICH")
      ->check(CLI::IsMember({"windows", "all", "none"}));
  c->add_flag("--list", a->list,
              "print every program and attach point and whether it attaches here, then exit");
  cli.add_traced_command(c, &a->command, false);
}

int record_session(const RecordArgs& args) {
#if !FABTRACE_HAVE_BPF
  (void)args;
  std::fprintf(stderr,
               "fabtrace record: this fabtrace was built without BPF support (clang, bpftool, "
               "libbpf or kernel BTF were missing at build time); the preload-only mode "
               "(fabtrace run) works\n");
  return 2;
#else
  CollectorOptions opt;
  if (!args.dir.empty())
    opt.dir = args.dir;
  else if (const char* d = std::getenv("FABTRACE_DIR"); d && *d)
    opt.dir = d;
  for (const uint64_t p : args.pids) opt.pids.push_back(static_cast<pid_t>(p));
  opt.discover = !args.only_pids;
  if (!args.owner.empty()) {
    unsigned long uid = 0, gid = 0;
    char end = 0;
    if (std::sscanf(args.owner.c_str(), "%lu:%lu%c", &uid, &gid, &end) != 2 || uid > 0x7fffffff ||
        gid > 0x7fffffff) {
      std::fprintf(stderr, "fabtrace record: --owner %s: UID:GID expected (numbers)\n",
                   printable(args.owner).c_str());
      return 2;
    }
    opt.owned = true;
    opt.owner_uid = static_cast<uid_t>(uid);
    opt.owner_gid = static_cast<gid_t>(gid);
  }
  opt.bpf.polls = args.polls;
  opt.bpf.net_all = args.net_all;
  opt.bpf.min_offcpu_ns = args.min_offcpu_us * 1000;
  opt.raw_windows.min_softirq_ns = args.min_softirq_us * 1000;
  opt.bpf.uprobes.enabled = args.uprobes;
  if (!args.uprobe_providers.empty()) opt.uprobe_providers = split_commas(args.uprobe_providers);
  opt.symbols_file = args.symbols;
  opt.uprobe_by_name = args.uprobe_by_name;
  opt.bpf.uprobes.perf_events = args.uprobe_perf_events;
  if (args.usdt_rate) opt.bpf.usdt_rate = static_cast<uint32_t>(args.usdt_rate);
  if (args.max_size) opt.max_log_bytes = args.max_size;
  if (args.raw == "all")
    opt.raw = CollectorOptions::Raw::kAll;
  else if (args.raw == "none")
    opt.raw = CollectorOptions::Raw::kNone;
  const uint64_t duration_s = args.duration_s;
  const bool list = args.list, preload = !args.no_preload;
  const std::vector<std::string>& cmd = args.command;
  if ((opt.uprobe_by_name || !opt.symbols_file.empty() || opt.bpf.uprobes.perf_events) &&
      !opt.bpf.uprobes.enabled) {
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
    if (is_preload_file_name(one.substr(one.find_last_of('/') + 1)))
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
  if (is_path_template(opt.dir)) {
    // Expanded here (%p: this pid), created by the collector only once it is
    // root, holds the node's lock, and walks the path safely (collector.h).
    std::string out, why;
    size_t first = std::string::npos;
    if (!expand_path_template(opt.dir, template_values_of_self(), &out, &first, &why)) {
      std::fprintf(stderr, "fabtrace record: cannot use the directory %s: %s\n",
                   printable(opt.dir).c_str(), why.c_str());
      return 2;
    }
    opt.dir = out;
    opt.create_from = first;
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
  if (opt.bpf.uprobes.enabled) {
    for (const std::string& n : col.uprobe_notes())
      std::fprintf(stderr, "fabtrace record: uprobes: %s\n", n.c_str());
    if (!opt.discover)
      std::fprintf(stderr,
                   "fabtrace record: uprobes: --only-pids: probes attached to the --pid "
                   "processes only; a process started during the session is not probed\n");
    for (const KernelAttach& a : col.attach_list())
      if ((a.point == "uprobe_multi" || a.point == "uprobe_perf_events") && a.state == "attached")
        std::fprintf(stderr, "fabtrace record: uprobes: %s: %s\n", a.point.c_str(),
                     a.detail.c_str());
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
  // Out of the ranks' way from here (the child has its own priority).
  const std::string sched = col.background();
  if (sched.empty())
    std::fprintf(stderr,
                 "fabtrace record: could not lower the collector's priority: it may preempt "
                 "traced threads when it wakes\n");
  const uint64_t t0 = mono_ns();
  int status = 0;
  bool child_done = child < 0;
  while (!g_stop) {
    col.step(kDrainMs);
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
  {
    const uint64_t cpu = col.run_cpu_ns(), wall = col.run_wall_ns(), ev = col.events();
    const RawSummaries& sums = col.summaries();
    std::fprintf(stderr,
                 "fabtrace record: collector: %.3f s CPU (%.2f%% of a core over %.1f s) for %llu "
                 "events (%.2f us each) from its start to its end, set-up apart; it took or "
                 "held a traced thread's CPU %llu times (%.3f ms held); %s\n",
                 static_cast<double>(cpu) / 1e9,
                 wall ? 100.0 * static_cast<double>(cpu) / static_cast<double>(wall) : 0.0,
                 static_cast<double>(wall) / 1e9, static_cast<unsigned long long>(ev),
                 ev ? static_cast<double>(cpu) / 1e3 / static_cast<double>(ev) : 0.0,
                 static_cast<unsigned long long>(sums.self_count()),
                 static_cast<double>(sums.self_ns()) / 1e6,
                 sched.empty() ? "at the priority it was started with" : col.sched_line().c_str());
  }
  const int lost_rc = report_lost_data(col);
  if (!col.counters_path().empty())
    std::fprintf(stderr, "fabtrace record: node NIC counters -> %s\n", col.counters_path().c_str());
  if (opt.bpf.uprobes.enabled) {
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
    if (lost.size() > FT_UP_LOST_INFLIGHT_QUOTA && lost[FT_UP_LOST_INFLIGHT_QUOTA])
      std::fprintf(stderr,
                   "fabtrace record: uprobes: %llu ops not timed: their process held its share "
                   "of ops in flight (%u)\n",
                   static_cast<unsigned long long>(lost[FT_UP_LOST_INFLIGHT_QUOTA]),
                   static_cast<unsigned>(FT_UP_INFLIGHT_PER_PROC));
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
