// fabtrace diff's comparison (report/diff/job_diff.h) on synthetic jobs with known
// answers: rows matched by rank and peer whatever the runs' addresses, hosts
// and pids; a planted change listed on its row alone, with its ratio; the
// threshold's and --min-ops's edges; receives listed but not gated; stalls
// new and gone; the op mix; the text and the page.
#include "userspace/report/diff/job_diff.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixtures/synthetic_job.h"
#include "fixtures/synthetic_tables.h"
#include "tests/unit/expect_each.h"
#include "userspace/report/job/job.h"

namespace fabtrace::report {
namespace {

using test::job_of;
using test::SyntheticJob;

// The same job as another run sees it: other addresses (ports), hosts and pids.
SyntheticJob rerun(SyntheticJob sj) {
  const auto moved = [](std::string a) {
    return a == "(any)" ? a : a + "7";  // every address differs, consistently
  };
  for (ProcessReport& r : sj.reports) {
    r.host = "other-" + r.host;
    r.pid += 5000;
    r.start_wall_ns += 3600ULL * 1000000000ULL;
    for (NicReport& n : r.nics)
      for (std::string& l : n.locals) l = moved(l);
    for (LinkReport& l : r.links) {
      l.local = moved(l.local);
      l.remote = moved(l.remote);
    }
  }
  return sj;
}

// The row of rank `g` for op `op` to peer `peer` (-1: any).
OpRow& row_of(SyntheticJob& sj, int g, const std::string& op, int peer) {
  ProcessReport& r = sj.reports[static_cast<size_t>(g)];
  for (LinkReport& l : r.links)
    for (OpRow& o : l.rows)
      if (o.op == op && (peer < 0 ? l.remote == "(any)"
                                  : l.remote.find(SyntheticJob::address(peer)) == 0 &&
                                        l.remote.size() <= SyntheticJob::address(peer).size() + 1))
        return o;
  throw std::runtime_error("no such row");
}

void scale_latency(OpRow& o, double k) {
  o.p50_ns *= k;
  o.p99_ns *= k;
  o.avg_ns *= k;
  o.gbps /= k;
}

std::vector<const LinkDiff*> listed(const JobDiff& d, bool slower, bool recv) {
  std::vector<const LinkDiff*> v;
  for (const LinkDiff& l : d.links)
    if (l.recv == recv && (slower ? l.slower : l.faster)) v.push_back(&l);
  return v;
}

TEST(JobDiff, RowsMatchByRankAndPeerNotByAddressHostOrPid) {
  const SyntheticJob sa = test::make_synthetic_job();
  const Job a = job_of(sa), b = job_of(rerun(sa));
  const JobDiff d = diff_jobs(a, b, DiffOptions());
  EXPECT_EQ(d.ranks_both, 4u);
  EXPECT_TRUE(d.ranks_only_a.empty());
  EXPECT_TRUE(d.ranks_only_b.empty());
  EXPECT_EQ(d.links.size(), a.links.size());
  EXPECT_EQ(d.rows_only_a, 0u);
  EXPECT_EQ(d.rows_only_b, 0u);
  EXPECT_EQ(d.rows_compared, a.links.size());
  for (const LinkDiff& l : d.links) {
    ASSERT_TRUE(l.a && l.b) << link_diff_name(l);
    EXPECT_EQ(l.a->op(), l.b->op());
    EXPECT_EQ(l.a->rank(), l.b->rank());
    EXPECT_DOUBLE_EQ(l.p99.ratio(), 1.0) << link_diff_name(l);
    EXPECT_FALSE(l.slower || l.faster) << link_diff_name(l);
  }
  // The peers are named by rank: rank 3's send to rank 0 is "r3 -> r0".
  bool found = false;
  for (const LinkDiff& l : d.links) found |= link_diff_name(l) == "r3 -> r0  fi_tsend 64 KiB";
  EXPECT_TRUE(found);
  EXPECT_EQ(d.nics.size(), 4u);
  for (const NicDiff& n : d.nics) EXPECT_TRUE(n.compared && !n.slower && !n.faster) << n.label;
  const Gate g = diff_gate(d, 1.0001);
  EXPECT_EQ(g.over, 0u);
  EXPECT_DOUBLE_EQ(g.worst, 1.0);
  // Per non-receive row p50, p99 and bandwidth, and one figure per NIC.
  size_t sends = 0;
  for (const LinkRow& l : a.links) sends += !l.row.recv;
  EXPECT_EQ(g.figures, 3 * sends + 4);
}

TEST(JobDiff, APlantedSlowdownIsListedOnItsRowAloneWithItsRatio) {
  const SyntheticJob sa = test::make_synthetic_job();
  SyntheticJob sb = rerun(sa);
  scale_latency(row_of(sb, 1, "fi_tsend", 2), 2.5);
  const JobDiff d = diff_jobs(job_of(sa), job_of(sb), DiffOptions());
  const auto slower = listed(d, true, false);
  ASSERT_EQ(slower.size(), 1u);
  EXPECT_EQ(link_diff_name(*slower[0]), "r1 -> r2  fi_tsend 64 KiB");
  EXPECT_DOUBLE_EQ(slower[0]->p50.ratio(), 2.5);
  EXPECT_DOUBLE_EQ(slower[0]->p99.ratio(), 2.5);
  EXPECT_DOUBLE_EQ(slower[0]->gbps.ratio(), 1 / 2.5);
  EXPECT_DOUBLE_EQ(slower[0]->worst, 2.5);
  EXPECT_TRUE(listed(d, false, false).empty());
  EXPECT_TRUE(listed(d, true, true).empty());
  // The gate: p50, p99 and bandwidth of that row are above 2, none above 2.5.
  EXPECT_EQ(diff_gate(d, 2.0).over, 3u);
  EXPECT_EQ(diff_gate(d, 2.5).over, 0u);
  EXPECT_EQ(diff_gate(d, 2.0).worst_where, "r1 -> r2  fi_tsend 64 KiB p50");
}

TEST(JobDiff, ThresholdEdgesBothWays) {
  const SyntheticJob sa = test::make_synthetic_job();
  SyntheticJob sb = sa;
  scale_latency(row_of(sb, 0, "fi_tsend", 1), 1.19);  // under x1.2: not listed
  scale_latency(row_of(sb, 0, "fi_tsend", 2), 1.21);  // just over: slower
  scale_latency(row_of(sb, 0, "fi_tsend", 3), 0.8);   // x1/1.25: faster
  const JobDiff d = diff_jobs(job_of(sa), job_of(sb), DiffOptions());
  const auto slower = listed(d, true, false), faster = listed(d, false, false);
  ASSERT_EQ(slower.size(), 1u);
  EXPECT_EQ(link_diff_name(*slower[0]), "r0 -> r2  fi_tsend 64 KiB");
  ASSERT_EQ(faster.size(), 1u);
  EXPECT_EQ(link_diff_name(*faster[0]), "r0 -> r3  fi_tsend 64 KiB");
  DiffOptions wide;
  wide.threshold = 1.5;
  EXPECT_TRUE(listed(diff_jobs(job_of(sa), job_of(sb), wide), true, false).empty());
}

TEST(JobDiff, RowsWithTooFewOpsAreNotCompared) {
  const SyntheticJob sa = test::make_synthetic_job();
  SyntheticJob sb = sa;
  row_of(sb, 0, "fi_write", 1).count = 9;
  scale_latency(row_of(sb, 0, "fi_write", 1), 10);
  const JobDiff d = diff_jobs(job_of(sa), job_of(sb), DiffOptions());
  EXPECT_EQ(d.rows_few_ops, 1u);
  EXPECT_TRUE(listed(d, true, false).empty());
  DiffOptions few;
  few.min_ops = 9;
  EXPECT_EQ(listed(diff_jobs(job_of(sa), job_of(sb), few), true, false).size(), 1u);
}

TEST(JobDiff, ReceivesAreListedApartAndNotGated) {
  const SyntheticJob sa = test::make_synthetic_job();
  SyntheticJob sb = sa;
  scale_latency(row_of(sb, 2, "fi_trecv", -1), 40);
  const JobDiff d = diff_jobs(job_of(sa), job_of(sb), DiffOptions());
  const auto r = listed(d, true, true);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(link_diff_name(*r[0]), "r2 <- (any)  fi_trecv 64 KiB");
  EXPECT_TRUE(listed(d, true, false).empty());
  EXPECT_EQ(diff_gate(d, 1.0001).over, 0u);
}

TEST(JobDiff, LinksAndRanksInOneRunOnly) {
  const SyntheticJob sa = test::make_synthetic_job();
  SyntheticJob sb = sa;
  sb.reports.pop_back();  // rank 3 is gone: its rows, and the rows to it
  for (ProcessReport& r : sb.reports)
    for (LinkReport& l : r.links)
      if (l.remote == SyntheticJob::address(3)) l.remote = "fi_addr_cxi://0xdead";
  const JobDiff d = diff_jobs(job_of(sa), job_of(sb), DiffOptions());
  EXPECT_EQ(d.ranks_both, 3u);
  EXPECT_EQ(d.ranks_only_a, std::vector<std::string>{"r3"});
  // Rank 3's 5 rows; the 4 rows to it (3 sends, rank 2's writes), now to an
  // address no rank has (named by the address), are in B only and their A
  // twins in A only.
  EXPECT_EQ(d.rows_only_a, 5u + 4u);
  EXPECT_EQ(d.rows_only_b, 4u);
  bool found = false;
  for (const LinkDiff& l : d.links) found |= l.to == "fi_addr_cxi://0xdead" && !l.a;
  EXPECT_TRUE(found);
}

TEST(JobDiff, StallsNewGoneAndMoreWithTheirCQs) {
  const SyntheticJob sa = test::make_synthetic_job();
  SyntheticJob sb = sa;
  sb.reports[2].cqs[1].max_gap_ns = 1e6;   // rank 2's 250 ms stall is gone
  sb.reports[0].cqs[0].max_gap_ns = 40e6;  // rank 0's CQ#0 stalls for 40 ms
  sb.reports[1].cqs[0].gaps[3] = 500;      // rank 1's CQ#0: 500 gaps of 1-10 ms, not 10
  const Job a = job_of(sa);
  Job b = job_of(sb);
  // B's node had a kernel log that explained the new stall (kernel_join.h).
  for (Stall& s : b.stalls)
    if (s.rank == "0" && s.cq.id == 0) {
      s.kernel_logged = s.has_cause = true;
      s.cause.verdict = "stopped (SIGSTOP) 39.8 ms";
    }
  const JobDiff d = diff_jobs(a, b, DiffOptions());
  ASSERT_EQ(d.stalls.size(), 3u);
  EXPECT_EQ(d.stalls[0].kind, StallDiff::Kind::kNew);
  EXPECT_EQ(d.stalls[0].label, "r0 CQ#0");
  EXPECT_DOUBLE_EQ(d.stalls[0].gap_ns.b, 40e6);
  EXPECT_EQ(d.stalls[1].kind, StallDiff::Kind::kGone);
  EXPECT_EQ(d.stalls[1].label, "r2 CQ#1");
  EXPECT_DOUBLE_EQ(d.stalls[1].gap_ns.a, 250e6);
  EXPECT_EQ(d.stalls[2].kind, StallDiff::Kind::kMore);
  EXPECT_EQ(d.stalls[2].label, "r1 CQ#0");
  EXPECT_DOUBLE_EQ(d.stalls[2].long_gaps.a, 10);
  EXPECT_DOUBLE_EQ(d.stalls[2].long_gaps.b, 500);
  const std::string text = diff_text(a, b, d, DiffOutputOptions());
  EXPECT_NE(text.find("  new     r0 CQ#0  longest 1.00 ms -> 40.0 ms  gaps >= 1 ms 10 -> 10\n"
                      "      why (B): stopped (SIGSTOP) 39.8 ms\n"
                      "  gone    r2 CQ#1  longest 250.0 ms -> 1.00 ms  gaps >= 1 ms 11 -> 11\n"
                      "  more    r1 CQ#0  longest 1.10 ms -> 1.10 ms  gaps >= 1 ms 10 -> 500\n"),
            std::string::npos)
      << text;
  // A stall in both runs, 4 times longer in B; fewer long gaps than
  // --min-ops in either run are not compared.
  SyntheticJob sc = sa;
  sc.reports[2].cqs[1].max_gap_ns = 1e9;
  sc.reports[3].cqs[0].gaps[3] = 1;  // 10 -> 1
  DiffOptions opt;
  opt.min_ops = 11;
  const JobDiff e = diff_jobs(job_of(sa), job_of(sc), opt);
  ASSERT_EQ(e.stalls.size(), 1u);
  EXPECT_EQ(e.stalls[0].kind, StallDiff::Kind::kLonger);
}

TEST(JobDiff, OpMixAndCounts) {
  const SyntheticJob sa = test::make_synthetic_job();
  SyntheticJob sb = sa;
  for (ProcessReport& r : sb.reports)
    for (LinkReport& l : r.links)
      for (OpRow& o : l.rows)
        if (o.op == "fi_write") o.count *= 3;
  OpRow extra = row_of(sb, 0, "fi_tsend", 1);
  extra.op = "fi_tsenddata";
  sb.reports[0].links[0].rows.push_back(extra);
  const Job a = job_of(sa), b = job_of(sb);
  const JobDiff d = diff_jobs(a, b, DiffOptions());
  ASSERT_EQ(d.ops.size(), 4u);  // by name
  const OpDiff& tsend = d.ops[1];
  const OpDiff& tsenddata = d.ops[2];
  const OpDiff& write = d.ops[3];
  EXPECT_EQ(tsend.op, "fi_tsend");
  EXPECT_FALSE(tsend.changed);
  EXPECT_EQ(tsenddata.op, "fi_tsenddata");
  EXPECT_TRUE(tsenddata.changed && !tsenddata.in_a && tsenddata.in_b);
  EXPECT_EQ(write.op, "fi_write");
  EXPECT_TRUE(write.changed);
  EXPECT_EQ(write.b.issued - write.a.issued, 2 * write.a.completed);
  EXPECT_DOUBLE_EQ(tsend.share_a, static_cast<double>(tsend.a.issued) / a.ops);
  EXPECT_DOUBLE_EQ(tsend.share_b, static_cast<double>(tsend.b.issued) / b.ops);
}

TEST(JobDiff, ProcessesWithoutRankByTheirStart) {
  SyntheticJob sj = test::make_synthetic_job();
  for (ProcessReport& r : sj.reports) r.rank = "NA";
  // The start order is rank 1, 0, 3, 2.
  sj.reports[0].job.start_wall_ns = 20;
  sj.reports[1].job.start_wall_ns = 10;
  sj.reports[2].job.start_wall_ns = 40;
  sj.reports[3].job.start_wall_ns = 30;
  const Job job = job_of(sj);
  const std::vector<std::string> labels = process_labels(job);
  ASSERT_EQ(labels.size(), 4u);
  for (size_t i = 0; i < job.ranks.size(); ++i) {
    const long pid = job.ranks[i].pid();  // 1000 + the synthetic rank
    const char* want[] = {"NA.2", "NA", "NA.4", "NA.3"};
    EXPECT_EQ(labels[i], want[pid - 1000]) << pid;
  }
}

TEST(JobDiff, TextAndPage) {
  const SyntheticJob sa = test::make_synthetic_job();
  SyntheticJob sb = rerun(sa);
  scale_latency(row_of(sb, 1, "fi_tsend", 2), 2.5);
  sb.reports[3].rank = "3<b>";  // a hostile rank text: only in B
  const Job a = job_of(sa), b = job_of(sb);
  const JobDiff d = diff_jobs(a, b, DiffOptions());
  DiffOutputOptions o;
  o.dir_a = "runA";
  o.dir_b = "runB";
  o.fail_above = 2;
  const std::string text = diff_text(a, b, d, o);
  EXPECT_NE(text.find("slower in B (receives left out): 1\n  r1 -> r2  fi_tsend 64 KiB  p50 "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("x2.50"), std::string::npos) << text;
  EXPECT_NE(text.find("--fail-above 2.00: 3 above, exit 1"), std::string::npos) << text;
  EXPECT_NE(text.find("only in B: r3<b>"), std::string::npos) << text;
  const std::string html = diff_html(a, b, d, o);
  EXPECT_NE(html.find("<table id=\"slower-table\">"), std::string::npos);
  EXPECT_EQ(html.find("r3<b>"), std::string::npos);
  EXPECT_NE(html.find("r3&lt;b&gt;"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"hi\"><td class=\"addr\">r1</td>"), std::string::npos);
}

TEST(JobDiff, RatioText) {
  test::expect_each<double, std::string>(
      fmt_ratio,
      {{1.2, "x1.20"}, {12.34, "x12.3"}, {171.4, "x171"}, {0.0058, "x0.0058"}, {0, "x?"}});
  test::expect_each<double, std::string>(
      fmt_op_gbps, {{3.59e-5, "35.9 kB/s"}, {12.5, "12.5 GB/s"}, {1e-10, "0.1 B/s"}});
}

}  // namespace
}  // namespace fabtrace::report
