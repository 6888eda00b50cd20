// Root causes of waiting on jobs built in memory with known waits: a chain is
// followed to its first rank not itself waiting, a root's cost is the time its
// waiters waited, the kernel's record of the root names the cause, and poll
// gaps without timelines are weaker evidence, said so.
#include "userspace/report/root_causes.h"

#include <gtest/gtest.h>

#include <string>

#include "userspace/report/html_report.h"
#include "userspace/report/job.h"

namespace fabtrace::report {
namespace {

constexpr int64_t kMs = 1000000;

// n ranks of one host, pids 100 + r, monotonic = wall - 1 s.
Job ranks_job(int n) {
  Job job;
  for (int r = 0; r < n; ++r) {
    ProcessReport p;
    p.host = "h";
    p.rank = std::to_string(r);
    p.pid = 100 + r;
    p.start_mono_ns = 5000000000ULL;
    p.start_wall_ns = 6000000000ULL;
    job.ranks.push_back(make_rank(p));
  }
  build_job_tables(&job);
  job.waits.from_timelines = true;
  return job;
}

// A wait on the job's clock from monotonic times of the host; the send was
// issued 10 us before the receive completed.
Wait wait(uint32_t rank, uint32_t on, int64_t start_ms, int64_t end_ms) {
  const int64_t off = 1000000000;  // wall - mono
  return Wait{rank, on, start_ms * kMs + off, end_ms * kMs + off, end_ms * kMs + off - 10000, 8};
}

TEST(RootCauses, AChainIsFollowedToItsFirstRankNotWaiting) {
  Job job = ranks_job(3);
  // r2 late by 200 ms: r1 waited on it from 5000 to 5200 ms, r0 on r1 from
  // 5001 to 5200.05 (r1 sent on 50 us after its receive).
  job.waits.list = {wait(1, 2, 5000, 5200), wait(0, 1, 5001, 5200)};
  job.waits.list[1].end += 50000;
  const WaitAnalysis wa = analyze_waits(job);
  ASSERT_GE(wa.roots.size(), 1u);
  EXPECT_EQ(wa.roots[0].rank, 2u);
  EXPECT_EQ(wa.roots[0].cost_ns, 200 * kMs + 199 * kMs);
  EXPECT_EQ(wa.roots[0].by_waiter.at(1), 200 * kMs);
  EXPECT_EQ(wa.roots[0].by_waiter.at(0), 199 * kMs);
  EXPECT_EQ(wa.roots[0].waits, 2u);
  EXPECT_EQ(wa.roots[0].cause, "late to post (no kernel log of its node)");
  // r1's own 50 us between receiving and sending on: a root of its own, under
  // the threshold.
  ASSERT_EQ(wa.roots.size(), 2u);
  EXPECT_EQ(wa.roots[1].rank, 1u);
  EXPECT_EQ(wa.roots[1].cost_ns, 50000);
  // The costs add up to the waits.
  EXPECT_EQ(wa.roots[0].cost_ns + wa.roots[1].cost_ns,
            job.waits.list[0].length() + job.waits.list[1].length());
  EXPECT_EQ(wa.matrix.at({0u, 1u}), job.waits.list[1].length());
  const std::string text = root_causes_text(job, wa, 10);
  EXPECT_NE(
      text.find("  h r2  cost 399.0 ms in 2 waits (h r1 200.0 ms, h r0 199.0 ms): late to post"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("(1 root under 1.00 ms, 50.0 us in all)"), std::string::npos) << text;
}

TEST(RootCauses, TheKernelRecordOfTheRootNamesTheCauseAndTheStallSaysWhom) {
  Job job = ranks_job(2);
  job.waits.list = {wait(0, 1, 5000, 5200)};
  KernelNode n;
  n.host = "h";
  KernelWindow w;
  w.pid = 101;
  w.w.start = 4999 * kMs;  // monotonic
  w.w.end = 5201 * kMs;
  w.verdict = "stopped (SIGSTOP or a debugger) for 200.0 of 202.0 ms";
  n.stalls.push_back(w);
  job.kernel.push_back(n);
  // r0's poll gap over its wait.
  Stall st;
  st.host = "h";
  st.rank = "0";
  st.pid = 100;
  st.cq.max_gap_ns = 201.5 * kMs;
  st.end_mono_ns = 5201 * kMs;
  job.stalls.push_back(st);
  const WaitAnalysis wa = analyze_waits(job);
  ASSERT_EQ(wa.roots.size(), 1u);
  EXPECT_EQ(wa.roots[0].cause, w.verdict);
  EXPECT_EQ(
      stall_wait_text(job, wa, 0),
      "      waiting for h r1 (h r1 stopped (SIGSTOP or a debugger) for 200.0 of 202.0 ms)\n");
}

TEST(RootCauses, NoWaitsNoSection) {
  Job job = ranks_job(2);
  const WaitAnalysis wa = analyze_waits(job);
  EXPECT_TRUE(wa.roots.empty());
  EXPECT_EQ(root_causes_text(job, wa, 10), "");
}

TEST(RootCauses, WithoutTimelinesOverlappingGapsOfLinkedRanksAreWeakerEvidence) {
  Job job = ranks_job(2);
  job.waits.from_timelines = false;
  LinkRow a(intern_owner("h", "0", 100), intern("A"), intern("B"), intern("fi_tsend"));
  LinkRow b(intern_owner("h", "1", 101), intern("B"), intern("A"), intern("fi_tsend"));
  job.links = {a, b};
  Stall s0, s1;
  s0.host = s1.host = "h";
  s0.rank = "0", s0.pid = 100;
  s1.rank = "1", s1.pid = 101;
  s0.cq.max_gap_ns = 200 * kMs;
  s0.end_mono_ns = 5200 * kMs;
  s1.cq.max_gap_ns = 202 * kMs;
  s1.end_mono_ns = 5201 * kMs;
  job.stalls = {s1, s0};
  const WaitAnalysis wa = analyze_waits(job);
  ASSERT_EQ(wa.roots.size(), 1u);
  EXPECT_TRUE(wa.roots[0].weak);
  EXPECT_EQ(wa.roots[0].rank, 1u);
  EXPECT_EQ(wa.roots[0].cost_ns, 200 * kMs);
  EXPECT_EQ(stall_wait_text(job, wa, 0), "");
  EXPECT_EQ(
      stall_wait_text(job, wa, 1),
      "      overlaps h r1's poll gap (its own poll gap) on a link of theirs (weaker evidence: "
      "no per-op timelines)\n");
  EXPECT_NE(root_causes_text(job, wa, 10).find("weaker evidence"), std::string::npos);
}

// The HTML report: the root-cause table and who waited on whom, only where
// some rank waited (the page of a job without waits is unchanged).
TEST(RootCauses, TheHtmlReportHasTheRootTableAndTheWaitMatrix) {
  Job job = ranks_job(3);
  EXPECT_EQ(html_report(job, HtmlOptions()).find("root-table"), std::string::npos);
  job.waits.list = {wait(1, 2, 5000, 5200), wait(0, 1, 5001, 5200)};
  const std::string html = html_report(job, HtmlOptions());
  const size_t table = html.find("<table id=\"root-table\"");
  ASSERT_NE(table, std::string::npos);
  EXPECT_NE(html.find("<td>h r2</td><td class=\"n\">399.0 ms</td>", table), std::string::npos);
  const size_t m = html.find("<table id=\"wait-matrix\"");
  ASSERT_NE(m, std::string::npos);
  // Row r0: nothing on itself, 199 ms on r1, nothing on r2.
  EXPECT_NE(html.find("<tr><td>h r0</td><td class=\"n\"></td><td class=\"n\">199.0 ms</td><td "
                      "class=\"n\"></td></tr>",
                      m),
            std::string::npos)
      << html.substr(m, 800);
}

}  // namespace
}  // namespace fabtrace::report
