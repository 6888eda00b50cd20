// --polls' runs (preload/poll_runs.h): which polls a run holds, when it ends,
// and when ended runs are handed over, on the calling thread, through a sink
// in place of the probe.
#include "preload/poll_runs.h"

#include <gtest/gtest.h>
#include <rdma/fi_errno.h>

#include <vector>

namespace fabtrace {
namespace {

std::vector<std::vector<probes::PollRun>> g_batches;

void keep(const probes::PollRun* runs, uint32_t n) { g_batches.emplace_back(runs, runs + n); }

class PollRuns : public ::testing::Test {
 protected:
  void SetUp() override {
    poll_runs::forget_thread();
    poll_runs::set_sink(keep);
    g_batches.clear();
  }
  void TearDown() override {
    poll_runs::forget_thread();
    poll_runs::set_sink(nullptr);
  }
  // A poll of `cq` at t, 10 ticks long, that returned n.
  static void poll(uint32_t cq, int64_t n, uint64_t t) { poll_runs::poll_ended(cq, n, t, t + 10); }
  static size_t runs() {
    size_t n = 0;
    for (const auto& b : g_batches) n += b.size();
    return n;
  }
};

// A run is the polls up to the one that finds something; it waits for the
// thread's next empty poll to be handed over, with fifteen others at most.
TEST_F(PollRuns, ARunEndsAtTheFirstPollThatFindsSomethingAndWaitsForABatch) {
  uint64_t t = 1000;
  for (int msg = 0; msg < 16; ++msg) {
    for (int i = 0; i < 5; ++i, t += 20) poll(1, -FI_EAGAIN, t);
    poll(1, 2, t);
    t += 20;
  }
  EXPECT_TRUE(g_batches.empty()) << "handed over at a poll that found something";
  poll(1, -FI_EAGAIN, t);  // the thread waits: the sixteen go in one batch
  ASSERT_EQ(g_batches.size(), 1u);
  ASSERT_EQ(g_batches[0].size(), 16u);
  const probes::PollRun& r = g_batches[0][0];
  EXPECT_EQ(r.cq, 1u);
  EXPECT_EQ(r.polls, 6u);
  EXPECT_EQ(r.ret, 2);
  EXPECT_EQ(r.start, 1000u);
  EXPECT_EQ(r.end, 1000u + 5 * 20 + 10);
  EXPECT_EQ(r.busy, 60u);
  for (size_t i = 1; i < 16; ++i) EXPECT_EQ(g_batches[0][i].start, g_batches[0][i - 1].end + 10);
}

// An ended run waits at most the bound for its batch; empty polls alone end a
// run once it spans the bound.
TEST_F(PollRuns, AnEndedRunWaitsAtMostTheBoundAndEmptyPollsEndARunThere) {
  const uint64_t bound = probes::poll_run_ticks();
  ASSERT_GT(bound, 100u);
  const uint64_t step = bound / 10;
  const uint64_t t0 = 5000;
  poll(2, 1, t0);  // a run of one poll, ended at t0 + 10
  uint64_t t = t0, empties = 0;
  while (g_batches.empty() && empties < 100) poll(2, -FI_EAGAIN, t += step), ++empties;
  ASSERT_EQ(g_batches.size(), 1u) << "never handed over";
  EXPECT_EQ(empties, 10u) << "handed over at the first empty poll a bound after its end";
  ASSERT_EQ(g_batches[0].size(), 1u);
  EXPECT_EQ(g_batches[0][0].polls, 1u);
  // The empty polls since: one run, ended once it spanned the bound, handed
  // over a bound later.
  while (g_batches.size() < 2 && empties < 100) poll(2, -FI_EAGAIN, t += step), ++empties;
  ASSERT_EQ(g_batches.size(), 2u);
  ASSERT_EQ(g_batches[1].size(), 1u);
  const probes::PollRun& r = g_batches[1][0];
  EXPECT_EQ(r.ret, -FI_EAGAIN);
  EXPECT_GE(r.end - r.start, bound);
  EXPECT_LT(r.end - r.start, bound + step);
  EXPECT_EQ(r.start, t0 + step);
  EXPECT_EQ(r.busy, r.polls * 10);
}

// Each CQ a thread polls in turn has its run; a fifth CQ ends the oldest.
// flush_thread() hands everything over, open runs too.
TEST_F(PollRuns, RunsArePerCqAndAThreadsEndHandsEveryRunOver) {
  uint64_t t = 100;
  for (int i = 0; i < 3; ++i)
    for (uint32_t cq = 1; cq <= 4; ++cq) poll(cq, -FI_EAGAIN, t += 20);
  EXPECT_TRUE(g_batches.empty());
  poll(5, -FI_EAGAIN, t += 20);  // CQ 1's run, the oldest, ends (and waits)
  EXPECT_TRUE(g_batches.empty());
  poll_runs::flush_thread();
  ASSERT_EQ(g_batches.size(), 1u);
  ASSERT_EQ(runs(), 5u);
  EXPECT_EQ(g_batches[0][0].cq, 1u) << "the run that ended first goes first";
  EXPECT_EQ(g_batches[0][0].polls, 3u);
  uint64_t total = 0;
  for (const auto& b : g_batches)
    for (const probes::PollRun& r : b) total += r.polls;
  EXPECT_EQ(total, 13u) << "every poll, once";
  poll_runs::flush_thread();
  EXPECT_EQ(runs(), 5u) << "nothing twice";
}

// An error ends a run as a completion does; a fork's child forgets the
// parent's runs.
TEST_F(PollRuns, AnErrorEndsARunAndAForkedChildForgetsItsParentsRuns) {
  poll(3, -FI_EAGAIN, 10);
  poll(3, -FI_EAVAIL, 30);
  poll(3, -FI_EAGAIN, 50);
  poll_runs::flush_thread();
  ASSERT_EQ(runs(), 2u);
  EXPECT_EQ(g_batches[0][0].ret, -FI_EAVAIL);
  EXPECT_EQ(g_batches[0][0].polls, 2u);
  EXPECT_EQ(g_batches[0][1].polls, 1u);
  poll(3, 1, 70);
  poll(3, -FI_EAGAIN, 90);
  poll_runs::forget_thread();
  poll_runs::flush_thread();
  EXPECT_EQ(runs(), 2u);
}

}  // namespace
}  // namespace fabtrace
