#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <utility>
#include <vector>

#include "preload/nic_busy.h"

namespace fabtrace {
namespace {

using Ring = BusyPeriodRing<8>;

// Overlapping ops count once: busy time is the union of in-flight intervals.
TEST(BusyPeriodRing, UnionOfOverlappingIntervals) {
  Ring w;
  w.insert(2000, 3000);
  w.insert(1000, 5000);  // completes later, issued earlier: swallows the first
  w.insert(9000, 9800);
  EXPECT_EQ(w.total(), 4000u + 800u);
  EXPECT_EQ(w.n, 2u);
}

// Completions arrive out of order (several threads, several CQs): an interval
// that bridges earlier periods merges them; one in a gap lands in it.
TEST(BusyPeriodRing, LateOpsBridgeOrFillGaps) {
  Ring w;
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

TEST(BusyPeriodRing, EmptyAndBackwardIntervalsAddNothing) {
  Ring w;
  w.insert(100, 100);
  w.insert(200, 150);
  EXPECT_EQ(w.total(), 0u);
  EXPECT_EQ(w.n, 0u);
}

// Periods older than the ring are folded into a total; an op reaching back
// past them counts only from the newest folded period's end.
TEST(BusyPeriodRing, FoldedPeriodsAreKeptAndNotCountedTwice) {
  Ring w;
  const uint64_t periods = 24;
  for (uint64_t i = 0; i < periods; ++i) w.insert(i * 100, i * 100 + 10);
  EXPECT_EQ(w.total(), periods * 10);
  EXPECT_EQ(w.n, 8u);
  w.insert(0, 10);  // an old period again: nothing new
  EXPECT_EQ(w.total(), periods * 10);
  // One op spanning everything: counted from the folded end (the documented
  // approximation), merging the whole ring into one period.
  const uint64_t folded_end = (periods - 9) * 100 + 10;
  w.insert(0, periods * 100);
  EXPECT_EQ(w.total(), (periods - 8) * 10 + (periods * 100 - folded_end));
  EXPECT_EQ(w.n, 1u);
}

// A full ring takes a late period in one of its gaps by folding its oldest;
// a late period older than every kept one goes straight to the folded total.
TEST(BusyPeriodRing, FullRingTakesLatePeriodsExactly) {
  Ring w;
  for (uint64_t i = 0; i < 8; ++i) w.insert(i * 100, i * 100 + 10);
  w.insert(350, 360);  // gap between the 4th and 5th
  EXPECT_EQ(w.total(), 90u);
  EXPECT_EQ(w.n, 8u);
  w.insert(150, 155);  // older than every kept period now (the oldest is 200)
  EXPECT_EQ(w.total(), 95u);
}

// The shared ring, through a thread's local one, with the try-lock and with
// the plain updates of a FI_THREAD_DOMAIN domain: a ping-pong (one period per
// op) is counted exactly.
class NicBusyTest : public ::testing::TestWithParam<bool> {};

TEST_P(NicBusyTest, PingPongThroughTheLocalRing) {
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

// A thread that finds the shared ring locked goes on without waiting.
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

// Where there is no thread ring to keep a period in while the NIC's shared
// ring is held (a NIC past kMaxNics, a thread's ring at exit), it is counted in
// the totals, out of the time bins: never lost, never waited for.
TEST(NicBusy, HeldLockWithoutAThreadRingCountsInTheTotals) {
  NicBusy nic;
  nic.lock.store(1);
  nic.add_shared(100, 150, 64);
  NicLocal l;
  l.nic = &nic;
  l.add(200, 230, 32);
  l.flush_at_exit();
  EXPECT_EQ(l.w.n, 0u);
  nic.lock.store(0);
  EXPECT_EQ(nic.busy_ticks(), 80u);
  EXPECT_EQ(nic.unbinned_busy_ticks(), 80u);
  EXPECT_EQ(nic.unbinned_busy_bytes(), 96u);
  nic.add_shared(300, 310, 8);  // free again: into the shared ring
  EXPECT_EQ(nic.shared_ring.n, 1u);
  EXPECT_EQ(nic.busy_ticks(), 90u);
  EXPECT_EQ(nic.unbinned_busy_ticks(), 80u);
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

// Bytes ride with their periods: merged periods add theirs up, and nothing is
// lost when the ring folds.
TEST(BusyPeriodRing, BytesFollowTheirPeriods) {
  Ring w;
  w.insert(0, 100, 10);
  w.insert(50, 150, 20);  // overlaps: one period
  w.insert(200, 300, 5);
  EXPECT_EQ(w.n, 2u);
  EXPECT_EQ(w.b(0), 30u);
  w.insert(90, 250, 1);  // bridges both
  EXPECT_EQ(w.n, 1u);
  EXPECT_EQ(w.b(0), 36u);
  for (uint64_t i = 1; i <= 20; ++i) w.insert(i * 1000, i * 1000 + 10, i);
  EXPECT_EQ(w.total_bytes(), 36u + 210u);
}

// A period inside one bin lands there whole; one across bins is split
// by its time in each, its bytes in proportion, adding up exactly.
TEST(NicBins, PeriodsSpreadOverTheirBins) {
  NicBins b;
  b.origin = 1000;
  b.shift = 4;  // 16-tick bins
  b.add(1000 + 2, 1000 + 10, 7);
  EXPECT_EQ(b.busy[0], 8u);
  EXPECT_EQ(b.bytes[0], 7u);
  b.add(1000 + 24, 1000 + 72, 480);  // 8 ticks in bin 1, 16 in 2 and 3, 8 in 4
  EXPECT_EQ(b.busy[1], 8u);
  EXPECT_EQ(b.busy[2], 16u);
  EXPECT_EQ(b.busy[3], 16u);
  EXPECT_EQ(b.busy[4], 8u);
  EXPECT_EQ(b.bytes[1], 80u);
  EXPECT_EQ(b.bytes[2], 160u);
  EXPECT_EQ(b.bytes[3], 160u);
  EXPECT_EQ(b.bytes[4], 80u);
  EXPECT_EQ(b.used, 5u);
  b.add(500, 1000 + 1, 3);  // before the origin: counted from it
  EXPECT_EQ(b.busy[0], 9u);
}

// Memory is fixed: a period past the last bin merges bins pairwise and
// doubles their width; totals stay.
TEST(NicBins, CoarsenWhenFull) {
  NicBins b;
  b.shift = 0;
  uint64_t busy = 0, bytes = 0;
  for (uint64_t i = 0; i < NicBins::kBins; ++i) {
    b.add(i, i + 1, 2);
    busy += 1;
    bytes += 2;
  }
  EXPECT_EQ(b.shift, 0u);
  b.add(3 * NicBins::kBins, 3 * NicBins::kBins + 4, 8);  // needs bins up to 3 * kBins
  busy += 4;
  bytes += 8;
  EXPECT_EQ(b.shift, 2u);
  EXPECT_LE(b.used, NicBins::kBins);
  uint64_t got_busy = 0, got_bytes = 0;
  for (uint32_t i = 0; i < NicBins::kBins; ++i) got_busy += b.busy[i], got_bytes += b.bytes[i];
  EXPECT_EQ(got_busy, busy);
  EXPECT_EQ(got_bytes, bytes);
  EXPECT_EQ(b.busy[0], 4u);  // four 1-tick periods in the first 4-tick bin
}

// The NIC's time bins get every period once the shared ring folds them, and
// the rest at exit (bin_all): their totals are the whole-run ones.
TEST(NicBusy, BinsAddUpToTheWholeRun) {
  NicBusy nic;
  nic.activity.bins.shift = 6;
  NicLocal l;
  l.nic = &nic;
  for (uint64_t i = 0; i < 1000; ++i) l.add(i * 100, i * 100 + 40, 4096);
  ASSERT_TRUE(l.flush());
  nic.shared_ring.bin_all();
  uint64_t busy = 0, bytes = 0;
  const NicBins& b = nic.activity.bins;
  for (uint32_t i = 0; i < b.used; ++i) busy += b.busy[i], bytes += b.bytes[i];
  EXPECT_EQ(busy, nic.busy_ticks());
  EXPECT_EQ(bytes, 1000u * 4096u);
  EXPECT_EQ(nic.unbinned_ticks, 0u);
}

// A run that falls between a full ring's oldest periods: the oldest of the
// ring and of the run leave it, in time order, as one period at a time would.
TEST(BusyPeriodRing, ARunIntoAFullRingFoldsTheOldestFirst) {
  Ring g;
  for (uint64_t i = 0; i < 8; ++i) g.insert(i * 100, i * 100 + 10, 1);
  BusyPeriodRing<4> run;
  for (uint64_t i = 0; i < 4; ++i) run.insert(20 + i * 20, 30 + i * 20, 2);
  Ring::MergeSpace<4> space;
  g.insert_run(run, space);
  EXPECT_EQ(g.n, 8u);
  EXPECT_EQ(g.s(0), 80u);  // the run's newest, then the ring's seven newest
  EXPECT_EQ(g.s(1), 100u);
  EXPECT_EQ(g.e(7), 710u);
  EXPECT_EQ(g.folded, 40u);  // [0, 10] [20, 30] [40, 50] [60, 70]
  EXPECT_EQ(g.folded_end, 70u);
  EXPECT_EQ(g.total(), 120u);
  EXPECT_EQ(g.total_bytes(), 8u + 8u);
  BusyPeriodRing<4> late;  // across the folded ones and two kept: from their end, the two merged
  late.insert(50, 150, 4);
  g.insert_run(late, space);
  EXPECT_EQ(g.n, 7u);
  EXPECT_EQ(g.s(0), 70u);
  EXPECT_EQ(g.e(0), 150u);
  EXPECT_EQ(g.total(), 40u + 80u + 60u);
  EXPECT_EQ(g.total_bytes(), 20u);
}

// Ops as threads complete them, one NIC: mostly one at a time, 20-60 ticks
// apart; some in flight across tens of others (across a flush); with `far`, a
// few across hundreds (past what the shared ring keeps).
struct OpStream {
  uint64_t seed, t = 100000;  // after the bins' origin, also for ops that reach back
  uint64_t rnd(uint64_t n) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (seed >> 33) % n;
  }
  struct Op {
    int thread;
    uint64_t a, b, bytes;
    bool far;
  };
  // skewed: the second thread completes one op in 20.
  Op next(int threads, bool far, bool skewed = false) {
    t += 20 + rnd(40);
    const int thread = skewed ? (rnd(20) == 0) : static_cast<int>(rnd(threads));
    const uint64_t r = rnd(1000);
    const bool reach_far = far && r >= 995;
    const uint64_t back = r < 960 ? 0 : reach_far ? rnd(25000) : rnd(2500);
    return {thread, t > back ? t - back : 0, t + 1 + rnd(15), rnd(4096), reach_far};
  }
};

// The length of the union of [a, b] intervals.
uint64_t union_length(std::vector<std::pair<uint64_t, uint64_t>> v) {
  std::sort(v.begin(), v.end());
  uint64_t total = 0, lo = 0, hi = 0;
  bool open = false;
  for (const auto& [a, b] : v) {
    if (open && a <= hi) {
      hi = std::max(hi, b);
      continue;
    }
    if (open) total += hi - lo;
    lo = a, hi = b, open = true;
  }
  return open ? total + hi - lo : total;
}

// The shared ring's periods are in time order, disjoint, none before the
// folded ones.
template <int N>
void ExpectOrdered(BusyPeriodRing<N>& g) {
  for (uint32_t i = 0; i < g.n; ++i) {
    ASSERT_LT(g.s(i), g.e(i)) << i;
    ASSERT_GE(g.s(i), i ? g.e(i - 1) + 1 : g.folded_end) << i;
  }
}

// Each thread's flush merges its periods into the NIC's shared ring in one
// pass: the NIC's busy time is the exact union of every thread's ops as long
// as none reaches back past the periods the shared ring keeps, and its time
// bins get every tick and byte once.
TEST(NicBusy, FlushesKeepTheUnionOfEveryThreadsOps) {
  for (const int threads : {1, 2}) {
    NicBusy nic;
    nic.set_bins(1000, 8, 4096);
    NicLocal local[2];
    NicLocal::Space spaces[2];  // each thread merges in its own, as the preload's do
    local[0].space = &spaces[0];
    local[1].space = &spaces[1];
    OpStream ops{static_cast<uint64_t>(7 + threads)};
    std::vector<std::pair<uint64_t, uint64_t>> all;
    uint64_t bytes = 0;
    for (int i = 0; i < 100000; ++i) {
      const OpStream::Op op = ops.next(threads, false);
      local[op.thread].nic = &nic;
      local[op.thread].add(op.a, op.b, op.bytes);
      all.emplace_back(op.a, op.b);
      bytes += op.bytes;
    }
    for (int th = 0; th < threads; ++th) ASSERT_TRUE(local[th].flush());
    ExpectOrdered(nic.shared_ring);
    EXPECT_EQ(nic.busy_ticks(), union_length(all)) << threads;
    EXPECT_EQ(nic.shared_ring.total_bytes(), bytes);
    nic.shared_ring.bin_all();
    nic.activity.finish();
    uint64_t bin_busy = 0, bin_bytes = 0;
    for (uint32_t i = 0; i < NicBins::kBins; ++i)
      bin_busy += nic.activity.bins.busy[i], bin_bytes += nic.activity.bins.bytes[i];
    EXPECT_EQ(bin_busy, nic.busy_ticks());
    EXPECT_EQ(bin_bytes, bytes);
    EXPECT_EQ(nic.unbinned_busy_ticks(), 0u);
    EXPECT_GT(nic.activity.bins.used, 1u);
  }
}

// An op that reaches back past the periods the shared ring keeps counts from
// their end, and so do the periods of a thread that completes few of the NIC's
// ops (its ring's oldest fall behind the others'): the NIC's busy time is never
// more than the union of its ops, never less than that of the busy thread's ops
// that do not reach back, and no byte is lost.
TEST(NicBusy, OpsReachingPastTheSharedRingNeverOvercount) {
  for (const int config : {1, 2, 3}) {  // threads; 3: two threads, the second completing 1 in 20
    const int threads = config == 1 ? 1 : 2;
    NicBusy nic;
    NicLocal local[2];
    OpStream ops{static_cast<uint64_t>(17 + config)};
    std::vector<std::pair<uint64_t, uint64_t>> all, near;
    uint64_t bytes = 0;
    int far = 0;
    for (int i = 0; i < 100000; ++i) {
      const OpStream::Op op = ops.next(threads, true, config == 3);
      local[op.thread].nic = &nic;
      local[op.thread].add(op.a, op.b, op.bytes);
      all.emplace_back(op.a, op.b);
      if (!op.far && (config != 3 || op.thread == 0)) near.emplace_back(op.a, op.b);
      far += op.far;
      bytes += op.bytes;
    }
    for (int th = 0; th < threads; ++th) ASSERT_TRUE(local[th].flush());
    ExpectOrdered(nic.shared_ring);
    EXPECT_GT(far, 100);
    EXPECT_LE(nic.busy_ticks(), union_length(all)) << config;
    EXPECT_GE(nic.busy_ticks(), union_length(near)) << config;
    EXPECT_LT(nic.busy_ticks(), union_length(all)) << "no op reached past the shared ring";
    EXPECT_EQ(nic.shared_ring.total_bytes(), bytes) << config;
  }
}

// NicActivity's shortcut for a period inside the bin and window of the one
// before must leave the time bins and the busiest stretch exactly as feeding
// each period to NicBins and NicPeak does: ascending periods of random lengths
// and gaps (most inside one bin, some across several, some far enough to make
// the bins coarsen), bytes of their own.
TEST(NicActivity, ShortcutEqualsTheBinsAndThePeak) {
  for (const uint32_t peak_shift : {4u, 6u, 10u}) {
    NicActivity act;
    NicBins bins;
    NicPeak peak;
    act.bins.origin = act.peak.origin = bins.origin = peak.origin = 1000;
    act.bins.shift = bins.shift = 6;
    act.peak.shift = peak.shift = peak_shift;
    act.peak.span = peak.span = uint64_t{3} << peak_shift;
    uint64_t seed = 12345 + peak_shift, t = 900;
    const auto rnd = [&seed](uint64_t n) {
      seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
      return (seed >> 33) % n;
    };
    for (int i = 0; i < 200000; ++i) {
      const uint64_t r = rnd(1000);
      const uint64_t gap = r < 990 ? rnd(8) : rnd(5000);
      const uint64_t len = r % 7 == 0 ? rnd(300) : 1 + rnd(20);
      const uint64_t a = t + gap, b = a + len, n = rnd(4096);
      act.add(a, b, n);
      bins.add(a, b, n);
      peak.add(a, b, n);
      t = b;
    }
    act.finish();
    peak.finish();
    ASSERT_EQ(act.bins.shift, bins.shift) << peak_shift;
    ASSERT_EQ(act.bins.used, bins.used);
    for (uint32_t i = 0; i < NicBins::kBins; ++i) {
      ASSERT_EQ(act.bins.busy[i], bins.busy[i]) << i;
      ASSERT_EQ(act.bins.bytes[i], bins.bytes[i]) << i;
    }
    EXPECT_DOUBLE_EQ(act.peak.best_bytes, peak.best_bytes);
    EXPECT_EQ(act.peak.best_busy, peak.best_busy);
    EXPECT_EQ(act.peak.best_start, peak.best_start);
    EXPECT_EQ(act.peak.best_end, peak.best_end);
    EXPECT_GT(bins.shift, 6u);  // the run was long enough to coarsen
  }
}

NicPeak peak_of(uint32_t shift, uint64_t span) {
  NicPeak p;
  p.shift = shift;
  p.span = span;
  return p;
}

// Where a NIC's peak (1024-tick windows) is found among its periods.
struct Period {
  uint64_t a, b, bytes;
};
struct PeakCase {
  const char* name;
  std::vector<Period> periods;
  double bytes;
  uint64_t busy, start, end;  // the window found: bytes, busy ticks, first issue, last completion
};

void PrintTo(const PeakCase& c, std::ostream* os) { *os << c.name; }

// Ten 15-tick ops of `bytes` each, one every 20 ticks from `from`, after `before`.
std::vector<Period> burst(uint64_t from, uint64_t bytes, std::vector<Period> before = {}) {
  for (uint64_t i = 0; i < 10; ++i) before.push_back({from + i * 20, from + i * 20 + 15, bytes});
  return before;
}

class NicPeakWindow : public ::testing::TestWithParam<PeakCase> {};

TEST_P(NicPeakWindow, IsTheFastestByBusyTime) {
  NicPeak p = peak_of(10, 1000);
  for (const Period& x : GetParam().periods) p.add(x.a, x.b, x.bytes);
  p.finish();
  EXPECT_DOUBLE_EQ(p.best_bytes, GetParam().bytes);
  EXPECT_EQ(p.best_busy, GetParam().busy);
  EXPECT_EQ(p.best_start, GetParam().start);
  EXPECT_EQ(p.best_end, GetParam().end);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, NicPeakWindow,
    ::testing::Values(
        // A burst's window, not a slow setup op's alone far away; busy time
        // is the ops' own (their gaps are idle), the stretch first issue to
        // last completion.
        PeakCase{"FastestWindow", burst(5200, 4096, {{0, 900, 16}}), 10 * 4096.0, 150, 5200,
                 5200 + 9 * 20 + 15},
        // Faster, not more bytes: 500 bytes in 10 busy ticks beat 1000 in 100.
        PeakCase{"FasterNotBusier", {{1024, 1124, 1000}, {2100, 2110, 500}}, 500, 10, 2100, 2110},
        // A burst across a window boundary at one rate: of its two windows
        // (the op across the boundary split by time, its bytes not rounded),
        // the one with more of its bytes.
        PeakCase{"EqualRatesTheMoreBytes", burst(2000, 150), 150 * 7 + 70, 7 * 15 + 7, 2048, 2195}),
    [](const ::testing::TestParamInfo<PeakCase>& i) { return std::string(i.param.name); });

// A period longer than a window counts by its share in each: its own rate in
// every window, so a window of it is the peak at that rate.
TEST(NicPeak, LongPeriodCountsByItsShareInEachWindow) {
  NicPeak p = peak_of(10, 1000);
  p.add(0, 10240, 102400);  // 10 bytes per tick over ten windows
  p.finish();
  EXPECT_DOUBLE_EQ(p.best_bytes, 10240);
  EXPECT_EQ(p.best_busy, 1024u);
  EXPECT_EQ(p.best_end - p.best_start, 1024u);
}

// Peak >= achieved by construction: over random ascending periods (lengths,
// gaps and bytes of their own, some across windows), the fastest window's
// bytes per busy tick is never below all bytes over all busy ticks.
TEST(NicPeak, NeverBelowTheWholeRunRate) {
  uint64_t seed = 777;
  const auto rnd = [&seed](uint64_t n) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (seed >> 33) % n;
  };
  for (int run = 0; run < 200; ++run) {
    NicPeak p = peak_of(8, 256);
    uint64_t t = 0, busy = 0, bytes = 0;
    const int n = 1 + static_cast<int>(rnd(300));
    for (int i = 0; i < n; ++i) {
      const uint64_t a = t + rnd(400), b = a + 1 + rnd(rnd(10) == 0 ? 2000 : 50);
      const uint64_t k = rnd(1 << 16);
      p.add(a, b, k);
      busy += b - a;
      bytes += k;
      t = b;
    }
    p.finish();
    if (!bytes) continue;
    ASSERT_GT(p.best_busy, 0u) << run;
    EXPECT_GE(p.best_bytes / static_cast<double>(p.best_busy),
              static_cast<double>(bytes) / static_cast<double>(busy) * (1 - 1e-12))
        << run;
  }
}

}  // namespace
}  // namespace fabtrace
