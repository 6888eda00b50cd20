// The report's per-op timeline work in parts, as `fabtrace report --mpi`
// spreads it over processes (report/mpi/report_mpi.cpp), without MPI: the parts of any
// split of the ranks, through their byte forms and merged in any order, give
// what one pass over every rank gives (the slowest ops, the "posted late"
// matching); the job's context survives its byte form; byte forms cut short
// are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "fixtures/synthetic_job.h"
#include "userspace/report/analysis/post_evidence.h"
#include "userspace/report/analysis/slowest_ops.h"
#include "userspace/report/job/context.h"
#include "userspace/report/job/job.h"

namespace fabtrace::report {
namespace {

// A loaded synthetic job whose timelines hold sends of differing lengths and
// receives (matched on a 2-rank job), the ops of each link `per_link`.
Job load(int nodes, int ranks_per_node, int per_link, std::string* dir) {
  test::SyntheticOptions o;
  o.nodes = nodes;
  o.ranks_per_node = ranks_per_node;
  o.varied_durations = true;
  o.oplog_recvs = true;
  o.oplog_ops_per_link = per_link;
  *dir = test::make_fixture_dir("report-parts");
  test::write_synthetic_job(test::make_synthetic_job(o), *dir);
  Job job;
  std::string err;
  EXPECT_TRUE(load_job(*dir, &job, &err)) << err;
  return job;
}

std::string text_of(const SlowestOps& s) {
  std::string t = slowest_ops_text(s, 1000) + "seen " + std::to_string(s.ops_seen) + "\n";
  for (const std::vector<SlowOp>* v : {&s.ops, &s.recvs})
    for (const SlowOp& o : *v)
      t += o.host + " " + o.rank + " " + std::to_string(o.tid) + " " + o.local + " " + o.remote +
           " " + o.op + " " + std::to_string(o.start_mono_ns) + " " + std::to_string(o.dur_ns) +
           " " + std::to_string(o.row_p50_ns) + "\n";
  for (const std::string& w : s.warnings) t += "warning " + w + "\n";
  return t;
}

TEST(ReportParts, SlowestOpsOfAnySplitMergeToTheWhole) {
  std::string dir;
  const Job job = load(2, 3, 40, &dir);
  ASSERT_EQ(job.ranks.size(), 6u);
  for (const size_t n : {size_t{1}, size_t{5}, size_t{1000}}) {
    const SlowestOps whole = find_slowest_ops(job, n);
    ASSERT_FALSE(whole.ops.empty());
    ASSERT_FALSE(whole.recvs.empty());
    ASSERT_EQ(whole.covers.size(), 6u);
    // The longest send the generator made: 20 + 12 us.
    EXPECT_EQ(whole.ops[0].dur_ns, 32000.0);
    EXPECT_EQ(whole.ops_seen, 6u * 5 * 40 * 2);
    std::mt19937 rng(static_cast<unsigned>(n));
    for (const size_t k : {2u, 3u, 4u, 7u}) {
      std::vector<SlowestPart> parts(k);
      for (size_t q = 0; q < k; ++q) {
        std::vector<uint32_t> share;
        for (uint32_t r = 0; r < job.ranks.size(); ++r)
          if (r % k == q) share.push_back(r);
        std::string bytes;
        encode_slowest_part(slowest_part(job, share, n), &bytes);
        size_t pos = 0;
        ASSERT_TRUE(decode_slowest_part(bytes.data(), bytes.size(), &pos, &parts[q]));
        EXPECT_EQ(pos, bytes.size());
      }
      std::shuffle(parts.begin(), parts.end(), rng);
      SlowestPart all;
      for (SlowestPart& p : parts) merge_slowest_parts(&all, std::move(p), n);
      EXPECT_EQ(text_of(finish_slowest(job, n, std::move(all))), text_of(whole))
          << "n " << n << ", " << k << " parts";
    }
  }
  test::remove_tree(dir);
}

std::string posted_of(const Job& job) {
  std::string t;
  for (const LinkRow& l : job.links)
    if (l.row.recv)
      t += l.host() + " " + l.rank() + " " + std::to_string(l.posted().logged) + " " +
           std::to_string(l.posted().matched) + " " + std::to_string(l.posted().late) + " " +
           std::to_string(l.posted().late_median_ns) + " " + l.posted().unknown() + "\n";
  return t;
}

TEST(ReportParts, MatchingFromDecodedTimelinesIsTheWhole) {
  for (const int nodes : {2, 3}) {
    std::string dir;
    Job job = load(nodes, 1, 10, &dir);
    const std::string whole = posted_of(job);  // load_job matched them
    // Known answer on 2 ranks: the odd receives were posted 5 us after their send.
    if (nodes == 2) {
      for (const LinkRow& l : job.links)
        if (l.row.recv) {
          EXPECT_EQ(l.posted().matched, 10u);
          EXPECT_EQ(l.posted().late, 5u);
          EXPECT_EQ(l.posted().late_median_ns, 5000.0);
        }
    }
    ReceiveMatcher m(&job, EvidenceOptions());
    for (uint32_t r = 0; r < job.ranks.size(); ++r) {
      std::string bytes;
      encode_rank_timeline(read_rank_timeline(job, r, EvidenceOptions()), &bytes);
      RankTimeline t;
      size_t pos = 0;
      ASSERT_TRUE(decode_rank_timeline(bytes.data(), bytes.size(), &pos, &t));
      EXPECT_EQ(pos, bytes.size());
      EXPECT_EQ(t.rank, r);
      EXPECT_TRUE(t.read);
      // Every op of the timeline is a send or a receive here.
      EXPECT_EQ(t.ops.size(), job.ranks[r].oplog_ops);
      // The cut-short forms are refused.
      for (size_t cut = 0; cut < bytes.size(); cut += 1 + bytes.size() / 50) {
        size_t p = 0;
        RankTimeline u;
        EXPECT_FALSE(decode_rank_timeline(bytes.data(), cut, &p, &u)) << cut;
      }
      m.add(t);
    }
    m.finish();
    EXPECT_EQ(posted_of(job), whole);
    test::remove_tree(dir);
  }
}

// Past max_records over all the ranks, none is matched, whichever rank passed it.
TEST(ReportParts, RecordLimitCountsOverEveryRank) {
  std::string dir;
  Job job = load(2, 1, 10, &dir);
  EvidenceOptions opt;
  opt.max_records = 30;  // each rank has 20: neither passes it alone
  ReceiveMatcher m(&job, opt);
  for (uint32_t r = 0; r < job.ranks.size(); ++r) m.add(read_rank_timeline(job, r, opt));
  m.finish();
  for (const LinkRow& l : job.links)
    if (l.row.recv) {
      EXPECT_EQ(l.posted().matched, 0u);
      EXPECT_EQ(l.posted().unknown(), "more than 30 timeline records to match; none was");
    }
  test::remove_tree(dir);
}

TEST(ReportParts, JobContextRoundTrip) {
  std::string dir;
  const Job job = load(2, 2, 10, &dir);
  ASSERT_FALSE(job.stalls.empty());
  std::string bytes;
  encode_job_context(job, &bytes);
  Job back;
  ASSERT_TRUE(decode_job_context(bytes.data(), bytes.size(), &back));
  EXPECT_EQ(back.first_wall_ns, job.first_wall_ns);
  EXPECT_EQ(back.last_wall_ns, job.last_wall_ns);
  ASSERT_EQ(back.ranks.size(), job.ranks.size());
  for (size_t i = 0; i < job.ranks.size(); ++i) {
    const Rank &a = job.ranks[i], &b = back.ranks[i];
    EXPECT_EQ(b.host(), a.host());
    EXPECT_EQ(b.rank(), a.rank());
    EXPECT_EQ(b.pid(), a.pid());
    EXPECT_EQ(b.start_mono_ns(), a.start_mono_ns());
    EXPECT_EQ(b.start_wall_ns(), a.start_wall_ns());
    EXPECT_EQ(b.duration_s(), a.duration_s());
    EXPECT_EQ(b.oplog_path, a.oplog_path);
    EXPECT_EQ(b.counters_path, a.counters_path);
    EXPECT_EQ(b.oplog_ops, a.oplog_ops);
    EXPECT_EQ(b.counter_devices, a.counter_devices);
    EXPECT_EQ(b.report.nics.size(), a.report.nics.size());
    EXPECT_EQ(b.report.cqs.size(), a.report.cqs.size());
  }
  ASSERT_EQ(back.stalls.size(), job.stalls.size());
  for (size_t i = 0; i < job.stalls.size(); ++i) {
    EXPECT_EQ(back.stalls[i].host, job.stalls[i].host);
    EXPECT_EQ(back.stalls[i].cq.id, job.stalls[i].cq.id);
    EXPECT_EQ(back.stalls[i].cq.max_gap_ns, job.stalls[i].cq.max_gap_ns);
    EXPECT_EQ(back.stalls[i].end_wall_ns, job.stalls[i].end_wall_ns);
  }
  for (size_t cut = 0; cut < bytes.size(); cut += 1 + bytes.size() / 40) {
    Job j;
    EXPECT_FALSE(decode_job_context(bytes.data(), cut, &j)) << cut;
  }
  test::remove_tree(dir);
}

}  // namespace
}  // namespace fabtrace::report
