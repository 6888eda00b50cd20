#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "preload/nic_busy.h"

namespace fabtrace {
namespace {

using Window = PeriodWindow<8>;

// Overlapping ops count once: busy time is the union of in-flight intervals.
TEST(PeriodWindow, UnionOfOverlappingIntervals) {
  Window w;
  w.insert(2000, 3000);
  w.insert(1000, 5000);  // completes later, issued earlier: swallows the first
  w.insert(9000, 9800);
  EXPECT_EQ(w.total(), 4000u + 800u);
  EXPECT_EQ(w.n, 2u);
}

// Completions arrive out of order (several threads, several CQs): an interval
// that bridges earlier periods merges them; one in a gap lands in it.
TEST(PeriodWindow, LateOpsBridgeOrFillGaps) {
  Window w;
  w.insert(0, 10);
  w.insert(20, 30);
  w.insert(40, 50);
  EXPECT_EQ(w.total(), 30u);
  w.insert(5, 45);  // in flight across both idle gaps
  EXPECT_EQ(w.total(), 50u);
  EXPECT_EQ(w.n, 1u);
  w.insert(60, 70);
  w.insert(55, 58);  // between two periods
  EXPECT_EQ(w.total(), 50u + 10u + 3u);
  EXPECT_EQ(w.n, 3u);
  EXPECT_EQ(w.s(1), 55u);
}

TEST(PeriodWindow, EmptyAndBackwardIntervalsAddNothing) {
  Window w;
  w.insert(100, 100);
  w.insert(200, 150);
  EXPECT_EQ(w.total(), 0u);
  EXPECT_EQ(w.n, 0u);
}

// Periods older than the window are folded into a total; an op reaching back
// past them counts only from the newest folded period's end.
TEST(PeriodWindow, FoldedPeriodsAreKeptAndNotCountedTwice) {
  Window w;
  const uint64_t periods = 24;
  for (uint64_t i = 0; i < periods; ++i) w.insert(i * 100, i * 100 + 10);
  EXPECT_EQ(w.total(), periods * 10);
  EXPECT_EQ(w.n, 8u);
  w.insert(0, 10);  // an old period again: nothing new
  EXPECT_EQ(w.total(), periods * 10);
  // One op spanning everything: counted from the folded end (the documented
  // approximation), merging the whole window into one period.
  const uint64_t folded_end = (periods - 9) * 100 + 10;
  w.insert(0, periods * 100);
  EXPECT_EQ(w.total(), (periods - 8) * 10 + (periods * 100 - folded_end));
  EXPECT_EQ(w.n, 1u);
}

// A full window takes a late period in one of its gaps by folding its oldest;
// a late period older than every kept one goes straight to the folded total.
TEST(PeriodWindow, FullWindowTakesLatePeriodsExactly) {
  Window w;
  for (uint64_t i = 0; i < 8; ++i) w.insert(i * 100, i * 100 + 10);
  w.insert(350, 360);  // gap between the 4th and 5th
  EXPECT_EQ(w.total(), 90u);
  EXPECT_EQ(w.n, 8u);
  w.insert(150, 155);  // older than every kept period now (the oldest is 200)
  EXPECT_EQ(w.total(), 95u);
}

// The shared window, through a thread's local one, with the try-lock and with
// the plain updates of a FI_THREAD_DOMAIN domain: a ping-pong (one period per
// op) is counted exactly.
class NicBusyTest : public ::testing::TestWithParam<bool> {};

TEST_P(NicBusyTest, PingPongThroughTheLocalWindow) {
  NicBusy nic;
  nic.serial = GetParam();
  NicLocal l;
  l.nic = &nic;
  for (uint64_t i = 0; i < 1000; ++i) l.add(i * 100, i * 100 + 40);
  l.add(99920, 100000);  // overlaps the last one, [99900, 99940]
  ASSERT_TRUE(l.flush());
  EXPECT_EQ(nic.busy_ticks(), 999 * 40u + 100u);
}

INSTANTIATE_TEST_SUITE_P(Updates, NicBusyTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? std::string("Serial") : std::string("TryLock");
                         });

// A thread that finds the shared window locked goes on without waiting.
TEST(NicBusy, HeldLockNeverBlocks) {
  NicBusy nic;
  NicLocal l;
  l.nic = &nic;
  nic.lock.store(1);
  for (uint64_t i = 0; i < 100; ++i) l.add(i * 100, i * 100 + 10);
  EXPECT_FALSE(l.flush());
  nic.lock.store(0);
  ASSERT_TRUE(l.flush());
  EXPECT_EQ(nic.busy_ticks(), 1000u);  // folded locally, not lost
}

// Two threads completing the same ops of one NIC at once (as if both had
// polled them): the union is their length, never less; periods a thread had
// to fold on its own while the other held the lock may count twice.
TEST(NicBusy, ConcurrentThreadsNeverUndercount) {
  NicBusy nic;
  constexpr uint64_t kOps = 20000;
  std::vector<NicLocal> local(2);
  std::vector<std::thread> ts;
  for (int t = 0; t < 2; ++t)
    ts.emplace_back([&nic, &local, t] {
      local[t].nic = &nic;
      for (uint64_t i = 0; i < kOps; ++i) local[t].add(i * 100, i * 100 + 60);
    });
  for (auto& th : ts) th.join();
  for (NicLocal& l : local) {
    ASSERT_TRUE(l.flush());
  }
  EXPECT_GE(nic.busy_ticks(), kOps * 60);
  EXPECT_LE(nic.busy_ticks(), 2 * kOps * 60);
}

}  // namespace
}  // namespace fabtrace
