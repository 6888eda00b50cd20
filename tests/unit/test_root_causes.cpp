// Root causes of waiting on jobs built in memory with known waits: a chain is
// followed to its first rank not itself waiting, a root's cost is the time its
// waiters waited, the kernel's record of the root names the cause, and poll
// gaps without timelines are weaker evidence, said so.
#include "userspace/report/text/waits_text.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <tuple>

#include "fixtures/perfetto_decode.h"
#include "fixtures/synthetic_job.h"
#include "userspace/report/html/html_report.h"
#include "userspace/report/job/job.h"
#include "userspace/report/perfetto/perfetto_trace.h"

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
  job.waits.list[1].sent += 50000;  // 40 us after its receive, 10 us in transit
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

// A ping-pong's two ranks each wait on the other: r0 waits for the pong from
// 100 to 300 ms while r1 waits for the ping r0 sent at 95 ms until 290 (r1 not
// progressing: the ping was in transit). r0's wait is r1's, receiving the ping
// in transit, never r0's own; no cycle is followed round.
TEST(RootCauses, APingPongsMutualWaitIsTheReceiverOfTheMessageInTransit) {
  Job job = ranks_job(2);
  job.waits.list = {wait(0, 1, 5100, 5300), wait(1, 0, 5090, 5290)};
  job.waits.list[1].sent = job.waits.list[1].start + 5 * kMs;  // the ping, at 5095
  const WaitAnalysis wa = analyze_waits(job);
  ASSERT_TRUE(wa.waits[0].known);
  EXPECT_EQ(wa.waits[0].root, 1u);
  EXPECT_EQ(wa.waits[0].cause.rfind("receiving a message in transit from h r0 ", 0), 0u)
      << wa.waits[0].cause;
  int64_t cost = 0;
  for (const RootCause& rc : wa.roots) {
    cost += rc.cost_ns;
    if (rc.rank == 0) {
      EXPECT_FALSE(rc.by_waiter.count(0)) << "r0 the root of its own wait";
    }
  }
  EXPECT_EQ(cost, job.waits.list[0].length() + job.waits.list[1].length());
}

TEST(RootCauses, TheKernelRecordOfTheRootNamesTheCauseAndTheStallSaysWhom) {
  Job job = ranks_job(2);
  job.waits.list = {wait(0, 1, 5000, 5200)};
  KernelNode n;
  n.host = "h";
  KernelExplanation w;
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

// The synthetic job's planted chains (bench/report-scale -g "--chains L", small
// here): 3 chains of 4 ranks over 2 nodes, 3 rounds, each chain's last rank
// sending 100 ms late. Every wait planted is found, whole; each chain's last
// rank is the root charged all of it but the 40 us each rank in between took
// to pass the message on (exactly (L - 1) * rounds * (100 ms + 30 us)); the
// roots' costs add up to the waits. In the Perfetto trace each wait is a slice
// of its rank as long as the wait planted, with a flow to an instant of its
// chain's last rank, one per round, after the waits began.
TEST(RootCauses, SyntheticChainsHaveTheirLastRanksAsRootsAndFlowsToThem) {
  test::SyntheticOptions o = test::reports_only(2, 6);
  o.chain_length = 4;
  o.chain_rounds = 3;
  const test::SyntheticJob sj = test::make_synthetic_job(o);
  const std::string dir = test::make_fixture_dir("chains");
  test::write_synthetic_job(sj, dir);
  Job job;
  std::string err;
  ASSERT_TRUE(load_job(dir, &job, &err)) << err;
  ASSERT_EQ(job.ranks.size(), 12u);
  ASSERT_EQ(sj.chain_waits.size(), 3u * 3 * 3);
  std::map<std::string, int> index;  // rank string -> index in job.ranks
  for (size_t i = 0; i < job.ranks.size(); ++i) index[job.ranks[i].rank()] = static_cast<int>(i);
  const auto idx = [&](int g) { return index.at(std::to_string(g)); };

  // The waits: as planted.
  std::multiset<std::tuple<int, int, int64_t>> planted, found;
  int64_t sum = 0;
  for (const auto& w : sj.chain_waits) {
    planted.insert({idx(w.rank), idx(w.on), w.ns});
    sum += w.ns;
  }
  for (const Wait& w : job.waits.list)
    found.insert({static_cast<int>(w.rank), static_cast<int>(w.on), w.length()});
  EXPECT_EQ(found, planted);

  const WaitAnalysis wa = analyze_waits(job);
  int64_t total = 0;
  std::set<int> named;
  for (const RootCause& rc : wa.roots) {
    total += rc.cost_ns;
    if (rc.cost_ns >= kMinRootCostNs) named.insert(static_cast<int>(rc.rank));
  }
  EXPECT_EQ(total, sum);
  std::set<int> tails;
  for (int g : sj.chain_roots) tails.insert(idx(g));
  EXPECT_EQ(named, tails);
  for (const RootCause& rc : wa.roots)
    if (tails.count(static_cast<int>(rc.rank))) {
      EXPECT_EQ(rc.cost_ns, 3 * 3 * (100 * kMs + 30000)) << job.ranks[rc.rank].rank();
      EXPECT_EQ(rc.cause, "late to post (no kernel log of its node)");
    }

  const std::string out = dir + "/out";
  std::vector<std::string> files;
  ASSERT_TRUE(write_perfetto(job, out, PerfettoOptions(), &files, &err)) << err;
  const test::Decoded d = test::decode_trace(out + "/trace.pftrace");
  ASSERT_TRUE(d.ok) << d.problem;
  EXPECT_EQ(test::check_tracks(d), "");
  std::map<uint64_t, int> rank_of_track;  // process tracks' pids are 1000 + g
  for (const test::Descriptor& x : d.descs)
    if (x.process) rank_of_track[x.uuid] = static_cast<int>(x.pid) - 1000;
  for (const test::Descriptor& x : d.descs)
    if (!x.process && rank_of_track.count(x.parent))
      rank_of_track[x.uuid] = rank_of_track[x.parent];
  std::map<uint64_t, const test::TraceEvent*> ends;
  std::map<uint64_t, uint64_t> open;  // track -> its open slice's start
  std::multiset<std::tuple<int, int64_t>> slices;
  std::map<const test::TraceEvent*, int> roots;  // instant -> flows ending at it
  for (const test::TraceEvent& e : d.events)
    for (uint64_t f : e.flow_ends) ends[f] = &e;
  size_t flows = 0;
  for (const test::TraceEvent& e : d.events) {
    if (e.type == 1 && e.name.rfind("waiting for ", 0) == 0) {
      open[e.track] = e.ts;
      ASSERT_EQ(e.flows.size(), 1u);
      ASSERT_TRUE(ends.count(e.flows[0]));
      const test::TraceEvent& to = *ends.at(e.flows[0]);
      const int g = rank_of_track.at(e.track);
      EXPECT_EQ(rank_of_track.at(to.track), (g / 4) * 4 + 3) << e.name;
      EXPECT_EQ(to.name, "root cause: late to post (no kernel log of its node)");
      EXPECT_GT(to.ts, e.ts);
      ++roots[&to];
      ++flows;
    } else if (e.type == 2 && open.count(e.track)) {
      slices.insert({idx(rank_of_track.at(e.track)), static_cast<int64_t>(e.ts - open[e.track])});
      open.erase(e.track);
    }
  }
  std::multiset<std::tuple<int, int64_t>> planted_lengths;
  for (const auto& w : sj.chain_waits) planted_lengths.insert({idx(w.rank), w.ns});
  EXPECT_EQ(slices, planted_lengths);
  EXPECT_EQ(flows, sj.chain_waits.size());
  EXPECT_EQ(roots.size(), 3u * 3);  // a chain's root per round
  for (const auto& [ev, n] : roots) EXPECT_EQ(n, 3) << ev->name;
  test::remove_tree(dir);
}

}  // namespace
}  // namespace fabtrace::report
