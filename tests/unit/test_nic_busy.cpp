#include <gtest/gtest.h>

#include "preload/objects.h"

namespace fabtrace {
namespace {

// Overlapping ops count once: busy time is the union of in-flight intervals.
TEST(NicBusy, UnionOfOverlappingIntervals) {
  NicBusy n;
  n.issue(1000);  // [1000, 5000)
  n.issue(2000);  // [2000, 3000) inside it
  n.complete(3000);
  n.complete(5000);
  n.issue(9000);  // [9000, 9800)
  n.complete(9800);
  EXPECT_EQ(n.busy_ticks(20000), (4000u + 800u) / 16 * 16);
}

TEST(NicBusy, OpenPeriodCountsUpToNow) {
  NicBusy n;
  n.issue(1600);
  EXPECT_EQ(n.busy_ticks(3200), 1600u);
  n.complete(4800);
  EXPECT_EQ(n.busy_ticks(100000), 3200u);
}

TEST(NicBusy, RefusedOpLeavesNoTime) {
  NicBusy n;
  n.issue(1000);
  n.unissue();
  EXPECT_EQ(n.busy_ticks(50000), 0u);
  n.complete(60000);  // nothing in flight: ignored
  EXPECT_EQ(n.busy_ticks(70000), 0u);
}

TEST(NicBusy, SurvivesTheWrapOfItsTimeUnits) {
  NicBusy n;
  const uint64_t wrap = 1ULL << (64 - NicBusy::kInflightBits + NicBusy::kUnitShift);
  n.issue(wrap - 1600);
  n.complete(wrap + 1600);
  EXPECT_EQ(n.busy_ticks(wrap + 5000), 3200u);
}

}  // namespace
}  // namespace fabtrace

namespace fabtrace {
namespace {

// A poll that completes several ops at once closes them with one update.
TEST(NicBusy, BatchedCompletionEqualsOneByOne) {
  NicBusy a, b;
  for (uint64_t t : {1600u, 3200u, 4800u}) {
    a.issue(t);
    b.issue(t);
  }
  a.complete(8000, 2);
  b.complete(8000);
  b.complete(8000);
  EXPECT_EQ(a.busy_ticks(8000), b.busy_ticks(8000));
  a.complete(9600, 1);
  b.complete(9600);
  EXPECT_EQ(a.busy_ticks(20000), b.busy_ticks(20000));
  EXPECT_EQ(a.busy_ticks(20000), 8000u);
  // More than are in flight: the period closes, nothing underflows.
  a.issue(30000);
  a.complete(31600, 5);
  EXPECT_EQ(a.busy_ticks(40000), 8000u + 1600u);
}

}  // namespace
}  // namespace fabtrace
