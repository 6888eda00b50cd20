// The job tables and the terminal summary of `fabtrace report` on synthetic
// jobs with known answers: outliers, the slowest links, stalls on the wall
// clock across nodes with different monotonic clocks, late receivers, errors.
#include "userspace/report/analysis/kernel_join.h"
#include "userspace/report/text/formats.h"
#include "userspace/report/text/summary.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "common/version.h"
#include "fixtures/synthetic_job.h"
#include "fixtures/synthetic_tables.h"
#include "tests/unit/expect_each.h"
#include "userspace/report/job/job.h"

namespace fabtrace::report {
namespace {

using test::job_of;

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string l;
  while (std::getline(in, l)) out.push_back(l);
  return out;
}

// The lines of a summary section: from the one starting with `title` up to the
// next unindented line.
std::vector<std::string> section(const std::string& summary, const std::string& title) {
  std::vector<std::string> out;
  bool in = false;
  for (const std::string& l : lines_of(summary)) {
    if (!in) {
      in = l.rfind(title, 0) == 0;
      continue;
    }
    if (l.empty() || l[0] != ' ') break;
    out.push_back(l);
  }
  return out;
}

LinkRow link(const std::string& op, uint64_t bytes, uint64_t count, double p99, bool recv = false) {
  LinkRow l;
  l.set_op(op);
  l.row.bytes = bytes;
  l.row.count = count;
  l.row.p99_ns = p99;
  l.row.recv = recv;
  return l;
}

TEST(ReportOutliers, RatioAgainstTheMedianOfTheSameOpAndSize) {
  std::vector<LinkRow> rows = {
      link("fi_tsend", 4096, 10, 100),  link("fi_tsend", 4096, 10, 110),
      link("fi_tsend", 4096, 10, 120),  link("fi_tsend", 4096, 10, 400),   // 400 / 110
      link("fi_tsend", 8192, 10, 5000),                                    // alone in its size
      link("fi_write", 4096, 10, 100),  link("fi_write", 4096, 10, 1000),  // lower middle: 100
      link("fi_tsend", 4096, 0, 9999),                                     // no completions
  };
  mark_outliers(&rows);
  EXPECT_DOUBLE_EQ(rows[0].outlier_ratio, 100.0 / 110);
  EXPECT_DOUBLE_EQ(rows[3].outlier_ratio, 400.0 / 110);
  EXPECT_EQ(rows[4].outlier_ratio, 0.0);
  EXPECT_DOUBLE_EQ(rows[5].outlier_ratio, 1.0);
  EXPECT_DOUBLE_EQ(rows[6].outlier_ratio, 10.0);
  EXPECT_EQ(rows[7].outlier_ratio, 0.0);
  EXPECT_GE(rows[3].outlier_ratio, kOutlierRatio);
  EXPECT_LT(rows[2].outlier_ratio, kOutlierRatio);
}

TEST(ReportOutliers, ReceivesAreNotListedAsOutliersOrSlowest) {
  Job job;
  job.links = {link("fi_tsend", 64, 10, 100), link("fi_tsend", 64, 10, 1000),
               link("fi_trecv", 64, 10, 100, true), link("fi_trecv", 64, 10, 99999, true)};
  mark_outliers(&job.links);
  EXPECT_GE(job.links[3].outlier_ratio, kOutlierRatio);  // in the table ...
  const auto outl = outlier_links(job);
  ASSERT_EQ(outl.size(), 1u);  // ... but not named: receives wait for their sender
  EXPECT_EQ(outl[0], &job.links[1]);
  const auto slow = slowest_links(job, 5);
  ASSERT_EQ(slow.size(), 2u);
  EXPECT_EQ(slow[0], &job.links[1]);
}

TEST(ReportJob, TotalsAndSpanOfTheSyntheticJob) {
  const test::SyntheticJob sj = test::make_synthetic_job();
  const Job job = job_of(sj);
  EXPECT_EQ(job.ranks.size(), 4u);
  EXPECT_EQ(job.hosts(), (std::vector<std::string>{"node01", "node02"}));
  EXPECT_EQ(job.nic_count(), 4u);
  EXPECT_EQ(job.ops, sj.ops);
  EXPECT_EQ(job.completed, sj.completed);
  EXPECT_EQ(job.bytes, sj.bytes);
  EXPECT_EQ(job.errors, sj.errors);
  EXPECT_EQ(job.eagain, sj.eagain);
  EXPECT_EQ(job.unfinished, sj.unfinished);
  EXPECT_EQ(job.first_wall_ns, sj.first_wall_ns);
  EXPECT_EQ(job.last_wall_ns, sj.last_wall_ns);
  EXPECT_EQ(job.stalls.size(), 8u);  // two CQs per rank
  size_t rows = 0;
  for (const ProcessReport& r : sj.reports)
    for (const LinkReport& l : r.links) rows += l.rows.size();
  EXPECT_EQ(job.links.size(), rows);
}

// One NIC per domain of a rank, however many endpoint addresses it has; a
// version 1 rank that wrote no row for its receive-only domain counts each
// address of its links once.
TEST(ReportJob, OneNicPerDomainWhateverItsAddresses) {
  ProcessReport a;
  a.host = "h";
  a.rank = "0";
  a.pid = 1;
  NicReport n;
  n.domain = "eth0";
  n.locals = {"fi_sockaddr_in://10.0.0.1:1", "fi_sockaddr_in://10.0.0.1:2"};
  a.nics.push_back(n);
  for (const std::string& local : n.locals) {
    LinkReport l;
    l.local = local;
    l.remote = "fi_sockaddr_in://10.0.0.2:1";
    a.links.push_back(l);
  }
  ProcessReport b = a;
  b.rank = "1";
  b.pid = 2;
  b.nics.clear();  // receive-only, as version 1 wrote it: no NIC row
  b.links.resize(1);
  b.links[0].local = "fi_sockaddr_in://10.0.0.2:1";
  Job job;
  job.ranks = {make_rank(a), make_rank(b)};
  build_job_tables(&job);
  EXPECT_EQ(job.nic_count(), 2u);
  EXPECT_NE(summary_text(job, SummaryOptions()).find("2 ranks, 2 NICs"), std::string::npos);
  EXPECT_EQ(short_addrs(n.locals), "10.0.0.1:1,10.0.0.1:2");
  EXPECT_EQ(
      short_addrs({"fi_sockaddr_in://a:1", "fi_sockaddr_in://a:2", "fi_sockaddr_in://a:3"}, 1),
      "a:1 +2 more");
}

TEST(ReportSummary, PlantedSlowLinkIsNamedFirst) {
  const test::SyntheticJob sj = test::make_synthetic_job();
  const Job job = job_of(sj);
  const auto slow = slowest_links(job, 5);
  ASSERT_FALSE(slow.empty());
  EXPECT_EQ(slow[0]->local(), sj.slow_local);
  EXPECT_EQ(slow[0]->remote(), sj.slow_remote);
  EXPECT_EQ(slow[0]->rank(), sj.slow_rank);
  const auto outl = outlier_links(job);
  ASSERT_EQ(outl.size(), 1u);
  EXPECT_EQ(outl[0]->local(), sj.slow_local);
  EXPECT_DOUBLE_EQ(outl[0]->outlier_ratio, sj.slow_p99_ns / sj.tsend_median_p99_ns);

  const std::string s = summary_text(job, SummaryOptions());
  const std::string name =
      short_addr(sj.slow_local) + " -> " + short_addr(sj.slow_remote) + "  fi_tsend 64 KiB";
  const auto slow_lines = section(s, "slowest links");
  ASSERT_FALSE(slow_lines.empty()) << s;
  EXPECT_NE(slow_lines[0].find(name), std::string::npos) << s;
  EXPECT_NE(slow_lines[0].find(sj.slow_host + " r" + sj.slow_rank), std::string::npos) << s;
  EXPECT_NE(slow_lines[0].find("p99 900.0 us"), std::string::npos) << s;
  EXPECT_NE(slow_lines[0].find("[outlier x"), std::string::npos) << s;
  // No receive in the list, though their p99 (2 ms) is the largest.
  for (const std::string& l : slow_lines) EXPECT_EQ(l.find("recv"), std::string::npos) << l;
  const auto out_lines = section(s, "outlier links");
  ASSERT_EQ(out_lines.size(), 1u) << s;
  EXPECT_NE(out_lines[0].find(name), std::string::npos) << s;
  EXPECT_NE(s.find("outlier links (p99 >= 3x the median p99 of the same op and size): 1\n"),
            std::string::npos)
      << s;
}

TEST(ReportSummary, PlantedStallIsListedWithItsRankAndWallTime) {
  const test::SyntheticJob sj = test::make_synthetic_job();
  const Job job = job_of(sj);
  ASSERT_FALSE(job.stalls.empty());
  const Stall& st = job.stalls[0];
  EXPECT_EQ(st.host, sj.stall_host);
  EXPECT_EQ(st.rank, sj.stall_rank);
  EXPECT_EQ(st.cq.id, sj.stall_cq);
  EXPECT_EQ(st.end_wall_ns, sj.stall_end_wall_ns);
  EXPECT_DOUBLE_EQ(st.end_job_s, sj.stall_end_job_s);
  EXPECT_DOUBLE_EQ(sj.stall_end_job_s, 3.75);

  const auto lines = section(summary_text(job, SummaryOptions()), "longest CQ poll gaps");
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines[0].find(sj.stall_host + " r" + sj.stall_rank + " CQ#1"), std::string::npos)
      << lines[0];
  EXPECT_NE(lines[0].find("250.0 ms"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("ended 00:00:03.750000 UTC (t+3.750 s)"), std::string::npos) << lines[0];
}

// A node's kernel log holds the slow ops of every traced process there, other
// jobs' too: the summary lists the job's ranks only, by rank, and says how many
// it left out.
TEST(ReportSummary, KernelSlowOpsOfProcessesOutsideTheJobAreNotListed) {
  const test::SyntheticJob sj = test::make_synthetic_job();
  Job job = job_of(sj);
  const Rank& r = job.ranks[1];
  KernelNode n;
  n.host = r.host();
  KernelExplanation mine, other;
  mine.pid = static_cast<uint32_t>(r.pid());
  mine.tid = 11;
  mine.w.start = 1000;
  mine.w.end = 1000 + 3000000;
  mine.verdict = "mine";
  other.pid = static_cast<uint32_t>(r.pid() + 999999);  // no rank of the job
  other.tid = 12;
  other.w.start = 1000;
  other.w.end = 1000 + 9000000;  // the longest: listed first were it kept
  other.verdict = "other";
  n.slow_ops = {other, mine};
  job.kernel.push_back(n);
  const auto lines =
      section(summary_text(job, SummaryOptions()), "slow ops (>= FABTRACE_SLOW_OP_US)");
  ASSERT_EQ(lines.size(), 2u) << summary_text(job, SummaryOptions());
  EXPECT_EQ(lines[0].rfind("  " + r.host() + " r" + r.rank() + " tid 11 ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("3.00 ms: mine"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[1],
            "  (1 slow ops of 1 process outside the job, traced on its nodes, not listed)");
}

// Two hosts whose CLOCK_MONOTONIC differ by hours: only the (mono, wall)
// anchors put their events on one time line.
TEST(ReportSummary, RanksOfDifferentNodesAlignByTheirWallAnchors) {
  const uint64_t wall0 = 1767225600ULL * 1000000000ULL;  // 2026-01-01 00:00:00 UTC
  ProcessReport a, b;
  a.host = "alpha";
  a.rank = "0";
  a.pid = 10;
  a.start_mono_ns = 5000ULL * 1000000000ULL;  // alpha booted 5000 s ago
  a.start_wall_ns = wall0 + 2000000000ULL;    // starts at 00:00:02
  a.duration_s = 10;
  b.host = "beta";
  b.rank = "1";
  b.pid = 20;
  b.start_mono_ns = 7ULL * 1000000000ULL;  // beta booted 7 s ago
  b.start_wall_ns = wall0 + 500000000ULL;  // starts first, at 00:00:00.5
  b.duration_s = 3;
  CqReport qa, qb;
  qa.id = 0;
  qa.polls = 10;
  qa.max_gap_ns = 40e6;
  qa.max_gap_end_s = 1.5;  // alpha: 00:00:03.5
  qb.id = 2;
  qb.polls = 10;
  qb.max_gap_ns = 80e6;
  qb.max_gap_end_s = 2.25;  // beta: 00:00:02.75
  a.cqs = {qa};
  b.cqs = {qb};
  Job job;
  job.ranks = {make_rank(a), make_rank(b)};
  build_job_tables(&job);
  EXPECT_EQ(job.first_wall_ns, wall0 + 500000000ULL);
  EXPECT_EQ(job.last_wall_ns, wall0 + 12000000000ULL);
  ASSERT_EQ(job.stalls.size(), 2u);
  EXPECT_EQ(job.stalls[0].host, "beta");
  EXPECT_EQ(job.stalls[0].end_wall_ns, wall0 + 2750000000ULL);
  EXPECT_DOUBLE_EQ(job.stalls[0].end_job_s, 2.25);
  EXPECT_EQ(job.stalls[1].host, "alpha");
  EXPECT_EQ(job.stalls[1].end_wall_ns, wall0 + 3500000000ULL);
  EXPECT_DOUBLE_EQ(job.stalls[1].end_job_s, 3.0);

  const std::string s = summary_text(job, SummaryOptions());
  EXPECT_NE(
      s.find("11.500 s on the wall clock: 2026-01-01 00:00:00.500000 UTC .. 00:00:12.000000 UTC"),
      std::string::npos)
      << s;
  EXPECT_NE(s.find("aligned by their monotonic/wall clock anchors"), std::string::npos) << s;
  const auto lines = section(s, "longest CQ poll gaps");
  ASSERT_EQ(lines.size(), 2u) << s;
  EXPECT_NE(lines[0].find("beta r1 CQ#2  80.0 ms  ended 00:00:02.750000 UTC (t+2.250 s)"),
            std::string::npos)
      << lines[0];
  EXPECT_NE(lines[1].find("alpha r0 CQ#0  40.0 ms  ended 00:00:03.500000 UTC (t+3.000 s)"),
            std::string::npos)
      << lines[1];
}

// Receives that completed within 50 us of posting are no evidence that they
// were posted late: without both ranks' timelines the verdict is "unknown".
TEST(ReportSummary, NoPostedLateVerdictWithoutEvidence) {
  const test::SyntheticJob sj = test::make_synthetic_job();
  const Job job = job_of(sj);
  EXPECT_TRUE(posted_late_rows(job).empty());
  const std::string s = summary_text(job, SummaryOptions());
  const size_t at = s.find("receives posted late");
  ASSERT_NE(at, std::string::npos) << s;
  const std::string head = s.substr(at, s.find('\n', at) - at);
  EXPECT_NE(head.find(": unknown"), std::string::npos) << head;
  const auto lines = section(s, "receives posted late");
  ASSERT_EQ(lines.size(), 2u) << s;
  EXPECT_NE(lines[0].find("unknown for " + fmt_count(4 * 3000) + " receives in 4 rows"),
            std::string::npos)
      << lines[0];
  // The 50 us share is still in the rank's row.
  size_t found = 0;
  for (const LinkRow& l : job.links)
    if (l.row.recv && l.rank() == sj.late_rank) found = l.row.within_50us;
  EXPECT_EQ(found, sj.late_imm);
}

TEST(ReportSummary, ShapeOpsAndProblems) {
  const test::SyntheticJob sj = test::make_synthetic_job();
  const Job job = job_of(sj);
  SummaryOptions opt;
  opt.dir = "/scratch/run42";
  opt.outputs = {"/o/report.html", "/o/links.csv"};
  const std::string s = summary_text(job, opt);
  EXPECT_EQ(lines_of(s)[0],
            "fabtrace report of /scratch/run42, by fabtrace " + std::string(version()));
  EXPECT_NE(s.find("2 nodes (node01, node02), 4 ranks, 4 NICs (4 devices)"), std::string::npos)
      << s;
  EXPECT_NE(s.find(fmt_count(sj.ops) + " ops (" + fmt_count(sj.completed) + " completed)"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("fi_trecv 12,000"), std::string::npos) << s;
  EXPECT_NE(s.find("fi_tsend 12,003"), std::string::npos) << s;  // 12 x 1000 completed + 3 errors
  EXPECT_NE(s.find("  3 completions in error: node01 r1 fi_tsend 64 KiB x3"), std::string::npos)
      << s;
  EXPECT_NE(s.find("  120 EAGAIN refusals (back-pressure): node01 r0 fi_tsend 64 KiB x120"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("  2 unfinished ops (never completed): node02 r3 fi_write 1 MiB x2"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("outputs   /o/report.html  /o/links.csv"), std::string::npos) << s;
  // Short enough for a terminal.
  const auto lines = lines_of(s);
  EXPECT_LT(lines.size(), 50u) << s;
  for (const std::string& l : lines) EXPECT_LE(l.size(), 130u) << l;
}

TEST(ReportSummary, StaysShortOnABigJob) {
  test::SyntheticOptions o;
  o.nodes = 8;
  o.ranks_per_node = 8;
  const Job job = job_of(test::make_synthetic_job(o));
  EXPECT_EQ(job.ranks.size(), 64u);
  const auto lines = lines_of(summary_text(job, SummaryOptions()));
  EXPECT_LT(lines.size(), 60u);
}

TEST(ReportFormats, NumbersReadWell) {
  test::expect_each<double, std::string>(
      fmt_ns, {{850, "850 ns"}, {12345, "12.3 us"}, {4560000, "4.56 ms"}, {1234000000, "1.234 s"}});
  test::expect_each<uint64_t, std::string>(fmt_size, {{64, "64 B"},
                                                      {4096, "4 KiB"},
                                                      {1 << 20, "1 MiB"},
                                                      {1000, "1000 B"},
                                                      {1536 * 1024, "1536 KiB"}});
  EXPECT_EQ(fmt_bytes(163800000), "163.8 MB");
  test::expect_each<uint64_t, std::string>(fmt_count, {{1234567, "1,234,567"}, {12, "12"}});
  EXPECT_EQ(fmt_wall(1767225600ULL * 1000000000ULL + 1500, true), "2026-01-01 00:00:00.000001 UTC");
  EXPECT_EQ(short_addr("fi_sockaddr_in://10.0.0.1:5"), "10.0.0.1:5");
  EXPECT_EQ(short_addr("(any)"), "(any)");
  EXPECT_EQ(who("n1", "NA", 42), "n1 rNA p42");
}

}  // namespace
}  // namespace fabtrace::report
