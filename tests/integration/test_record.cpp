// The node-wide session (`fabtrace record`) on this machine's kernel, as root:
// every program that can load here loads; planted stalls (a stopped poller, a
// poller preempted by a pinned real-time hog), planted packet loss (a tc filter
// in a network namespace of the test's own) and page faults inside a slow op
// are each found in the kernel log, on the right thread or connection, and
// explained; without root, one clear line and exit code 2.
//
// Ground truth is what the test planted (the stop, the hog's pid, the number of
// segments the filter dropped) and what the traced program's own preload
// measured (its CQ's longest poll gap), never the kernel log's own arithmetic.
#include <gtest/gtest.h>
#include <rdma/fi_errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "common/clock.h"
#include "tests/integration/harness.h"
#include "tests/integration/record_session.h"
#include "tests/integration/sample_stepper.h"
#include "tests/unit/fake_cxi_tree.h"

namespace fabtrace::test {
namespace {

// A `fabtrace record -- ft_app stream` session whose ranks run until told to stop.
struct StreamSession {
  std::string dir, stop, log;
  int record = -1;
  int rank0 = -1;

  explicit StreamSession(const std::string& tag, std::vector<std::string> prefix = {},
                         std::vector<std::string> app_args = {}, Env env = {},
                         std::string stop_file = "", std::vector<std::string> record_args = {}) {
    dir = make_temp_dir(tag);
    stop = stop_file.empty() ? dir + "/stop" : stop_file;
    std::vector<std::string> argv = {FABTRACE_CLI, "record", "-o", dir};
    for (const auto& a : record_args) argv.push_back(a);
    argv.push_back("--");
    for (const auto& p : prefix) argv.push_back(p);
    for (const std::string& a :
         std::vector<std::string>{FT_APP, "--prov", "tcp;ofi_rxm", "--test", "stream", "--timeout",
                                  "100", "--until", stop})
      argv.push_back(a);
    if (app_args.empty()) app_args = {"--count", "1000000"};
    for (const auto& a : app_args) argv.push_back(a);
    // The ranks' own results (what they measured) in DIR/app.r<rank>.json.
    argv.push_back("--result");
    argv.push_back(dir + "/app");
    env.push_back({"FABTRACE_PRELOAD", preload_list()});
    record = spawn(argv, env, dir + "/record.log", false);
  }

  // Rank 0 (ft_app's parent process) has polled its CQ at least once: the
  // kernel log holds the preload's two thread records of its main thread
  // (process registration, then the thread's first data-path activity).
  bool wait_polling() {
    return eventually([&] {
      if (rank0 < 0) {
        const auto c = children_of(record);
        if (c.empty()) return false;
        rank0 = c.front();
      }
      log = kernel_log_of(dir);
      if (log.empty()) return false;
      int n = 0;
      for (const Event& e : export_kernel(log))
        if (e.kind == "thread" && static_cast<int>(e.tid) == rank0) ++n;
      return n >= 2;
    });
  }

  int finish() {
    std::ofstream(stop).put('x');
    return wait_for(record, 240);
  }

  std::string record_log() const {
    std::ifstream in(dir + "/record.log");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
};

// The longest poll gap rank 0's own preload measured on its CQ, in ns.
double rank0_max_gap_ns(const std::string& dir) {
  const auto reps = reports_of_rank(dir, "0");
  if (reps.size() != 1) return -1;
  double g = 0;
  for (const auto& cq : reps[0].at("cqs")) g = std::max(g, cq.at("max_gap_ns").get<double>());
  return g;
}

// The longest stall record of thread `tid`.
const Event* longest_stall(const std::vector<Event>& ev, int tid) {
  const Event* best = nullptr;
  for (const Event& e : ev)
    if (e.kind == "stall" && static_cast<int>(e.tid) == tid && (!best || e.dur > best->dur))
      best = &e;
  return best;
}

// Rank 0's longest stall in the kernel log, checked against the longest poll gap
// its own preload measured (at least `min_gap_ns`: the planted one).
const Event* checked_stall(const StreamSession& s, double min_gap_ns, std::vector<Event>* ev) {
  const double gap = rank0_max_gap_ns(s.dir);
  EXPECT_GE(gap, min_gap_ns) << "rank 0's preload did not see the planted stall";
  *ev = export_kernel(s.log);
  const Event* st = longest_stall(*ev, s.rank0);
  EXPECT_NE(st, nullptr) << "no stall record for rank 0";
  // The kernel's window is the preload's gap (converted to CLOCK_MONOTONIC).
  if (st) {
    EXPECT_NEAR(static_cast<double>(st->dur), gap, gap * 0.01);
  }
  return st;
}

// `fabtrace report DIR` over the session's directory: the "why:" line under
// rank 0's longest CQ gap in the summary (or, with `gap_ms`, under its gap of
// that length, to 1%), and that gap as the summary prints it.
struct ReportedStall {
  std::string why;
  std::string line;
};
ReportedStall reported_stall(const std::string& dir, double gap_ms = 0) {
  const RunResult r = run({FABTRACE_CLI, "report", dir, "-o", dir + "/report"}, {}, false);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::istringstream in(r.output);
  std::string line;
  ReportedStall out;
  bool in_gaps = false;
  while (std::getline(in, line)) {
    if (line.rfind("longest CQ poll gaps", 0) == 0) {
      in_gaps = true;
      continue;
    }
    if (!in_gaps) continue;
    if (line.empty() || line[0] != ' ') break;
    const size_t cq = line.find(" r0 CQ#");
    if (cq == std::string::npos) continue;
    if (gap_ms > 0) {
      // "  host r0 CQ#0  221.4 ms  ended ...": the number after the CQ's name.
      const size_t num = line.find_first_not_of(' ', line.find(' ', cq + 4));
      char* end = nullptr;
      const double ms = num == std::string::npos ? 0 : std::strtod(line.c_str() + num, &end);
      if (end == nullptr || std::abs(ms - gap_ms) > gap_ms / 100 + 0.05) continue;
    }
    if (out.line.empty()) {
      out.line = line;
      if (std::getline(in, line) && line.rfind("      why: ", 0) == 0) out.why = line.substr(11);
      break;
    }
  }
  return out;
}

// "... for A of B ms": B, the window's length the kernel explained.
double verdict_breakdown_ms(const std::string& why) {
  const size_t of = why.find(" of ");
  return of == std::string::npos ? -1 : std::stod(why.substr(of + 4));
}

TEST(Record, EveryProgramThatCanLoadHereLoads) {
  REQUIRE_ROOT();  // --list takes no session slot
  const RunResult r = run({FABTRACE_CLI, "record", "--list"}, {}, false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::map<std::string, std::string> state;
  std::istringstream in(r.output);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string prog, point, st;
    if (f >> prog >> point >> st) state[point] = st;
  }
  // This kernel has every one of these: each must attach (no silent skip).
  for (const char* p :
       {"tp_btf/sched_switch", "tp_btf/sched_wakeup", "tp_btf/sched_process_exit",
        "tp_btf/irq_handler_entry", "tp_btf/irq_handler_exit", "tp_btf/softirq_entry",
        "tp_btf/softirq_exit", "tp_btf/page_fault_user", "tp_btf/tcp_retransmit_skb",
        "tp_btf/kfree_skb", "tp_btf/inet_sock_set_state", "tracepoint/syscalls/sys_exit_accept4",
        "tracepoint/syscalls/sys_exit_mmap", "tracepoint/syscalls/sys_exit_accept",
        "usdt:fabtrace:thread_start", "usdt:fabtrace:cq_stall", "usdt:fabtrace:slow_op",
        "usdt:fabtrace:op_error", "usdt:fabtrace:poll"})
    EXPECT_EQ(state[p], "attached") << p << "\n" << r.output;
  // No cxi driver here: listed as absent, with the reason, never as failed.
  for (const char* p :
       {"raw_tp/cass_err", "tp_btf/workqueue_execute_start", "raw_tp/workqueue_execute_end"})
    EXPECT_EQ(state[p], "absent") << p << "\n" << r.output;
  EXPECT_EQ(r.output.find("failed"), std::string::npos) << r.output;
}

// The largest "<part>_ns" of a window's breakdown: what its verdict must name first.
std::string largest_part(const Event& e) {
  std::string best;
  uint64_t best_ns = 0;
  for (const auto& [k, v] : e.detail)
    if (k.size() > 3 && k.compare(k.size() - 3, 3, "_ns") == 0 && e.num(k) > best_ns) {
      best_ns = e.num(k);
      best = k.substr(0, k.size() - 3);
    }
  return best;
}

// (a) The polling process stopped with SIGSTOP for 200 ms: timed from when the
// kernel shows it stopped (on a loaded machine the signal takes effect only
// when the process next runs), so the stop lasts at least 200 ms.
TEST(Record, StoppedPollerIsExplained) {
  REQUIRE_SESSION_SLOT();
  StreamSession s("rec-stop");
  ASSERT_TRUE(s.wait_polling()) << s.record_log();
  ASSERT_EQ(kill(s.rank0, SIGSTOP), 0);
  const bool stopped = eventually([&] { return proc_state(s.rank0) == 'T'; });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_EQ(kill(s.rank0, SIGCONT), 0);
  ASSERT_TRUE(stopped) << "rank 0 never showed as stopped";
  ASSERT_EQ(s.finish(), 0) << s.record_log();

  std::vector<Event> ev;
  const Event* st = checked_stall(s, 200e6, &ev);
  ASSERT_NE(st, nullptr);
  EXPECT_GE(static_cast<double>(st->num("stopped_ns")), 0.99 * 200e6) << st->cause;
  // The verdict names the largest part first: the stop, unless a loaded machine
  // kept the poller waiting for its CPU longer than that; the stop is named then too.
  const bool stop_largest = largest_part(*st) == "stopped";
  if (stop_largest)
    EXPECT_EQ(st->cause.rfind("stopped", 0), 0u) << st->cause;
  else
    EXPECT_NE(st->cause.find("; stopped (SIGSTOP or a debugger) "), std::string::npos) << st->cause;

  // fabtrace report joins the log: the summary says why, about the same gap.
  const ReportedStall rs = reported_stall(s.dir);
  if (stop_largest)
    EXPECT_EQ(rs.why.rfind("stopped (SIGSTOP or a debugger) for ", 0), 0u) << rs.line << "\n"
                                                                           << rs.why;
  else
    EXPECT_NE(rs.why.find("; stopped (SIGSTOP or a debugger) "), std::string::npos) << rs.why;
  EXPECT_NEAR(verdict_breakdown_ms(rs.why), rank0_max_gap_ns(s.dir) / 1e6,
              rank0_max_gap_ns(s.dir) / 1e6 * 0.01 + 0.05)
      << rs.why;
}

// (b) A real-time CPU hog pinned to the poller's CPU for 200 ms.
TEST(Record, PreemptedPollerNamesTheHog) {
  REQUIRE_SESSION_SLOT();
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs two CPUs";
  StreamSession s("rec-hog");
  ASSERT_TRUE(s.wait_polling()) << s.record_log();
  // Rank 0 (every thread) on CPU 1, rank 1 on CPU 0: the hog takes CPU 1 alone.
  auto pin = [](int pid, int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    const std::string task = "/proc/" + std::to_string(pid) + "/task";
    for (const std::string& t : list_files(task, "", "")) {
      const std::string tid = t.substr(task.size() + 1);
      if (!tid.empty() && isdigit(static_cast<unsigned char>(tid[0])))
        sched_setaffinity(std::stoi(tid), sizeof(set), &set);
    }
  };
  pin(s.rank0, 1);
  for (int c : children_of(s.rank0)) pin(c, 0);
  const uint64_t hog_from = mono_ns();
  const int hog = spawn({CPU_HOG, "1", "200"}, {}, s.dir + "/hog.log", false);
  ASSERT_GT(hog, 0);
  ASSERT_EQ(wait_for(hog, 60), 0) << "cpu_hog failed";
  const uint64_t hog_to = mono_ns();
  ASSERT_EQ(s.finish(), 0) << s.record_log();

  // The stall the hog made: rank 0's that overlaps the hog's run the most (on
  // a loaded node the ranks' start, sharing a CPU, can leave a longer gap).
  EXPECT_GE(rank0_max_gap_ns(s.dir), 150e6) << "rank 0's preload did not see the planted stall";
  const std::vector<Event> ev = export_kernel(s.log);
  const Event* st = nullptr;
  uint64_t most = 0;
  for (const Event& e : ev) {
    if (e.kind != "stall" || static_cast<int>(e.tid) != s.rank0) continue;
    const uint64_t a = std::max(e.start, hog_from), b = std::min(e.start + e.dur, hog_to);
    if (b > a && b - a > most) {
      most = b - a;
      st = &e;
    }
  }
  ASSERT_NE(st, nullptr) << "no stall of rank 0 while the hog ran";
  EXPECT_GE(static_cast<double>(st->dur), 150e6) << st->cause;
  EXPECT_EQ(st->cause.rfind("preempted by cpu_hog[" + std::to_string(hog) + "]", 0), 0u)
      << st->cause;
  EXPECT_EQ(static_cast<int>(st->other_pid), hog);
  EXPECT_EQ(st->other_comm, "cpu_hog");
  EXPECT_GE(static_cast<double>(st->num("runnable_ns")), 0.9 * 150e6) << st->cause;

  const ReportedStall rs = reported_stall(s.dir, st->dur / 1e6);
  EXPECT_EQ(rs.why.rfind("preempted by cpu_hog[" + std::to_string(hog) + "] for ", 0), 0u)
      << rs.line << "\n"
      << rs.why;
  EXPECT_NEAR(verdict_breakdown_ms(rs.why), st->dur / 1e6, st->dur / 1e6 * 0.01 + 0.05) << rs.why;
}

// Page faults inside a slow op: rank 0 touches 64 MiB of fresh memory (16384
// pages) between posting a send and polling its completion, and counts the
// faults of its own thread around the touch.
TEST(Record, PageFaultsInsideASlowOp) {
  REQUIRE_SESSION_SLOT();
  StreamSession s("rec-faults", {}, {"--count", "400", "--touch-mb", "64"});
  ASSERT_EQ(wait_for(s.record, 240), 0) << s.record_log();
  s.log = kernel_log_of(s.dir);
  const auto ev = export_kernel(s.log);
  const auto reps = reports_of_rank(s.dir, "0");
  ASSERT_EQ(reps.size(), 1u);
  const uint32_t rank0 = reps[0].at("pid").get<uint32_t>();
  const uint64_t touched =
      load_json(s.dir + "/app.r0.json").at("measured").at("touch_faults").get<uint64_t>();
  ASSERT_GE(touched, 16384u);
  const Event* slow = nullptr;
  for (const Event& e : ev)
    if (e.kind == "slow_op" && e.pid == rank0 && e.detail.count("op") &&
        e.detail.at("op") == "fi_tsend" && (!slow || e.num("faults") > slow->num("faults")))
      slow = &e;
  ASSERT_NE(slow, nullptr) << "no slow fi_tsend of rank 0";
  std::printf("slow op: %llu page faults printed, the touch's own %llu\n",
              static_cast<unsigned long long>(slow->num("faults")),
              static_cast<unsigned long long>(touched));
  // In-window counts come from the thread's fault buckets; a bucket that reaches
  // over the window's edge is prorated by the thread's time on a CPU (a burst
  // goes on through preemptions, which hold no faults), so the edges are exact
  // to one burst: within 1% of the faults the touch made, on a loaded node too
  // (prorated by wall time, CI counted about 15,713 of a touch's 18,432 faults
  // under ASan; with the sparse faults of the round trips before the touch
  // holding its bucket open, about 17,224).
  EXPECT_GE(slow->num("faults"), touched * 99 / 100) << slow->cause;
  EXPECT_NE(slow->cause.find("page faults"), std::string::npos) << slow->cause;
  // The log's fault summaries of that thread add up to at least the touch.
  uint64_t faults = 0;
  for (const Event& e : ev)
    if (e.kind == "faults" && e.tid == rank0) faults += e.num("count");
  EXPECT_GE(faults, touched);
}

// ---- the log's bound (record --max-size, --raw) ----

// What rank 0's sleepers (ft_app --sleepers) did by their own count, and the
// off-CPU intervals in nanosleep the log's sums give their threads.
struct Sleeps {
  uint64_t app = 0, summed = 0;
  std::set<uint32_t> tids;
};

Sleeps sleeps_of(const StreamSession& s, const std::vector<Event>& ev) {
  Sleeps out;
  const auto app = load_json(s.dir + "/app.r0.json");
  const auto& m = app.at("measured");
  out.app = m.at("sleeps").get<uint64_t>();
  for (auto it = m.begin(); it != m.end(); ++it)
    if (it.key().rfind("sleeper_tid_", 0) == 0) out.tids.insert(it.value().get<uint32_t>());
  for (const Event& e : ev)
    if (e.kind == "summary" && e.detail.count("of") && e.detail.at("of") == "offcpu" &&
        out.tids.count(e.tid) && e.cause.find("nanosleep") != std::string::npos)
      out.summed += e.num("count");
  return out;
}

// The export's closing lines: raw events given way (outside the windows) and
// dropped oldest first (the bound), and records lost in the kernel.
struct GivenWay {
  uint64_t outside = 0, dropped = 0, lost = 0;
};

GivenWay given_way_of(const std::string& log) {
  const RunResult r = run({FABTRACE_CLI, "export", "kernel", log, "--kind", "mark"}, {}, false);
  GivenWay g;
  std::smatch m;
  if (std::regex_search(r.output, m,
                        std::regex("\\(([0-9]+) outside the windows kept around stalls and slow "
                                   "ops, ([0-9]+) dropped oldest first")))
    g = {std::stoull(m[1]), std::stoull(m[2]), 0};
  if (std::regex_search(r.output, m, std::regex("events; ([0-9]+) lost in the kernel")))
    g.lost = std::stoull(m[1]);
  return g;
}

// The sums hold every sleep the program made, whatever the log kept of the
// intervals themselves (less what the ring buffer lost, counted).
void expect_every_sleep_summed(const Sleeps& sl, uint64_t lost) {
  EXPECT_GT(sl.app, 10000u) << "not a flood";
  EXPECT_EQ(sl.tids.size(), 4u);
  EXPECT_LE(sl.summed, sl.app);
  EXPECT_GE(sl.summed + lost, sl.app - sl.app / 100);
}

// A flood of raw events (four threads of rank 0 sleeping 1 us at a time,
// tens of thousands of off-CPU intervals a second) under `--max-size 2M --raw
// all`: the log never passes its bound, its oldest raw blocks give way and are
// counted, and what is always kept is there: the planted stall with its
// explanation (the preload's own gap, to 1%), the slow op, the mark, the
// threads, and the sums, which hold every sleep the program counted.
TEST(Record, AFloodStaysWithinMaxSizeAndKeepsWhatIsAlwaysKept) {
  REQUIRE_SESSION_SLOT();
  StreamSession s(
      "rec-bound", {},
      {"--count", "1000000", "--sleepers", "4", "--gap", "sleep:300", "--touch-mb", "16"}, {}, "",
      {"--max-size", "2M", "--raw", "all"});
  ASSERT_TRUE(s.wait_polling()) << s.record_log();
  // Until the log has made room at least once (its stats block says so) and
  // rank 0 is past its planted gap (its mark is in the log), or the kept
  // records alone filled the bound (below).
  const char* kFull = "with no raw events left to make room";
  const bool reached = eventually([&] {
    if (s.record_log().find(kFull) != std::string::npos) return true;
    bool marked = false;
    for (const Event& e : export_kernel(s.log, nullptr, "mark"))
      marked = marked || (e.kind == "mark" && static_cast<int>(e.pid) == s.rank0);
    return marked && given_way_of(s.log).dropped > 0;
  });
  ASSERT_EQ(s.finish(), 0) << s.record_log();
  // Beside a CPU hog the collector, at nice 19, drains too little of a flood
  // for the log to reach its bound in time (events are lost in the kernel,
  // and counted): the test's question is then not asked. Seen on a fresh
  // machine with one busy loop beside the suite; the session is stopped
  // first, so that no later test meets it.
  if (!reached)
    GTEST_SKIP() << "the log neither reached its bound nor held the mark in 120 s (lost in the "
                    "kernel: "
                 << given_way_of(s.log).lost << "):\n"
                 << s.record_log();
  // The premise: rank 0's stalls and slow ops (kept, each with its breakdown)
  // fit in 2 MiB. A machine that holds the ranks up every few milliseconds
  // (measured: 5,988 stalls and 838 slow ops beside two sanitized builds)
  // fills it with them alone; the session then says so and counts the rest,
  // as it must, but this test's question is not asked.
  if (s.record_log().find(kFull) != std::string::npos) {
    size_t kept = 0;
    for (const Event& e : export_kernel(s.log)) kept += e.kind == "stall" || e.kind == "slow_op";
    GTEST_SKIP() << "the machine made " << kept
                 << " stalls and slow ops, which alone filled the 2 MiB bound:\n"
                 << s.record_log();
  }
  struct stat st {};
  ASSERT_EQ(stat(s.log.c_str(), &st), 0);
  EXPECT_LE(static_cast<uint64_t>(st.st_size), 2u << 20);
  EXPECT_EQ(s.record_log().find("later events are counted, not written"), std::string::npos)
      << s.record_log();

  std::vector<Event> ev;
  const Event* stall = checked_stall(s, 300e6, &ev);
  ASSERT_NE(stall, nullptr);
  EXPECT_NE(stall->cause.find("nanosleep"), std::string::npos) << stall->cause;
  size_t marks = 0, threads = 0, slow = 0;
  for (const Event& e : ev) {
    if (static_cast<int>(e.pid) != s.rank0) continue;
    marks += e.kind == "mark" && e.cause == "round trip 100";
    threads += e.kind == "thread";
    slow += e.kind == "slow_op" && e.num("faults") > 0;
  }
  EXPECT_EQ(marks, 1u);
  EXPECT_GE(threads, 2u);
  EXPECT_GE(slow, 1u) << "the touch's slow op";
  const GivenWay g = given_way_of(s.log);
  EXPECT_GT(g.dropped, 0u);
  expect_every_sleep_summed(sleeps_of(s, ev), g.lost);
}

// The nice level of thread `tid` of process `pid` (/proc's stat, field 19),
// or INT_MIN when it cannot be read.
int nice_of(int pid, int tid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/stat");
  std::string st;
  std::getline(in, st);
  const size_t close = st.rfind(')');  // the name may hold spaces
  if (close == std::string::npos) return INT_MIN;
  std::istringstream fields(st.substr(close + 2));
  std::string f;
  for (int i = 3; i <= 19 && fields >> f; ++i)
    if (i == 19) return std::stoi(f);
  return INT_MIN;
}

// A collector held back while a flood fills its ring buffer (planted: the
// session stopped with SIGSTOP for 5 s while four threads of rank 0 sleep
// 1 us at a time, --raw all) is woken by the programs when it runs again: its
// draining thread leaves nice 19 for the priority it was started with, and
// goes back once it has caught up; the session's line says how often. At
// nice 19 beside a busy loop it would get about 1.5% of a core, and the flood
// would outrun it for as long as the busy loop ran.
TEST(Record, ACollectorHeldBackByAFloodCatchesUpAtItsOwnPriorityThenStepsBack) {
  REQUIRE_SESSION_SLOT();
  errno = 0;
  const int own = getpriority(PRIO_PROCESS, 0);
  if (errno != 0 || own >= 19) GTEST_SKIP() << "the test runs at nice " << own;
  StreamSession s("rec-pace", {}, {"--count", "1000000", "--sleepers", "4"}, {}, "",
                  {"--raw", "all"});
  ASSERT_TRUE(s.wait_polling()) << s.record_log();
  // The draining thread is record's main thread.
  ASSERT_TRUE(eventually([&] { return nice_of(s.record, s.record) == 19; }, 10))
      << "not in the background: " << nice_of(s.record, s.record);
  ASSERT_EQ(kill(s.record, SIGSTOP), 0);
  std::this_thread::sleep_for(std::chrono::seconds(5));
  ASSERT_EQ(kill(s.record, SIGCONT), 0);
  // Raised for at least a second after it last found itself behind: seen by a
  // look every 100 ms.
  EXPECT_TRUE(eventually([&] { return nice_of(s.record, s.record) == own; }, 20))
      << "never raised to nice " << own;
  EXPECT_TRUE(eventually([&] { return nice_of(s.record, s.record) == 19; }, 60))
      << "never back at nice 19";
  ASSERT_EQ(s.finish(), 0) << s.record_log();
  std::smatch m;
  const std::string log = s.record_log();
  ASSERT_TRUE(std::regex_search(
      log, m, std::regex("its own priority while behind a flood: ([0-9]+) times, ([0-9.]+) s")))
      << log;
  EXPECT_GE(std::stoull(m[1]), 1u);
  EXPECT_GE(std::stod(m[2]), 1.0) << "raised for less than the second it stays";
}

// By default the raw events of a process are written only around its stalls
// and slow ops (the window and 10 ms on each side); the rest are summed and
// counted: each of the program's sleeps is written or counted. The sleepers'
// intervals inside the planted gap are there.
TEST(Record, ByDefaultRawEventsAreWrittenOnlyAroundStallsAndSlowOps) {
  REQUIRE_SESSION_SLOT();
  StreamSession s("rec-windows", {},
                  {"--count", "1000000", "--sleepers", "4", "--gap", "sleep:200"});
  ASSERT_TRUE(s.wait_polling()) << s.record_log();
  ASSERT_TRUE(eventually([&] {
    for (const Event& e : export_kernel(s.log, nullptr, "mark"))
      if (e.kind == "mark" && static_cast<int>(e.pid) == s.rank0) return true;
    return false;
  })) << s.record_log();
  ASSERT_EQ(s.finish(), 0) << s.record_log();

  std::vector<Event> ev;
  const Event* stall = checked_stall(s, 200e6, &ev);
  ASSERT_NE(stall, nullptr);
  const Sleeps sl = sleeps_of(s, ev);
  std::vector<std::pair<uint64_t, uint64_t>> windows;  // rank 0's, widened by 10 ms
  for (const Event& e : ev)
    if (static_cast<int>(e.pid) == s.rank0 &&
        (e.kind == "stall" || e.kind == "slow_op" || e.kind == "op_error"))
      windows.emplace_back(e.start - 10000000, e.start + e.dur + 10000000);
  size_t raw = 0, outside = 0, in_gap = 0;
  for (const Event& e : ev) {
    if (static_cast<int>(e.pid) != s.rank0) continue;
    if (e.kind != "offcpu" && e.kind != "irq" && e.kind != "softirq" && e.kind != "faults")
      continue;
    ++raw;
    bool inside = false;
    for (const auto& [a, b] : windows) inside = inside || (e.start <= b && e.start + e.dur >= a);
    outside += !inside;
    in_gap += e.kind == "offcpu" && sl.tids.count(e.tid) && e.start >= stall->start &&
              e.start + e.dur <= stall->start + stall->dur;
  }
  EXPECT_EQ(outside, 0u) << "of " << raw << " raw events of rank 0";
  // 200 ms of four threads sleeping 1 us at a time (at least the kernel's
  // 50 us timer slack each): thousands; a loaded machine runs them less.
  EXPECT_GE(in_gap, 100u);
  // Every sleep is either written (inside a window) or counted as given way
  // (the count is of every kind and process: at least the sleeps outside).
  // How many fall outside depends on how much of the run the windows cover,
  // which a loaded machine's preemptions stretch (to the whole run, at times).
  size_t written_sleeps = 0;
  for (const Event& e : ev)
    written_sleeps += static_cast<int>(e.pid) == s.rank0 && e.kind == "offcpu" &&
                      sl.tids.count(e.tid) && e.cause.find("nanosleep") != std::string::npos;
  const GivenWay g = given_way_of(s.log);
  EXPECT_GT(g.outside, 0u);
  EXPECT_GE(written_sleeps + g.outside + g.lost, sl.summed - sl.summed / 100)
      << written_sleeps << " sleeps written, " << g.outside << " raw events given way";
  expect_every_sleep_summed(sl, g.lost);
}

// Rank 0 of a stream session that ran to its end (--count): its pid from its
// report, and the kernel log read.
void finished_stream(StreamSession* s) {
  ASSERT_EQ(wait_for(s->record, 240), 0) << s->record_log();
  s->log = kernel_log_of(s->dir);
  const auto reps = reports_of_rank(s->dir, "0");
  ASSERT_EQ(reps.size(), 1u);
  s->rank0 = reps[0].at("pid").get<int>();
}

// By default (--raw windows) softirqs shorter than 10 us are summed and
// counted, not written: on loopback TCP most raw events are NET_RX softirqs of
// a few us. Every softirq written is at least that long, and the sums hold
// every softirq the collector drained: those written, the short ones, and the
// rest given way or dropped (counted). The short ones are summed in the kernel,
// not sent: the collector reads fewer events in all than there were of them.
TEST(Record, ShortSoftirqsAreSummedNotWritten) {
  REQUIRE_SESSION_SLOT();
  StreamSession s("rec-softirqs", {}, {"--count", "3000"});
  ASSERT_NO_FATAL_FAILURE(finished_stream(&s));
  const RunResult r = run({FABTRACE_CLI, "export", "kernel", s.log}, {}, false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex("([0-9]+) softirqs shorter than 10 us")))
      << "no short softirqs counted: "
      << r.output.substr(r.output.size() > 2000 ? r.output.size() - 2000 : 0);
  const uint64_t short_ones = std::stoull(m[1]);
  uint64_t written = 0, summed = 0;
  for (const Event& e : export_kernel(s.log)) {
    if (e.kind == "softirq") {
      ++written;
      EXPECT_GE(e.dur, 10000u) << "a softirq of " << e.dur << " ns written";
    }
    if (e.kind == "summary" && e.detail.count("of") && e.detail.at("of") == "softirq")
      summed += e.num("count");
  }
  const GivenWay g = given_way_of(s.log);
  std::printf("softirqs: %llu summed, %llu written, %llu short; %llu raw events given way\n",
              static_cast<unsigned long long>(summed), static_cast<unsigned long long>(written),
              static_cast<unsigned long long>(short_ones),
              static_cast<unsigned long long>(g.outside + g.dropped));
  EXPECT_GT(short_ones, 0u);
  std::smatch ev;
  const std::string rec_log = s.record_log();
  ASSERT_TRUE(std::regex_search(rec_log, ev, std::regex("for ([0-9]+) events"))) << rec_log;
  EXPECT_LT(std::stoull(ev[1]), short_ones) << rec_log;
  EXPECT_GE(summed, written + short_ones);
  EXPECT_LE(summed, written + short_ones + g.outside + g.dropped);
}

// A poller blocked in read(2) on a pipe for 200 ms (ft_app's --gap pipe:200:
// another thread writes the byte): the verdict names the syscall and what it
// waited on, where "blocked in a sleeping syscall" was all it said, and the
// summary's why line says the same.
// The byte is written 200 ms after the poller starts its gap: a poller that
// the machine's other work keeps off its CPU past that point finds the byte
// there and never blocks, and the kernel then rightly says "preempted by X".
// Such a run says nothing of the read's naming: it is run again, at most 3
// times in all, each saying so.
TEST(Record, PipeBlockedPollerNamesRead) {
  REQUIRE_SESSION_SLOT();
  std::unique_ptr<StreamSession> run;
  for (int attempt = 1;; ++attempt) {
    run = std::make_unique<StreamSession>(
        "rec-pipe", std::vector<std::string>{},
        std::vector<std::string>{"--count", "300", "--gap", "pipe:200"});
    ASSERT_NO_FATAL_FAILURE(finished_stream(run.get()));
    const std::vector<Event> seen = export_kernel(run->log);
    const Event* first = longest_stall(seen, run->rank0);
    if (attempt == 3 || !first || first->cause.rfind("preempted by ", 0) != 0) break;
    std::printf("attempt %d: the poller was kept off its CPU past the write (%s): again\n", attempt,
                first->cause.c_str());
  }
  StreamSession& s = *run;
  std::vector<Event> ev;
  const Event* st = checked_stall(s, 200e6, &ev);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->cause.rfind("blocked in read (pipe) for ", 0), 0u) << st->cause;
  EXPECT_EQ(st->detail.count("sleep_in"), 1u);
  if (st->detail.count("sleep_in")) {
    EXPECT_EQ(st->detail.at("sleep_in").rfind("read(pipe):", 0), 0u) << st->detail.at("sleep_in");
  }
  const ReportedStall rs = reported_stall(s.dir);
  EXPECT_EQ(rs.why.rfind("blocked in read (pipe) for ", 0), 0u) << rs.line << "\n" << rs.why;
}

// A poll gap with 512 MiB of fresh memory touched inside it (131,072 page
// faults, more than the 65,536 the thread's fault history reached before):
// the count printed for that gap is exact, and then lies within the program's
// own bounds (its thread's fault counters read just around its CQ reads: from
// the end of the read before the gap to the start of the one after, and from
// the start of the one to the end of the other); or it says it is a lower
// bound ("at least") and is one; or it says it is an estimate ("about") and
// is near. It is never an estimate printed as a count.
TEST(Record, FaultHeavyGapCountIsExactOrABound) {
  REQUIRE_SESSION_SLOT();
  StreamSession s("rec-faults-gap", {}, {"--count", "300", "--touch-mb", "512"});
  ASSERT_NO_FATAL_FAILURE(finished_stream(&s));
  const auto app = load_json(s.dir + "/app.r0.json");
  const auto& measured = app.at("measured");
  const uint64_t inside = measured.at("gap_faults_inside").get<uint64_t>();
  const uint64_t around = measured.at("gap_faults_around").get<uint64_t>();
  ASSERT_GE(measured.at("touch_faults").get<uint64_t>(), 131072u);
  std::vector<Event> ev = export_kernel(s.log);
  const Event* st = longest_stall(ev, s.rank0);
  ASSERT_NE(st, nullptr) << "no stall record for rank 0";
  const uint64_t faults = st->num("faults");
  const std::string bound = st->detail.count("faults_bound") ? st->detail.at("faults_bound") : "";
  std::printf("fault-heavy gap: printed %llu (%s), the program's own %llu to %llu\n",
              static_cast<unsigned long long>(faults), bound.c_str(),
              static_cast<unsigned long long>(inside), static_cast<unsigned long long>(around));
  if (bound == "exact") {
    EXPECT_GE(faults, inside) << st->cause;
    EXPECT_LE(faults, around) << st->cause;
    EXPECT_NE(st->cause.find("; " + std::to_string(faults) + " page faults"), std::string::npos)
        << st->cause;
  } else if (bound == "about") {
    // Faults just outside the window ran together with those inside it in the
    // kernel's history, and that run was prorated: an estimate, said as one,
    // near the program's own count (measured under ASan, where the program
    // faults around its polls too: 1, 1,754 and 2,298 faults under about
    // 147,458; held within 10%).
    EXPECT_GE(static_cast<double>(faults), 0.90 * static_cast<double>(inside)) << st->cause;
    EXPECT_LE(static_cast<double>(faults), 1.10 * static_cast<double>(around)) << st->cause;
    EXPECT_NE(st->cause.find("; about " + std::to_string(faults) + " page faults"),
              std::string::npos)
        << st->cause;
  } else {
    EXPECT_EQ(bound, "at_least") << st->cause;
    EXPECT_LE(faults, around);
    EXPECT_NE(st->cause.find("; at least " + std::to_string(faults) + " page faults"),
              std::string::npos)
        << st->cause;
  }
}

// argv run inside the network namespace `ns` (made by `ip netns add`). nsenter
// enters the namespace only; `ip netns exec` and `ip -n` also remount / and
// /sys, which fails where / is not a mount point (a chroot, as in a fresh root).
std::vector<std::string> in_netns(const std::string& ns, std::vector<std::string> argv) {
  argv.insert(argv.begin(), {"nsenter", "--net=/run/netns/" + ns, "--"});
  return argv;
}

// What the namespace's tc filter (tc_drop.bpf.c) counted: the data segments it
// saw and dropped, and per connection direction ("a.b.c.d:port>a.b.c.d:port",
// the sender's view) the segments TCP sent again.
struct TcFilterCounts {
  uint64_t seen = 0, dropped = 0;
  std::map<std::string, uint64_t> retrans_segs;
};

TcFilterCounts tc_filter_counts(const std::string& ns) {
  auto json_of = [](const std::vector<std::string>& argv) {
    const RunResult r = run(argv, {}, false);
    return nlohmann::json::parse(r.output, nullptr, false);
  };
  TcFilterCounts out;
  const auto net = json_of(in_netns(ns, {"bpftool", "-j", "net", "show", "dev", "lo"}));
  if (!net.is_array() || net.empty() || !net[0].contains("tc") || net[0]["tc"].empty()) return out;
  const auto prog = json_of(
      {"bpftool", "-j", "prog", "show", "id", std::to_string(net[0]["tc"][0].value("id", 0))});
  if (!prog.is_object() || !prog.contains("map_ids")) return out;
  // The raw bytes of a bpftool dump ("0x7f" each), little-endian integers.
  auto bytes_of = [](const nlohmann::json& a) {
    std::vector<uint8_t> b;
    if (a.is_array())
      for (const auto& x : a)
        if (x.is_string())
          b.push_back(static_cast<uint8_t>(std::stoul(x.get<std::string>(), nullptr, 16)));
    return b;
  };
  auto le = [](const std::vector<uint8_t>& b, size_t at, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n && at + i < b.size(); ++i) v |= uint64_t{b[at + i]} << (8 * i);
    return v;
  };
  for (const auto& id : prog["map_ids"]) {
    const std::string map = std::to_string(id.get<int>());
    const auto info = json_of({"bpftool", "-j", "map", "show", "id", map});
    const std::string name = info.is_object() ? info.value("name", "") : "";
    const auto dump = json_of({"bpftool", "-j", "map", "dump", "id", map});
    if (!dump.is_array()) continue;
    for (const auto& e : dump) {
      const auto k = bytes_of(e.value("key", nlohmann::json())),
                 v = bytes_of(e.value("value", nlohmann::json()));
      if (name == "counts" && k.size() == 4 && v.size() == 8) {
        (le(k, 0, 4) == 0 ? out.seen : out.dropped) = le(v, 0, 8);
      } else if (name == "flows" && k.size() == 12 && v.size() == 16) {
        auto ep = [&](size_t addr, size_t port) {
          return std::to_string(k[addr]) + "." + std::to_string(k[addr + 1]) + "." +
                 std::to_string(k[addr + 2]) + "." + std::to_string(k[addr + 3]) + ":" +
                 std::to_string(le(k, port, 2));
        };
        out.retrans_segs[ep(0, 8) + ">" + ep(4, 10)] = le(v, 8, 8);
      }
    }
  }
  return out;
}

// Planted packet loss: inside a network namespace of its own, a tc filter drops
// 5 TCP data segments of the traced run; the retransmits and the drops appear
// on the traced connection's 4-tuple, owned by the traced processes.
TEST(Record, RetransmitsOnTheTracedConnection) {
  REQUIRE_SESSION_SLOT();
  const std::string ns = "fabtrace-rec-" + std::to_string(getpid());
  const std::string tc = "tc";
  ASSERT_EQ(run({"ip", "netns", "add", ns}, {}, false).exit_code, 0);
  struct Cleanup {
    std::string ns;
    ~Cleanup() { run({"ip", "netns", "del", ns}, {}, false); }
  } cleanup{ns};
  ASSERT_EQ(run(in_netns(ns, {"ip", "link", "set", "lo", "up"}), {}, false).exit_code, 0);
  ASSERT_EQ(run(in_netns(ns, {tc, "qdisc", "add", "dev", "lo", "clsact"}), {}, false).exit_code, 0);
  const RunResult f = run(in_netns(ns, {tc, "filter", "add", "dev", "lo", "egress", "bpf",
                                        "direct-action", "obj", TC_DROP_OBJ, "sec", "tc"}),
                          {}, false);
  ASSERT_EQ(f.exit_code, 0) << f.output;

  // The session lasts until the namespace's connections are gone (or 20 s),
  // not only until the ranks exit: a socket the ranks left behind can still
  // send its FIN again (LAST_ACK) after they exited, and the kernel's count
  // below includes it.
  const char* drain =
      "\"$@\"; rc=$?; i=0; while [ $i -lt 200 ] && "
      "ss -Htan exclude listening exclude time-wait | grep -q .; do sleep 0.1; i=$((i+1)); done; "
      "exit $rc";
  StreamSession s("rec-net", in_netns(ns, {"sh", "-c", drain, "sh"}), {"--count", "3000"});
  ASSERT_EQ(wait_for(s.record, 240), 0) << s.record_log();
  // The kernel's own count of what the namespace's TCP sent again (the namespace
  // is new: everything in it is this run's).
  const RunResult snmp = run(in_netns(ns, {"cat", "/proc/net/snmp"}), {}, false);
  uint64_t retrans_segs = 0, out_segs = 0;
  {
    std::istringstream in(snmp.output);
    std::string names, values;
    while (std::getline(in, names) && std::getline(in, values)) {
      if (names.rfind("Tcp:", 0) != 0) continue;
      std::istringstream n(names), v(values);
      std::string k, x;
      while (n >> k && v >> x) {
        if (k == "RetransSegs") retrans_segs = std::stoull(x);
        if (k == "OutSegs") out_segs = std::stoull(x);
      }
    }
  }
  ASSERT_GE(out_segs, 1000u) << snmp.output;  // enough data segments for 5 drops
  ASSERT_GE(retrans_segs, 1u) << snmp.output;
  s.log = kernel_log_of(s.dir);
  const auto ev = export_kernel(s.log);

  // The ranks and the ports their links name.
  std::set<uint32_t> pids;
  std::set<std::string> ports;
  for (const char* rank : {"0", "1"}) {
    const auto reps = reports_of_rank(s.dir, rank);
    ASSERT_EQ(reps.size(), 1u) << s.record_log();
    pids.insert(reps[0].at("pid").get<uint32_t>());
    for (const auto& l : reps[0].at("links"))
      for (const char* side : {"local", "remote"}) {
        const std::string a = l.at(side).get<std::string>();
        const size_t colon = a.rfind(':');
        if (colon != std::string::npos) ports.insert(a.substr(colon + 1));
      }
  }
  auto on_traced_link = [&](const Event& e) {
    auto port = [](const std::string& ep) { return ep.substr(ep.rfind(':') + 1); };
    return pids.count(static_cast<uint32_t>(e.num("owner"))) &&
           (ports.count(port(e.detail.at("src"))) || ports.count(port(e.detail.at("dst"))));
  };
  // Per connection direction, what the log says TCP sent again, against what
  // the tc filter saw TCP send again (the namespace's RetransSegs also counts
  // SYN-ACKs sent again, and other sockets: only a bound for the sum).
  std::map<std::string, uint64_t> logged;
  size_t drops = 0;
  for (const Event& e : ev) {
    // One record per skb sent again; the kernel counts its segments.
    if (e.kind == "retransmit" && on_traced_link(e))
      logged[e.detail.at("src") + ">" + e.detail.at("dst")] += e.num("segs");
    if (e.kind == "drop" && e.cause == "TC_EGRESS" && on_traced_link(e)) ++drops;
  }
  const TcFilterCounts tcf = tc_filter_counts(ns);
  ASSERT_EQ(tcf.dropped, 5u) << "the filter saw " << tcf.seen << " data skbs";
  EXPECT_EQ(drops, tcf.dropped) << "the filter dropped " << tcf.dropped << " data skbs of "
                                << tcf.seen;
  std::map<std::string, uint64_t> on_wire;  // the traced links' directions only
  uint64_t wire_total = 0;
  for (const auto& [flow, segs] : tcf.retrans_segs) {
    wire_total += segs;
    const std::string src = flow.substr(0, flow.find('>')), dst = flow.substr(flow.find('>') + 1);
    auto port = [](const std::string& ep) { return ep.substr(ep.rfind(':') + 1); };
    if (segs && (ports.count(port(src)) || ports.count(port(dst)))) on_wire[flow] = segs;
  }
  const std::string net_log =
      run({FABTRACE_CLI, "export", "kernel", s.log, "--kind", "retransmit", "--kind", "drop"}, {},
          false)
          .output;
  EXPECT_FALSE(on_wire.empty()) << "no segment was sent again on the traced link\n" << net_log;
  EXPECT_EQ(logged, on_wire) << "segments sent again per direction: the log's vs the tc "
                                "filter's; the log's network events:\n"
                             << net_log << snmp.output;
  EXPECT_LE(wire_total, retrans_segs) << snmp.output;
}

// A session restricted to some processes (--only-pids --pid) attaches its USDT
// probes to those only: a preloaded process started beside it sees no session,
// so it samples its NIC counters itself and writes its own series.
TEST(Record, OnlyPidsSessionIsInvisibleToOtherProcesses) {
  REQUIRE_SESSION_SLOT();
  const std::string dir = make_temp_dir("rec-only");
  // The one traced process: the preload mapped, never active (sleep).
  const int traced = spawn({"sleep", "120"}, {}, dir + "/sleep.log", true);
  ASSERT_GT(traced, 0);
  ASSERT_TRUE(eventually([&] {
    return slurp("/proc/" + std::to_string(traced) + "/maps").find("libfabtrace") !=
           std::string::npos;
  }));
  const int rec = start_record(dir, "record.log", {"--only-pids", "--pid", std::to_string(traced)},
                               "attach points attached");
  ASSERT_GT(rec, 0) << slurp(dir + "/record.log");

  FakeCxiTree tree;
  tree.populate_standard();
  const std::string run_dir = make_temp_dir("rec-only-run");
  SampleStepper stepper(tree, tree.telemetry_path("cxi0", "hni_sts_tx_ok_octets"), 4,
                        run_dir + "/release");
  ASSERT_TRUE(stepper.watching()) << stepper.error();
  const RunResult r = run_sampled_tagged(tree, stepper, run_dir, 100);
  kill(rec, SIGINT);
  const int rec_rc = wait_for(rec, 120);
  kill(traced, SIGKILL);
  wait_for(traced, 30);
  ASSERT_EQ(rec_rc, 0) << slurp(dir + "/record.log");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("a fabtrace record session is attached"), std::string::npos) << r.output;
  EXPECT_EQ(stepper.steps_taken(), 4);  // the ranks' own samplers read the tree
  EXPECT_EQ(list_files(run_dir, "fabtrace_nic.", ".csv").size(), 2u) << r.output;
}

// Under a `--raw all` session, starts the process `argv_of(go, release)`
// (without the preload): it maps no libfabric until DIR/go exists, which is
// made 9 s on, when the scan's own rechecks of it are seconds apart (0.5, 1, 2,
// 4, 8 s: the next one 6 s later); then it waits for DIR/release in 5 ms
// sleeps. Whether it was traced (off-CPU intervals of its own in the log)
// within 4 s of `go`; "" or what went wrong in *why.
bool traced_soon_after_go(
    const std::string& tag,
    const std::function<std::vector<std::string>(const std::string&, const std::string&)>& argv_of,
    std::string* why) {
  const std::string dir = make_temp_dir(tag);
  const int rec = start_record(dir, "record.log", {"--raw", "all"}, "attach points attached");
  if (rec <= 0) {
    *why = slurp(dir + "/record.log");
    return false;
  }
  const std::string go = dir + "/go", release = dir + "/release";
  const int app = spawn(argv_of(go, release), {}, dir + "/app.log", false);
  std::this_thread::sleep_for(std::chrono::seconds(9));
  const std::string log = kernel_log_of(dir);
  auto seen = [&] {
    for (const Event& e : export_kernel(log, nullptr, "offcpu"))
      if (static_cast<int>(e.pid) == app) return true;
    return false;
  };
  const bool early = seen();
  std::ofstream(go).put('x');
  const bool traced = eventually(seen, 4);
  std::ofstream(release).put('x');
  const int app_rc = wait_for(app, 120);
  kill(rec, SIGINT);
  const int rec_rc = wait_for(rec, 120);
  if (early) *why = "traced before it mapped libfabric";
  if (app_rc != 0) *why = "the process failed: " + slurp(dir + "/app.log");
  if (rec_rc != 0) *why = "the session failed: " + slurp(dir + "/record.log");
  if (!traced && why->empty()) *why = "pid " + std::to_string(app) + " not traced within 4 s";
  return traced && why->empty();
}

// A process the scan already knew, without libfabric, that execs into a
// libfabric program keeps its pid: the kernel tells the collector of the exec,
// and the process is traced at the next scan.
TEST(Record, AProcessThatExecsIntoLibfabricIsTracedAtTheNextScan) {
  REQUIRE_SESSION_SLOT();
  std::string why;
  EXPECT_TRUE(traced_soon_after_go(
      "rec-exec",
      [](const std::string& go, const std::string& release) {
        return std::vector<std::string>{
            "sh",
            "-c",
            "while [ ! -e '" + go + "' ]; do sleep 0.2; done; exec \"$0\" \"$@\"",
            FT_APP,
            "--prov",
            "tcp;ofi_rxm",
            "--test",
            "tagged",
            "--count",
            "100",
            "--timeout",
            "100",
            "--hold-until",
            release};
      },
      &why))
      << why;
}

// One that loads libfabric late, as MPI does (dlopen), without an exec: the
// kernel tells the collector of the library mapped executable.
TEST(Record, AProcessThatLoadsLibfabricLateIsTracedAtTheNextScan) {
  REQUIRE_SESSION_SLOT();
  std::string why;
  EXPECT_TRUE(traced_soon_after_go(
      "rec-dlopen",
      [](const std::string& go, const std::string& release) {
        return std::vector<std::string>{
            "python3", "-c",
            "import ctypes, os, sys, time\n"
            "while not os.path.exists(sys.argv[1]): time.sleep(0.2)\n"
            "ctypes.CDLL('libfabric.so.1')\n"
            "while not os.path.exists(sys.argv[2]): time.sleep(0.005)\n",
            go, release};
      },
      &why))
      << why;
}

// The node's Cassini counters are sampled once, by the session, for every device;
// the preloads see the session and leave theirs alone; the report shows the
// node's series with the host's ranks. The fake tree moves one step per read of
// the session's sampler (SampleStepper), and the ranks run until it has seen 8.
TEST(Record, NodeCountersSampledOnceForTheNode) {
  REQUIRE_SESSION_SLOT();
  FakeCxiTree tree;
  tree.populate_standard();
  const std::string stop_dir = make_temp_dir("rec-nic-stop");
  SampleStepper stepper(tree, tree.telemetry_path("cxi1", "hni_sts_tx_ok_octets"), 8,
                        stop_dir + "/stop");
  ASSERT_TRUE(stepper.watching()) << stepper.error();
  StreamSession s("rec-nic", {}, {"--count", "1000000"},
                  {{"FABTRACE_CXI_SYSFS_ROOT", tree.sysfs_root()},
                   {"FABTRACE_CXI_RUN_ROOT", tree.run_root()},
                   {"FABTRACE_NIC_MS", "5"}},
                  stepper.release_path());  // the stream stops once 8 reads were seen
  ASSERT_EQ(wait_for(s.record, 240), 0) << s.record_log();
  EXPECT_EQ(stepper.steps_taken(), 8);

  const auto node = list_files(s.dir, "fabtrace_nic.", ".csv");
  ASSERT_EQ(node.size(), 1u) << "one series for the node, none from the ranks\n" << s.record_log();
  EXPECT_NE(node[0].find(".node.p"), std::string::npos) << node[0];
  std::ifstream in(node[0]);
  std::stringstream csv;
  csv << in.rdbuf();
  EXPECT_NE(csv.str().find(" devices=cxi0,cxi1 "), std::string::npos)  // every device of the node
      << csv.str().substr(0, 400);

  const RunResult rep =
      run({FABTRACE_CLI, "report", s.dir, "-o", s.dir + "/out", "--no-trace"}, {}, false);
  ASSERT_EQ(rep.exit_code, 0) << rep.output;
  EXPECT_EQ(rep.output.find("fabtrace_nic."), std::string::npos)
      << "the node's series was skipped:\n"
      << rep.output;
  std::ifstream h(s.dir + "/out/report.html");
  std::stringstream html;
  html << h.rdbuf();
  EXPECT_NE(html.str().find("class=\"chart line-chart\""), std::string::npos) << "no counter plot";
}

// --polls: every poll handed to the kernel in the preload's runs of polls.
// Three counts of rank 0's polls agree exactly: the program's own (ft_app
// counts its fi_cq_read calls), the preload's, and the kernel log's poll
// records' polls; each run ends at the one poll of it that found something, or
// after 1 ms of empty polls, and a thread's runs follow one another.
TEST(Record, PollsCountedInTheKernelAgreeWithTheProgram) {
  REQUIRE_SESSION_SLOT();
  StreamSession s("rec-polls", {}, {"--count", "2000"}, {}, "", {"--polls"});
  ASSERT_EQ(wait_for(s.record, 240), 0) << s.record_log();
  const auto reps = reports_of_rank(s.dir, "0");
  ASSERT_EQ(reps.size(), 1u);
  const uint32_t pid = reps[0].at("pid").get<uint32_t>();
  uint64_t preload = 0;
  for (const auto& cq : reps[0].at("cqs")) preload += cq.at("polls").get<uint64_t>();
  // The program's own count, from its result line on stdout.
  const std::string log = s.record_log();
  uint64_t own = 0;
  for (size_t at = log.find("\"rank\":0,"); at != std::string::npos;) {
    const size_t c = log.find("\"cq_polls\":", at);
    if (c != std::string::npos) own = std::stoull(log.substr(c + 11));
    break;
  }
  s.log = kernel_log_of(s.dir);
  uint64_t kernel = 0, runs = 0, found = 0, short_empty = 0;
  std::map<std::pair<uint32_t, uint64_t>, uint64_t> last_end;  // (tid, cq) -> end
  for (const Event& e : export_kernel(s.log)) {
    if (e.kind != "poll" || e.pid != pid) continue;
    ++runs;
    kernel += e.num("polls");
    const int64_t ret = std::stoll(e.detail.at("ret"));
    found += ret > 0;
    // Only the last poll of a run finds something; an empty run is cut at 1 ms,
    // or it is the thread's last one of that CQ (handed over at the close).
    if ((ret == -FI_EAGAIN || ret == 0) && e.dur < 999000) ++short_empty;
    EXPECT_LE(e.num("busy_ns"), e.dur);
    EXPECT_GE(e.num("polls"), 1u);
    uint64_t& prev = last_end[{e.tid, e.num("cq")}];
    EXPECT_LE(prev, e.start) << "runs of one thread and CQ overlap";
    prev = e.start + e.dur;
  }
  EXPECT_GT(own, 0u) << log;
  EXPECT_EQ(preload, own);
  EXPECT_EQ(kernel, own);
  EXPECT_LT(runs, kernel) << "no run of more than one poll";
  EXPECT_LE(short_empty, last_end.size());
  EXPECT_GT(found, 0u);
}

// The application's phase marks (include/fabtrace.h) reach the session through
// their USDT probes: per rank, the kernel log holds the very calls ft_app's
// marks family makes (tests/apps/family_marks.cpp: "iteration i", begin
// "exchange", end, ..., "done"), in order, on the calling thread; and every op
// the session saw (FABTRACE_SLOW_OP_US=1: each op of at least 1 us) lies inside
// one of that thread's "exchange" phases, as many per phase as the program
// issued at most.
TEST(Record, MarksSeenByTheSession) {
  REQUIRE_SESSION_SLOT();
  constexpr int kIterations = 6;
  const std::string dir = make_temp_dir("rec-marks");
  const int rec = spawn({FABTRACE_CLI, "record", "-o", dir, "--", FT_APP, "--prov", "tcp;ofi_rxm",
                         "--test", "marks", "--count", std::to_string(kIterations)},
                        {{"FABTRACE_PRELOAD", preload_list()}, {"FABTRACE_SLOW_OP_US", "1"}},
                        dir + "/record.log", false);
  ASSERT_EQ(wait_for(rec, 240), 0) << slurp(dir + "/record.log");
  const std::vector<Event> ev = export_kernel(kernel_log_of(dir));
  for (const char* rank : {"0", "1"}) {
    SCOPED_TRACE(std::string("rank ") + rank);
    const auto reps = reports_of_rank(dir, rank);
    ASSERT_EQ(reps.size(), 1u);
    const uint32_t pid = reps[0].at("pid").get<uint32_t>();
    std::vector<std::string> want, got;
    for (int i = 0; i < kIterations; ++i) {
      want.push_back("mark iteration " + std::to_string(i));
      want.push_back("begin exchange");
      want.push_back("end ");
    }
    want.push_back("mark done");
    std::vector<const Event*> marks;
    for (const Event& e : ev)
      if (e.kind == "mark" && e.pid == pid) marks.push_back(&e);
    for (const Event* m : marks) got.push_back(m->detail.at("type") + " " + m->cause);
    ASSERT_EQ(got, want);
    for (size_t i = 1; i < marks.size(); ++i) {
      EXPECT_LE(marks[i - 1]->ts, marks[i]->ts);
      EXPECT_EQ(marks[i]->tid, marks[0]->tid);  // the rank's main thread
    }
    // Each op the session saw, inside one phase [begin, end] of its thread.
    std::vector<size_t> per_phase(kIterations, 0);
    size_t ops = 0;
    for (const Event& e : ev) {
      if (e.kind != "slow_op" || e.pid != pid) continue;
      ++ops;
      bool inside = false;
      for (int i = 0; i < kIterations; ++i) {
        const Event& b = *marks[3 * i + 1];
        const Event& end = *marks[3 * i + 2];
        if (e.start >= b.ts && e.start + e.dur <= end.ts) {
          ++per_phase[i];
          inside = true;
        }
      }
      EXPECT_TRUE(inside) << "op " << e.detail.at("op") << " at " << e.start << " +" << e.dur;
    }
    EXPECT_GT(ops, 0u);
    // Iteration i: i % 3 + 1 sends and one receive on rank 0, as many receives
    // and one send on rank 1.
    for (int i = 0; i < kIterations; ++i) EXPECT_LE(per_phase[i], size_t(i % 3 + 2)) << i;
  }
}

TEST(Record, NotRootGetsOneClearLine) {
  REQUIRE_ROOT();  // to become someone else
  const std::string parent = make_temp_dir("rec-nobody");
  chmod(parent.c_str(), 0777);
  const std::string dir = parent + "/out";  // refused before anything is created
  const RunResult r = run({"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                           FABTRACE_CLI, "record", "-o", dir, "--duration", "1"},
                          {}, false);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("needs root"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("fabtrace run"), std::string::npos) << r.output;  // what still works
  size_t lines = 0;
  for (char c : r.output) lines += c == '\n';
  EXPECT_EQ(lines, 1u) << r.output;
  struct stat st;
  EXPECT_NE(::stat(dir.c_str(), &st), 0) << dir << " was created before the refusal";
}

}  // namespace
}  // namespace fabtrace::test
