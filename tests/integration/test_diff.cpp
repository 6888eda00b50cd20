// `fabtrace diff A B` against what the traced programs measured themselves,
// on real runs traced with the preload alone (no session): two runs of the
// same program are told apart on nothing; a run whose rank 0 sleeps inside
// each of its writes is flagged on that link (r0 -> r1) and its NIC only,
// with ratios that agree with the program's own timings, and the exit
// status gates on it.
#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace fabtrace::test {
namespace {

// `fabtrace ARGS...`: its exit code, stdout and stderr apart.
Cli fabtrace_cli(const std::vector<std::string>& args) {
  const std::string err_file = make_temp_dir("diff-err") + "/stderr";
  std::vector<std::string> argv = {"sh", "-c", "f=$1; shift; exec \"$0\" \"$@\" 2>\"$f\"",
                                   FABTRACE_CLI, err_file};
  argv.insert(argv.end(), args.begin(), args.end());
  const RunResult r = run(argv, {}, false, 120);
  return Cli{r.exit_code, r.output, slurp(err_file)};
}

// The lines of a section of the diff's text: the line starting with `title`,
// then the indented lines after it.
std::vector<std::string> section(const std::string& text, const std::string& title,
                                 std::string* head = nullptr) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string l;
  bool on = false;
  while (std::getline(in, l)) {
    if (!on) {
      on = l.rfind(title, 0) == 0;
      if (on && head) *head = l;
      continue;
    }
    if (l.rfind("  ", 0) != 0) break;
    out.push_back(l);
  }
  return out;
}

// A figure of a link or NIC line: "p50 24.1 us -> 4.12 ms x171" gives 171.
double ratio_of(const std::string& line, const std::string& figure) {
  const std::regex re(figure + " [^>]*-> [^x]*x([0-9.e+-]+)");
  std::smatch m;
  if (!std::regex_search(line, m, re)) return 0;
  return std::stod(m[1]);
}

// Totals per op of what both ranks issued, by the program's own count.
std::map<std::string, uint64_t> issued_by_program(const std::string& result) {
  std::map<std::string, uint64_t> by;
  for (const std::string rank : {"0", "1"}) {
    const nlohmann::json app = load_json(result + ".r" + rank + ".json");
    for (const auto& kv : app.at("issued").items()) by[kv.key()] += kv.value().get<uint64_t>();
  }
  return by;
}

std::string with_commas(uint64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

// The ops section holds each op with the program's count in both runs.
void expect_op_counts(const std::string& text, const std::map<std::string, uint64_t>& a,
                      const std::map<std::string, uint64_t>& b) {
  const std::vector<std::string> ops = section(text, "ops ");
  ASSERT_EQ(ops.size(), a.size()) << text;
  for (const auto& [op, n] : a) {
    ASSERT_TRUE(b.count(op)) << op;
    // After the mark of a changed op ("  * ") or its blanks.
    const std::string want = op + "  " + with_commas(n) + " -> " + with_commas(b.at(op));
    bool found = false;
    for (const std::string& l : ops) found |= l.size() > 4 && l.compare(4, want.size(), want) == 0;
    EXPECT_TRUE(found) << want << "\n" << text;
  }
}

// argv with both ranks on one CPU (the last this test may use): two ranks
// free to move between the 2 cores of a loaded machine changed their ops'
// times by x5 from one run to the next (whether they shared a core or not),
// on one core they stay within 10% (measured: p50 of 300 writes 7.6 to 8.1
// us over 6 runs, against 10.7 to 16.3 us unpinned).
std::vector<std::string> on_one_cpu(std::vector<std::string> argv) {
  cpu_set_t set;
  CPU_ZERO(&set);
  int cpu = 0;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpu = c;
  argv.insert(argv.begin(), {"taskset", "-c", std::to_string(cpu)});
  return argv;
}

// The threshold of the tests: above what a 2-core machine running a CI beside
// them usually does to the same run twice (a ping-pong's p99 moved by x2.2),
// far below the planted delay (milliseconds against tens of microseconds).
constexpr const char* kThreshold = "4";

// The writes family (tests/apps/family_writes.cpp): rank 0 writes to rank 1,
// then rank 1 to rank 0, each timing its own ops; with --gap rank 0 sleeps
// inside each of its writes.
struct Writes {
  std::string dir;
  // Per rank, the program's own: its writes' p50, p99 and mean, the time
  // its NIC had an op in flight, and its CQs' gaps of 1 ms or more.
  double p50[2] = {0, 0}, p99[2] = {0, 0}, mean[2] = {0, 0}, busy[2] = {0, 0};
  std::vector<uint64_t> long_gaps[2];
  std::map<std::string, uint64_t> issued;
};
constexpr int kWrites = 300;
constexpr int kGapMs = 4;
// The same-program test's writes per link: ten times more, so that a few
// scheduler slices do not make a run's mean (below) rather than its ops'
// (one 4 ms slice moves the mean of 3,000 writes of 10 us by 1.3 us). The
// planted test keeps kWrites: each of its writes sleeps kGapMs.
constexpr int kSameWrites = 3000;

// Whether a rank's mean write time is its ops', not a few preemptions': at
// most 3x its p50 by the program's own clock. One scheduler slice (4 ms)
// among 300 writes of 10 us moves the mean by 13 us, and may fall between
// the program's clock and the tracer's (the program's code before the call,
// or after the CQ read's return), where the program counts it and the tracer
// does not: two runs' tracer means then differ by what the machine did, not
// the program. Below 3x p50 in both, their ratio stays under the threshold.
bool mean_is_its_ops(const Writes& w, int rank) { return w.mean[rank] <= 3 * w.p50[rank]; }

Writes writes(const std::string& tag, int gap_ms, int count = kWrites) {
  Writes w;
  w.dir = make_temp_dir(tag);
  std::vector<std::string> argv = {FT_APP,   "--prov",   "tcp;ofi_rxm",         "--test",
                                   "writes", "--count",  std::to_string(count), "--size",
                                   "64",     "--result", w.dir + "/app"};
  if (gap_ms) argv.insert(argv.end(), {"--gap", "sleep:" + std::to_string(gap_ms)});
  const RunResult r = run(on_one_cpu(argv), {{"FABTRACE_DIR", w.dir}});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  if (r.exit_code != 0) return w;
  for (int rank = 0; rank < 2; ++rank) {
    const nlohmann::json app = load_json(w.dir + "/app.r" + std::to_string(rank) + ".json");
    const nlohmann::json& m = app.at("measured");
    w.p50[rank] = m.at("write_p50_ns").get<double>();
    w.p99[rank] = m.at("write_p99_ns").get<double>();
    w.mean[rank] = m.at("write_mean_ns").get<double>();
    w.busy[rank] = m.at("busy_ns").get<double>();
    for (const auto& cq : app.at("cqs")) w.long_gaps[rank].push_back(cq.at("long_gaps"));
  }
  w.issued = issued_by_program(w.dir + "/app");
  return w;
}

// Two runs of the same program differ by less than the threshold on every
// row, and their rows match one for one, though every address differs (the
// ports are new in each run). "The same" is the programs' own word: each
// times its own writes, and a pair whose own p50, p99, mean or NIC busy time
// moved by x3 or more on either link (a loaded 2-core machine moves a p99 by
// x8), or whose mean in either run is not its ops' (mean_is_its_ops), was set
// apart by the machine, not by the program; such a pair is run again, and
// after five the test is skipped, naming the programs' own ratios. Below x3
// the tracer's ratio stays below the threshold (each percentile within 12.5%
// of the program's: 3 * 1.125 / 0.875 < 4).
TEST(Diff, TwoRunsOfTheSameProgramDifferByLessThanTheThreshold) {
  for (int attempt = 1;; ++attempt) {
    const Writes a = writes("diff-same-a", 0, kSameWrites),
                 b = writes("diff-same-b", 0, kSameWrites);
    if (HasFailure()) return;
    std::string own;
    bool alike = true;
    for (int r = 0; r < 2; ++r) {
      const double x[] = {b.p50[r] / a.p50[r], b.p99[r] / a.p99[r], b.mean[r] / a.mean[r],
                          b.busy[r] / a.busy[r]};
      char line[128];
      std::snprintf(line, sizeof line, "%sr%d p50 x%.2f p99 x%.2f mean x%.2f busy x%.2f",
                    r ? "; " : "", r, x[0], x[1], x[2], x[3]);
      own += line;
      for (double v : x) alike = alike && v < 3 && v > 1.0 / 3;
      alike = alike && mean_is_its_ops(a, r) && mean_is_its_ops(b, r);
    }
    std::printf(
        "the programs' own ratios, B / A: %s; means over 3x p50: A r0 %d r1 %d, B r0 %d r1 %d\n",
        own.c_str(), !mean_is_its_ops(a, 0), !mean_is_its_ops(a, 1), !mean_is_its_ops(b, 0),
        !mean_is_its_ops(b, 1));
    if (!alike) {
      if (attempt == 5) GTEST_SKIP() << "five pairs set apart by the machine: " << own;
      std::printf("attempt %d: the machine set the same run apart: again\n", attempt);
      continue;
    }
    const Cli c =
        fabtrace_cli({"diff", a.dir, b.dir, "--threshold", kThreshold, "--fail-above", kThreshold});
    std::printf("%s", c.out.c_str());
    // The writes of each link, and each rank's one warm-up read (too few).
    EXPECT_NE(c.out.find("links     2 rows compared, 2 with too few ops, 0 only in A, 0 only in B"),
              std::string::npos)
        << c.out;
    EXPECT_NE(c.out.find("ranks     2 in both\n"), std::string::npos) << c.out;
    expect_op_counts(c.out, a.issued, b.issued);
    EXPECT_EQ(c.err, "");
    EXPECT_EQ(c.rc, 0) << c.out;
    EXPECT_NE(c.out.find("slower in B (receives left out): none"), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("faster in B (receives left out): none"), std::string::npos) << c.out;
    EXPECT_EQ(c.out.find("receives ("), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("NICs      achieved bandwidth (receives left out): 2 compared, none "
                         "changed"),
              std::string::npos)
        << c.out;
    EXPECT_NE(c.out.find("none above, exit 0"), std::string::npos) << c.out;
    break;
  }
}

uint64_t count_of(std::string v) {
  v.erase(std::remove(v.begin(), v.end(), ','), v.end());
  return std::stoull(v);
}

TEST(Diff, APlantedDelayIsFlaggedOnItsLinkOnlyWithTheProgramsRatio) {
  for (int attempt = 1;; ++attempt) {
    const Writes a = writes("diff-writes-a", 0), b = writes("diff-writes-b", kGapMs);
    if (HasFailure()) return;
    // The program's own ratios, B / A, per link (rank).
    const double p50_ratio[2] = {b.p50[0] / a.p50[0], b.p50[1] / a.p50[1]};
    const double p99_ratio[2] = {b.p99[0] / a.p99[0], b.p99[1] / a.p99[1]};
    const double mean_ratio[2] = {b.mean[0] / a.mean[0], b.mean[1] / a.mean[1]};
    const double busy_ratio = b.busy[0] / a.busy[0];
    std::printf(
        "program: r0 -> r1 p50 %.0f -> %.0f ns (x%.1f), mean %.0f -> %.0f ns (x%.1f), busy "
        "%.0f -> %.0f ns (x%.2f); r1 -> r0 p50 x%.2f, p99 x%.2f, mean x%.2f\n",
        a.p50[0], b.p50[0], p50_ratio[0], a.mean[0], b.mean[0], mean_ratio[0], a.busy[0], b.busy[0],
        busy_ratio, p50_ratio[1], p99_ratio[1], mean_ratio[1]);
    // The planted sleep is inside every write of rank 0's.
    ASSERT_GE(b.p50[0], kGapMs * 1e6);
    const Cli c = fabtrace_cli({"diff", a.dir, b.dir, "--threshold", kThreshold, "--fail-above",
                                kThreshold, "--html", b.dir + "/diff.html"});
    std::printf("%s", c.out.c_str());
    // The other link is unchanged by the program's own timing too, well
    // inside the threshold, and the delayed link's mean in A is its ops'
    // (mean_is_its_ops). Else the machine, not the plant, moved them: run
    // again, and after three skip naming the programs' own figures.
    const auto near_1 = [](double r) { return r < 3 && r > 1.0 / 3; };
    if (!(near_1(p50_ratio[1]) && near_1(p99_ratio[1]) && near_1(mean_ratio[1])) ||
        !mean_is_its_ops(a, 0)) {
      if (attempt == 3)
        GTEST_SKIP() << "three pairs moved by the machine (the program's own figures above)";
      std::printf("attempt %d: the machine moved the programs' own times: again\n", attempt);
      continue;
    }
    EXPECT_EQ(c.rc, 1) << c.err;
    EXPECT_EQ(c.err, "");
    // The writes of each link, and each rank's one warm-up read (too few).
    EXPECT_NE(c.out.find("links     2 rows compared, 2 with too few ops, 0 only in A, 0 only in B"),
              std::string::npos)
        << c.out;
    expect_op_counts(c.out, a.issued, b.issued);
    std::string head;
    const std::vector<std::string> slower = section(c.out, "slower in B", &head);
    ASSERT_EQ(head, "slower in B (receives left out): 1") << c.out;
    ASSERT_EQ(slower.size(), 1u) << c.out;
    EXPECT_EQ(slower[0].rfind("  r0 -> r1  fi_write 64 B  p50 ", 0), 0u) << slower[0];
    EXPECT_NE(c.out.find("faster in B (receives left out): none"), std::string::npos) << c.out;
    // The ratios against the program's. The tracer's window of an op (its
    // call to the return of the CQ read that brought its completion) is the
    // program's, a few hundred ns inside it. p50: the tracer's percentiles
    // are within 12.5% of the true value (common/histogram.h), in each run.
    // Mean (the per-op bandwidth's ratio is its inverse): exact sums.
    const double p50 = ratio_of(slower[0], "p50"), bw = ratio_of(slower[0], "bw");
    ASSERT_GT(p50, 0) << slower[0];
    ASSERT_GT(bw, 0) << slower[0];
    EXPECT_NEAR(p50 / p50_ratio[0], 1.0, 0.25) << slower[0];
    EXPECT_NEAR((1 / bw) / mean_ratio[0], 1.0, 0.15) << slower[0];
    // The NIC of that link, alone. One op at a time: its busy time is the
    // sum of the rank's ops' times (the warm-up read's too), and its
    // bandwidth's ratio the inverse of that sum's (the same bytes).
    std::string nic_head;
    const std::vector<std::string> nics = section(c.out, "NICs ", &nic_head);
    EXPECT_NE(nic_head.find(": 2 compared, 1 changed"), std::string::npos) << c.out;
    ASSERT_EQ(nics.size(), 1u) << c.out;
    EXPECT_EQ(nics[0].rfind("  r0 ", 0), 0u) << nics[0];
    const std::regex nic_re("/s x([0-9.e+-]+)  slower");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(nics[0], m, nic_re)) << nics[0];
    EXPECT_NEAR((1 / std::stod(m[1])) / busy_ratio, 1.0, 0.15) << nics[0];
    // Rank 0's CQs went without a poll for each planted sleep, in B: a gap of
    // 1 ms or more per write, as many as the program's own poll stamps count
    // (each CQ's; a gap near 1 ms may fall either side of it in each).
    size_t more = 0;
    const std::regex stall_re(
        "^  more +r0 CQ#\\d+  longest .*  gaps >= 1 ms ([0-9,]+) -> ([0-9,]+)$");
    const auto [lo, hi] = std::minmax_element(b.long_gaps[0].begin(), b.long_gaps[0].end());
    ASSERT_NE(lo, b.long_gaps[0].end());
    ASSERT_GE(*lo, static_cast<uint64_t>(kWrites));
    for (const std::string& l : section(c.out, "stalls ")) {
      std::smatch s;
      if (!std::regex_match(l, s, stall_re)) continue;
      ++more;
      EXPECT_GE(count_of(s[2]) + 3, *lo) << l;
      EXPECT_LE(count_of(s[2]), *hi + 3) << l;
    }
    EXPECT_EQ(more, b.long_gaps[0].size()) << c.out;
    // The gate: the largest slowdown is that link's; a limit above it passes.
    EXPECT_NE(c.out.find("gate      largest slowdown x"), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("(r0 -> r1  fi_write 64 B "), std::string::npos) << c.out;
    const Cli pass = fabtrace_cli({"diff", a.dir, b.dir, "--fail-above", "1000000"});
    EXPECT_EQ(pass.rc, 0) << pass.out;
    // The page holds the same row, flagged.
    const std::string html = slurp(b.dir + "/diff.html");
    EXPECT_NE(html.find("<tr class=\"hi\"><td class=\"addr\">r0</td><td class=\"addr\">r1</td>"
                        "<td>fi_write</td>"),
              std::string::npos);
    // A report directory stands for its run: the same comparison.
    ASSERT_EQ(report_cli(a.dir, a.dir + "/fabtrace-report").rc, 0);
    const Cli via = fabtrace_cli({"diff", a.dir + "/fabtrace-report", b.dir, "--threshold",
                                  kThreshold, "--fail-above", kThreshold});
    EXPECT_EQ(via.rc, 1);
    EXPECT_NE(via.err.find("is a report directory: its job is read from"), std::string::npos)
        << via.err;
    EXPECT_EQ(section(via.out, "slower in B"), slower);
    break;
  }
}

// Inputs it cannot use: exit 2 and one line, never a comparison.
TEST(Diff, UnusableInputsExit2) {
  const std::string empty = make_temp_dir("diff-empty");
  const Cli c = fabtrace_cli({"diff", empty, empty});
  EXPECT_EQ(c.rc, 2);
  EXPECT_EQ(c.out, "");
  EXPECT_NE(c.err.find("fabtrace diff: A: no usable fabtrace report"), std::string::npos) << c.err;
  const Cli missing = fabtrace_cli({"diff", empty + "/nope", empty});
  EXPECT_EQ(missing.rc, 2);
  EXPECT_EQ(fabtrace_cli({"diff", empty}).rc, 2);
  EXPECT_EQ(fabtrace_cli({"diff", empty, empty, "--fail-above", "x"}).rc, 2);
}

}  // namespace
}  // namespace fabtrace::test
