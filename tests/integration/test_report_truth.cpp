// `fabtrace report` against what the traced programs did: every figure these
// tests look at is held to the program's own ground truth or to the ranks'
// own reports, on real providers.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <string>

#include "tests/integration/harness.h"

namespace fabtrace::test {
namespace {

// The part of the summary from a heading line to the next heading (a line
// that does not start with a blank).
std::string section(const std::string& summary, const std::string& heading) {
  const size_t at = summary.find("\n" + heading);
  if (at == std::string::npos) return "";
  size_t end = at + 1;
  while ((end = summary.find('\n', end)) != std::string::npos) {
    ++end;
    if (end < summary.size() && summary[end] != ' ') break;
  }
  return summary.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
}

// "1234567" -> "1,234,567", as the summary prints counts.
std::string with_commas(uint64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

// <tr> rows in the body of the HTML table with this id.
size_t table_rows(const std::string& html, const std::string& id) {
  const size_t at = html.find("<table id=\"" + id + "\"");
  if (at == std::string::npos) return 0;
  const size_t body = html.find("<tbody>", at);
  const size_t end = html.find("</tbody>", body);
  size_t n = 0;
  for (size_t p = html.find("<tr", body); p < end; p = html.find("<tr", p + 3)) ++n;
  return n;
}

// Ops untimed by design (injects: no completion will come) are a count in the
// summary, not rows of the problems: on tcp;ofi_rxm every inject row used to
// be listed under "problems", in the summary and in report.html.
TEST(ReportTruth, OpsUntimedByDesignAreACountNotAProblem) {
  const std::string dir = make_temp_dir("truth-inject");
  const RunResult r =
      run({FT_APP, "--prov", "tcp;ofi_rxm", "--test", "inject", "--result", dir + "/app"},
          {{"FABTRACE_DIR", dir}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  uint64_t untimed = 0, no_completion = 0, problem_rows = 0;
  for (const std::string rank : {"0", "1"}) {
    const auto app = load_json(dir + "/app.r" + rank + ".json");
    for (const auto& kv : app.at("no_completion").items())
      no_completion += kv.value().get<uint64_t>();
    for (const auto& rep : reports_of_rank(dir, rank))
      for (const auto& l : rep.at("links"))
        for (const auto& o : l.at("ops")) {
          untimed += o.at("untimed").get<uint64_t>();
          if (o.at("errors").get<uint64_t>() || o.at("eagain").get<uint64_t>() ||
              o.at("refused").get<uint64_t>() || o.at("ring_full").get<uint64_t>() ||
              o.at("unfinished").get<uint64_t>())
            ++problem_rows;
        }
  }
  ASSERT_GT(no_completion, 0u);
  EXPECT_GE(untimed, no_completion);

  const Cli cli = report_cli(dir, dir + "/out");
  ASSERT_EQ(cli.rc, 0) << cli.err;
  const std::string problems = section(cli.out, "problems");
  ASSERT_FALSE(problems.empty()) << cli.out;
  EXPECT_EQ(problems.find("untimed"), std::string::npos) << problems;
  EXPECT_NE(cli.out.find("untimed   " + with_commas(untimed) + " ops by design"), std::string::npos)
      << cli.out;
  // report.html's problem table: only rows with something to act on.
  EXPECT_EQ(table_rows(slurp(dir + "/out/report.html"), "problem-table"), problem_rows);
}

// One NIC per domain, however many endpoints (addresses) it has: ft_app's
// multiep family opens one domain with 4 endpoints per rank. The summary said
// "10 NICs" for its 2 ranks (each NIC's joined address list counted as one
// more NIC), and only the first of a NIC's addresses lost its scheme.
class NicCount : public ::testing::TestWithParam<const char*> {};

TEST_P(NicCount, OneNicPerDomainWhateverItsEndpoints) {
  const std::string dir = make_temp_dir("truth-nics");
  const RunResult r =
      run({FT_APP, "--prov", GetParam(), "--test", "multiep", "--result", dir + "/app"},
          {{"FABTRACE_DIR", dir}});
  if (r.exit_code == 77) GTEST_SKIP() << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  uint64_t domains = 0, endpoints = 0;
  for (const std::string rank : {"0", "1"}) {
    const auto app = load_json(dir + "/app.r" + rank + ".json");
    domains += app.at("opened").at("domains").get<uint64_t>();
    endpoints += app.at("opened").at("endpoints").get<uint64_t>();
  }
  ASSERT_EQ(domains, 2u);
  ASSERT_GT(endpoints, domains);

  const Cli cli = report_cli(dir, dir + "/out");
  ASSERT_EQ(cli.rc, 0) << cli.err;
  EXPECT_NE(cli.out.find("2 ranks, " + std::to_string(domains) + " NICs"), std::string::npos)
      << cli.out;
  const auto nics = load_json(dir + "/out/nics.json");
  EXPECT_EQ(nics.size(), domains);
  uint64_t addresses = 0;
  for (const auto& n : nics) {
    const std::string locals = n.at("locals").get<std::string>();
    addresses += 1 + static_cast<uint64_t>(std::count(locals.begin(), locals.end(), ' '));
  }
  EXPECT_EQ(addresses, endpoints);
  // Every address on a NIC line without its scheme.
  const std::string nic_lines = section(cli.out, "NIC ");
  ASSERT_FALSE(nic_lines.empty()) << cli.out;
  EXPECT_EQ(nic_lines.find("://"), std::string::npos) << nic_lines;
}

INSTANTIATE_TEST_SUITE_P(Providers, NicCount,
                         ::testing::Values("tcp;ofi_rxm", "udp;ofi_rxd", "shm", "sockets"),
                         [](const auto& p) { return test_name(p.param); });

// "Was the NIC saturated": ft_app's bw family sends one 16-byte setup message
// (in flight for milliseconds while tcp;ofi_rxm sets its connection up), then
// 200 x 4 KiB, and measures its own bandwidth over them. The whole-run
// "achieved" figure (bytes over the time with an op in flight) is dragged down
// by the setup op (0.077 GB/s against the program's 0.698 in the issue's run).
// The peak is the same figure over the NIC's fastest time window (of at most
// 10 ms): never below the whole-run figure (the windows' rates average to it),
// and at least the program's own rate: the transfer's windows hold its bytes
// in at most its busy time, which is at most the time the program measured
// (from just before its first send to the return of the poll that brought its
// last completion), so the fastest of them moved its bytes at least that fast
// (1% for two clocks: the tracer's calibrated TSC, the program's steady_clock).
// The window's bytes are the transfer's or part of them (the 30 ms of idle
// keep the setup op in another window), its busy time within its stretch,
// the stretch within 10 ms.
class NicPeak : public ::testing::TestWithParam<const char*> {};

TEST_P(NicPeak, PeakIsAtLeastAchievedAndTheProgramsOwnRate) {
  const std::string dir = make_temp_dir("truth-peak");
  const RunResult r = run({FT_APP, "--prov", GetParam(), "--test", "bw", "--count", "200", "--size",
                           "4096", "--result", dir + "/app"},
                          {{"FABTRACE_DIR", dir}});
  if (r.exit_code == 77) GTEST_SKIP() << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto app = load_json(dir + "/app.r0.json");
  const double program_gbps = app.at("measured").at("bw_MB_per_s").get<double>() / 1e3;
  ASSERT_GT(program_gbps, 0);
  const auto reps = reports_of_rank(dir, "0");
  ASSERT_EQ(reps.size(), 1u);
  ASSERT_EQ(reps[0].at("nics").size(), 1u);
  const auto& nic = reps[0].at("nics")[0];
  const double peak = nic.at("peak_gbps").get<double>();
  const double achieved = nic.at("achieved_gbps").get<double>();
  SCOPED_TRACE("program " + std::to_string(program_gbps) + " GB/s, peak " + std::to_string(peak) +
               ", achieved " + std::to_string(achieved));
  EXPECT_GE(peak, achieved);
  EXPECT_GE(peak, 0.99 * program_gbps);
  EXPECT_GT(nic.at("peak_bytes").get<uint64_t>(), 0u);
  EXPECT_LE(nic.at("peak_bytes").get<double>(), app.at("measured").at("bw_bytes").get<double>());
  EXPECT_LE(nic.at("peak_busy_ns").get<double>(), nic.at("peak_span_ns").get<double>() + 1);
  EXPECT_LE(nic.at("peak_span_ns").get<double>(), nic.at("peak_limit_ns").get<double>());
  // Bounded, and every byte in a window (one thread per NIC here: nothing unbinned).
  const auto& windows = nic.at("windows");
  EXPECT_LE(windows.size(), 4096u);
  uint64_t bytes = 0;
  for (const auto& w : windows) bytes += w.at(2).get<uint64_t>();
  EXPECT_EQ(bytes + nic.at("unbinned_bytes").get<uint64_t>(), nic.at("bytes").get<uint64_t>());

  // The summary and the Perfetto trace carry it.
  const Cli cli = report_cli(dir, dir + "/out");
  ASSERT_EQ(cli.rc, 0) << cli.err;
  EXPECT_TRUE(std::regex_search(section(cli.out, "NIC "), std::regex(" peak [0-9.]+ GB/s \\(")))
      << cli.out;
  EXPECT_NE(slurp(dir + "/out/trace.pftrace").find(" GB/s"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Providers, NicPeak,
                         ::testing::Values("tcp;ofi_rxm", "shm", "udp;ofi_rxd", "sockets"),
                         [](const auto& p) { return test_name(p.param); });

// A ping-pong's NIC rows: the peak (the same bytes-over-busy-time figure over
// the fastest window) is never below the whole-run "achieved" figure, on every
// provider (the demo printed "achieved 0.009 GB/s ... peak 0.004 GB/s" when the
// peak was bytes over a stretch's wall length: a ping-pong's idle half of every
// round trip counted against it), in the per-rank report, the summary and the
// HTML bar's label.
class NicPeakPingpong : public ::testing::TestWithParam<const char*> {};

TEST_P(NicPeakPingpong, PeakIsNeverBelowAchieved) {
  const std::string dir = make_temp_dir("truth-peak-pp");
  const RunResult r = run({FT_APP, "--prov", GetParam(), "--test", "pingpong", "--count", "300",
                           "--size", "4096", "--result", dir + "/app"},
                          {{"FABTRACE_DIR", dir}});
  if (r.exit_code == 77) GTEST_SKIP() << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  size_t nics = 0;
  for (const std::string rank : {"0", "1"})
    for (const auto& rep : reports_of_rank(dir, rank))
      for (const auto& nic : rep.at("nics")) {
        if (nic.at("ops").get<uint64_t>() == 0) continue;
        ++nics;
        const double peak = nic.at("peak_gbps").get<double>();
        const double achieved = nic.at("achieved_gbps").get<double>();
        EXPECT_GT(achieved, 0) << rank;
        EXPECT_GE(peak, achieved) << "rank " << rank << ": peak " << peak << " achieved "
                                  << achieved;
      }
  EXPECT_EQ(nics, 2u);
  const Cli cli = report_cli(dir, dir + "/out");
  ASSERT_EQ(cli.rc, 0) << cli.err;
  // Each NIC line of the summary: its peak at least its achieved figure.
  const std::regex line("  ([0-9.]+) ([GMk]?B/s)  \\(.*  peak ([0-9.]+) ([GMk]?B/s) \\(");
  const std::string lines = section(cli.out, "NIC bandwidth");
  size_t seen = 0;
  for (auto it = std::sregex_iterator(lines.begin(), lines.end(), line);
       it != std::sregex_iterator(); ++it, ++seen) {
    ASSERT_EQ((*it)[2], (*it)[4]) << (*it)[0];  // the summary prints GB/s
    EXPECT_GE(std::stod((*it)[3]), std::stod((*it)[1])) << (*it)[0];
  }
  EXPECT_EQ(seen, 2u) << lines;
  // The HTML bar's label holds both (its column's width: ReportHtml.BarValueFits).
  EXPECT_NE(slurp(dir + "/out/report.html").find(" (peak "), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Providers, NicPeakPingpong,
                         ::testing::Values("tcp;ofi_rxm", "shm", "udp;ofi_rxd", "sockets", "tcp"),
                         [](const auto& p) { return test_name(p.param); });

// "Posted late" only on evidence: ft_app's recvtiming family posts 50
// receives of 1000 B before their sends are issued (the sender waits for the
// receiver's word) and 50 of 2000 B 1 ms after (the receiver waits for the
// sender's). On a fast path the pre-posted ones also complete within 50 us of
// posting; the report used to list them as late receivers (94-98%).
class PostedLate : public ::testing::TestWithParam<const char*> {};

TEST_P(PostedLate, OnlyReceivesPostedAfterTheirSendAreLate) {
  const std::string dir = make_temp_dir("truth-late");
  const RunResult r =
      run({FT_APP, "--prov", GetParam(), "--test", "recvtiming", "--result", dir + "/app"},
          {{"FABTRACE_DIR", dir}, {"FABTRACE_OPS_RANKS", "all"}, {"FABTRACE_OPS_MIN_BYTES", "0"}});
  if (r.exit_code == 77) GTEST_SKIP() << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto app = load_json(dir + "/app.r1.json");
  const auto& truth = app.at("measured");
  const auto early = truth.at("recv_posted_before_send_1000").get<uint64_t>();
  const auto late = truth.at("recv_posted_after_send_2000").get<uint64_t>();
  ASSERT_GT(early, 0u);

  const Cli cli = report_cli(dir, dir + "/out");
  ASSERT_EQ(cli.rc, 0) << cli.err;
  uint64_t rows = 0;
  for (const auto& l : load_json(dir + "/out/links.json")) {
    if (l.at("rank") != "1" || l.at("op").get<std::string>().find("recv") == std::string::npos)
      continue;
    ++rows;
    const uint64_t bytes = l.at("bytes").get<uint64_t>();
    SCOPED_TRACE(l.dump());
    if (bytes == 1000) {
      EXPECT_EQ(l.at("posted_matched").get<uint64_t>(), early);
      EXPECT_EQ(l.at("posted_late").get<uint64_t>(), 0u);
    } else {
      ASSERT_EQ(bytes, 2000u);
      EXPECT_EQ(l.at("posted_matched").get<uint64_t>(), late);
      EXPECT_EQ(l.at("posted_late").get<uint64_t>(), late);
      EXPECT_GE(l.at("posted_late_median_ns").get<double>(), 1e6);  // it waited 1 ms to post
    }
  }
  EXPECT_EQ(rows, 2u);
  const std::string section_late = section(cli.out, "receives posted late");
  EXPECT_NE(section_late.find("recv 2000 B"), std::string::npos) << cli.out;
  // (the slowest receives, listed elsewhere, may name either size)
  EXPECT_EQ(section_late.find("recv 1000 B"), std::string::npos) << cli.out;
}

// Without per-op timelines there is no evidence: "unknown", never "late".
TEST_P(PostedLate, UnknownWithoutTimelines) {
  const std::string dir = make_temp_dir("truth-late-none");
  const RunResult r =
      run({FT_APP, "--prov", GetParam(), "--test", "recvtiming"}, {{"FABTRACE_DIR", dir}});
  if (r.exit_code == 77) GTEST_SKIP() << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Cli cli = report_cli(dir, dir + "/out");
  ASSERT_EQ(cli.rc, 0) << cli.err;
  const std::string section_late = section(cli.out, "receives posted late");
  EXPECT_NE(section_late.find(": unknown"), std::string::npos) << cli.out;
  EXPECT_EQ(cli.out.find("recv 1000 B"), std::string::npos) << cli.out;
  EXPECT_EQ(cli.out.find("recv 2000 B"), std::string::npos) << cli.out;
  for (const auto& l : load_json(dir + "/out/links.json"))
    if (l.at("op").get<std::string>().find("recv") != std::string::npos) {
      EXPECT_EQ(l.at("posted_late").get<uint64_t>(), 0u);
      EXPECT_NE(l.at("posted_unknown").get<std::string>(), "");
    }
}

INSTANTIATE_TEST_SUITE_P(Providers, PostedLate,
                         ::testing::Values("tcp;ofi_rxm", "shm", "udp;ofi_rxd"),
                         [](const auto& p) { return test_name(p.param); });

}  // namespace
}  // namespace fabtrace::test
