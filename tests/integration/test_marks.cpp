// Phase marks and the capture window on real providers: ft_app's "marks"
// family (tests/apps/family_marks.cpp) runs iterations of known ops between
// fabtrace_mark()s; what the preload wrote is read back from the oplogs.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "common/oplog_file.h"
#include "tests/integration/harness.h"

namespace fabtrace::test {
namespace {

constexpr size_t kIterations = 6;

// What ft_app's marks family sends in iteration i (tests/apps/family_marks.cpp).
size_t sends_in(size_t i) { return i % 3 + 1; }

struct Oplog {
  std::vector<oplog::OpEntry> ops, marks;
  std::map<uint32_t, std::string> names;
  OplogCaptureSpec capture;
  uint64_t outside = 0;
  std::string op_name(const oplog::OpEntry& e) const {
    return e.kind < op_names.size() ? op_names[e.kind] : "?";
  }
  std::vector<std::string> op_names;
  // Mark times by name (instants only).
  std::map<std::string, uint64_t> mark_at() const {
    std::map<std::string, uint64_t> m;
    for (const auto& e : marks)
      if (e.kind == oplog::kMarkInstant) m[names.at(e.link_id)] = e.start_ticks;
    return m;
  }
};

Oplog read_oplog(const std::string& dir, const std::string& rank) {
  Oplog o;
  for (const auto& f : list_files(dir, "fabtrace_ops.", ".oplog")) {
    if (f.find(".r" + rank + ".p") == std::string::npos) continue;
    OplogReader r;
    std::string err;
    EXPECT_TRUE(r.open(f, &err)) << err;
    EXPECT_TRUE(r.read_all(
        [&](const oplog::OpEntry* e, size_t n) { o.ops.insert(o.ops.end(), e, e + n); },
        [&](const oplog::OpEntry* e, size_t n) { o.marks.insert(o.marks.end(), e, e + n); }, &err))
        << err;
    EXPECT_TRUE(r.has_end()) << f;
    o.names = r.mark_names();
    o.capture = r.capture();
    o.outside = r.end_outside_capture();
    o.op_names = r.header().op_names;
  }
  return o;
}

RunResult run_marks(const std::string& dir, const std::string& prov, const Env& extra,
                    const std::vector<std::string>& more = {}) {
  std::vector<std::string> argv = {
      FT_APP, "--prov", prov, "--test", "marks", "--count", std::to_string(kIterations)};
  argv.insert(argv.end(), more.begin(), more.end());
  Env env = {{"FABTRACE_DIR", dir}, {"FABTRACE_OPS_RANKS", "all"}, {"FABTRACE_OPS_MIN_BYTES", "0"}};
  env.insert(env.end(), extra.begin(), extra.end());
  return run(argv, env, true, 240);
}

// The iteration an op belongs to: the last "iteration i" mark at or before its
// start; its end must come before the next iteration's mark (or "done").
int iteration_of(const std::map<std::string, uint64_t>& at, const oplog::OpEntry& op) {
  for (size_t i = 0; i < kIterations; ++i) {
    const uint64_t from = at.at("iteration " + std::to_string(i));
    const std::string next = i + 1 < kIterations ? "iteration " + std::to_string(i + 1) : "done";
    const uint64_t to = at.at(next);
    if (op.start_ticks >= from && op.end_ticks <= to) return static_cast<int>(i);
  }
  return -1;
}

class Marks : public ::testing::TestWithParam<std::string> {};

// Every op lies between the mark of its iteration and the next, inside the
// "exchange" phase, and each iteration holds what the program issued in it.
TEST_P(Marks, LandBetweenTheRightOps) {
  const std::string dir = make_temp_dir("marks");
  const RunResult r = run_marks(dir, GetParam(), {});
  if (r.output.find("SKIP:") != std::string::npos) GTEST_SKIP() << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const std::string rank : {"0", "1"}) {
    SCOPED_TRACE("rank " + rank);
    const Oplog o = read_oplog(dir, rank);
    const auto at = o.mark_at();
    ASSERT_EQ(at.size(), kIterations + 1);  // "iteration 0" .. "iteration 5", "done"
    // Marks in time order, all from the thread that issued the ops.
    uint64_t prev = 0;
    size_t begins = 0, ends = 0;
    for (const auto& m : o.marks) {
      EXPECT_GE(m.start_ticks, prev);
      prev = m.start_ticks;
      begins += m.kind == oplog::kPhaseBegin;
      ends += m.kind == oplog::kPhaseEnd;
      if (m.kind == oplog::kPhaseBegin) {
        EXPECT_EQ(o.names.at(m.link_id), "exchange");
      }
      EXPECT_NE(m.kind, oplog::kCaptureOn);  // no window: no capture change
    }
    EXPECT_EQ(begins, kIterations);
    EXPECT_EQ(ends, kIterations);
    std::map<int, std::map<std::string, size_t>> per_iter;
    for (const auto& op : o.ops) {
      const int i = iteration_of(at, op);
      EXPECT_GE(i, 0) << o.op_name(op) << " at " << op.start_ticks << ".." << op.end_ticks;
      ++per_iter[i][o.op_name(op)];
      EXPECT_EQ(op.tid, o.marks.front().tid);
    }
    for (size_t i = 0; i < kIterations; ++i) {
      SCOPED_TRACE("iteration " + std::to_string(i));
      const auto& n = per_iter[static_cast<int>(i)];
      const std::string many = rank == "0" ? "fi_tsend" : "fi_trecv";
      const std::string one = rank == "0" ? "fi_trecv" : "fi_tsend";
      EXPECT_EQ(n.count(many) ? n.at(many) : 0u, sends_in(i));
      EXPECT_EQ(n.count(one) ? n.at(one) : 0u, 1u);
    }
  }
}

// FABTRACE_OPS_WINDOW=mark:iteration 2: each rank's timeline holds exactly
// that iteration's ops; the others are counted outside the window.
TEST_P(Marks, MarkWindowCapturesThatIteration) {
  const std::string dir = make_temp_dir("marks-win");
  const RunResult r = run_marks(dir, GetParam(), {{"FABTRACE_OPS_WINDOW", "mark:iteration 2"}});
  if (r.output.find("SKIP:") != std::string::npos) GTEST_SKIP() << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  size_t total = 0;
  for (size_t i = 0; i < kIterations; ++i) total += sends_in(i) + 1;
  for (const std::string rank : {"0", "1"}) {
    SCOPED_TRACE("rank " + rank);
    const Oplog o = read_oplog(dir, rank);
    EXPECT_EQ(o.capture.spec, "mark:iteration 2");
    const auto at = o.mark_at();
    EXPECT_EQ(o.ops.size(), sends_in(2) + 1);
    for (const auto& op : o.ops) EXPECT_EQ(iteration_of(at, op), 2);
    EXPECT_EQ(o.outside, total - o.ops.size());
    // The capture went on at the mark and off at the next.
    std::vector<std::pair<int, uint64_t>> cap;
    for (const auto& m : o.marks)
      if (m.kind == oplog::kCaptureOn || m.kind == oplog::kCaptureOff)
        cap.emplace_back(m.kind, m.start_ticks);
    ASSERT_EQ(cap.size(), 2u);
    EXPECT_EQ(cap[0], std::make_pair(static_cast<int>(oplog::kCaptureOn), at.at("iteration 2")));
    EXPECT_EQ(cap[1], std::make_pair(static_cast<int>(oplog::kCaptureOff), at.at("iteration 3")));
  }
}

std::string provider_name(const ::testing::TestParamInfo<std::string>& p) {
  return test_name(p.param);
}
INSTANTIATE_TEST_SUITE_P(Providers, Marks, ::testing::Values("tcp;ofi_rxm", "shm"), provider_name);

std::vector<int> iterations_logged(const Oplog& o) {
  const auto at = o.mark_at();
  std::vector<int> its;
  for (const auto& op : o.ops) {
    const int i = iteration_of(at, op);
    if (its.empty() || its.back() != i) its.push_back(i);
  }
  std::sort(its.begin(), its.end());
  its.erase(std::unique(its.begin(), its.end()), its.end());
  return its;
}

// SIGUSR2 toggles the capture: rank 0 raises it before iterations 2 and 4,
// so its timeline holds iterations 0, 1, 4, 5; rank 1 (no signal) all of them.
TEST(MarksSignal, TogglesTheCapture) {
  const std::string dir = make_temp_dir("marks-sig");
  const RunResult r = run_marks(dir, "tcp;ofi_rxm", {}, {"--toggle-at", "2,4"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Oplog o0 = read_oplog(dir, "0");
  EXPECT_EQ(o0.capture.signal, "SIGUSR2");
  EXPECT_EQ(iterations_logged(o0), (std::vector<int>{0, 1, 4, 5}));
  EXPECT_EQ(o0.outside, sends_in(2) + 1 + sends_in(3) + 1);
  std::vector<int> kinds;
  for (const auto& m : o0.marks)
    if (m.kind == oplog::kCaptureOn || m.kind == oplog::kCaptureOff) kinds.push_back(m.kind);
  EXPECT_EQ(kinds, (std::vector<int>{oplog::kCaptureOff, oplog::kCaptureOn}));
  const Oplog o1 = read_oplog(dir, "1");
  EXPECT_EQ(iterations_logged(o1), (std::vector<int>{0, 1, 2, 3, 4, 5}));

  // The report says what each timeline covers, and draws the marks.
  const RunResult rep = run({FABTRACE_CLI, "report", dir, "-o", dir + "/out"}, {}, false);
  ASSERT_EQ(rep.exit_code, 0) << rep.output;
  // Rank 1 whole; rank 0 from its start to the first toggle, then from the second on.
  EXPECT_NE(
      rep.output.find("timeline  1 rank the whole run (" + std::to_string(o1.ops.size()) +
                      " ops), " + std::to_string(o0.marks.size() - 2 + o1.marks.size()) + " marks"),
      std::string::npos)
      << rep.output;
  const std::string host = reports_of_rank(dir, "0").at(0).at("host").get<std::string>();
  const std::string r0 = host + " r0: toggled by SIGUSR2, captured t+";
  const size_t at = rep.output.find(r0);
  ASSERT_NE(at, std::string::npos) << rep.output;
  const std::string line = rep.output.substr(at, rep.output.find('\n', at) - at);
  EXPECT_NE(line.find(" .. end s; " + std::to_string(o0.ops.size()) + " ops, " +
                      std::to_string(o0.outside) + " outside"),
            std::string::npos)
      << line;
  EXPECT_EQ(std::count(line.begin(), line.end(), ','), 4) << line;  // two spans
}

// A program that handles SIGUSR2 itself keeps it: no toggle is installed (one
// line says so), the program's handler gets the signals, the timeline is whole.
TEST(MarksSignal, LeftAloneWhenTheProgramHandlesIt) {
  const std::string dir = make_temp_dir("marks-own");
  const RunResult r = run_marks(dir, "tcp;ofi_rxm", {}, {"--toggle-at", "2,4", "--own-usr2", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("SIGUSR2 not used: the application handles it"), std::string::npos)
      << r.output;
  const Oplog o0 = read_oplog(dir, "0");
  EXPECT_EQ(o0.capture.signal, "SIGUSR2 not used: the application handles it");
  EXPECT_EQ(iterations_logged(o0), (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(o0.outside, 0u);
}

// FABTRACE_OPS_SIGNAL=none: no toggle; a bad FABTRACE_OPS_WINDOW gets one
// warning and the whole run.
TEST(MarksSignal, NoneAndBadWindow) {
  const std::string dir = make_temp_dir("marks-none");
  const RunResult r = run_marks(dir, "tcp;ofi_rxm",
                                {{"FABTRACE_OPS_SIGNAL", "none"}, {"FABTRACE_OPS_WINDOW", "soon"}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("FABTRACE_OPS_WINDOW=soon"), std::string::npos) << r.output;
  const Oplog o0 = read_oplog(dir, "0");
  EXPECT_EQ(o0.capture.signal, "none");
  EXPECT_EQ(o0.capture.spec, "");
  EXPECT_EQ(iterations_logged(o0), (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

// START[:DURATION]: an hour after the start captures nothing of this run.
TEST(MarksWindow, TimeWindowAfterTheRun) {
  const std::string dir = make_temp_dir("marks-time");
  const RunResult r = run_marks(dir, "tcp;ofi_rxm", {{"FABTRACE_OPS_WINDOW", "3600:10"}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Oplog o0 = read_oplog(dir, "0");
  EXPECT_EQ(o0.capture.spec, "3600:10");
  EXPECT_TRUE(o0.ops.empty());
  size_t total = 0;
  for (size_t i = 0; i < kIterations; ++i) total += sends_in(i) + 1;
  EXPECT_EQ(o0.outside, total);
  EXPECT_EQ(o0.mark_at().size(), kIterations + 1);  // marks are kept whatever the window
}

// Without the tracer the marks resolve to nothing: the program runs as usual.
TEST(MarksWindow, ProgramRunsWithoutTheTracer) {
  const RunResult r = run({FT_APP, "--prov", "tcp;ofi_rxm", "--test", "marks", "--count", "3"}, {},
                          /*preload=*/false);
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// examples/marks_example.c (C, include/fabtrace.h, no tracer linked) on a real
// provider: the window on its fourth iteration keeps that iteration's send and
// receive, between the iteration's mark and the next.
TEST(MarksExample, WindowOnAMarkedIteration) {
  const std::string dir = make_temp_dir("marks-example");
  const RunResult r =
      run({MARKS_EXAMPLE, "tcp;ofi_rxm", "6"}, {{"FABTRACE_DIR", dir},
                                                {"FABTRACE_OPS_RANKS", "all"},
                                                {"FABTRACE_OPS_MIN_BYTES", "0"},
                                                {"FABTRACE_OPS_WINDOW", "mark:iteration 3"}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Oplog o = read_oplog(dir, "NA");
  const auto at = o.mark_at();
  ASSERT_EQ(at.size(), 7u) << r.output;
  ASSERT_EQ(o.ops.size(), 2u);
  std::vector<std::string> ops;
  for (const auto& op : o.ops) {
    ops.push_back(o.op_name(op));
    EXPECT_GE(op.start_ticks, at.at("iteration 3"));
    EXPECT_LE(op.end_ticks, at.at("iteration 4"));
  }
  std::sort(ops.begin(), ops.end());
  EXPECT_EQ(ops, (std::vector<std::string>{"fi_trecv", "fi_tsend"}));
  EXPECT_EQ(o.outside, 10u);
}

}  // namespace
}  // namespace fabtrace::test
