#include "common/clock.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>

namespace fabtrace {
namespace {

// Ticks converted through a fit of pairs taken over a short run agree with
// clock_gettime(CLOCK_MONOTONIC) within the fit's stated residual (plus the
// width of one bracketing read, which is what a single pair can be off by).
TEST(Clock, TicksAgreeWithMonotonicWithinTheResidual) {
  clock_init();
  ClockFit fit;
  for (int i = 0; i < 20; ++i) {
    fit.add(sample_clock_pair());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const Calibration cal = fit.fit(clock_uses_tsc());
  EXPECT_EQ(cal.pairs, 20u);
  EXPECT_GE(cal.residual_ns, 0.0);
  EXPECT_LT(cal.residual_ns, 1e6);  // a fit worse than 1 ms would be useless
  for (int i = 0; i < 10; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const uint64_t a = mono_ns();
    const uint64_t t = now_ticks();
    const uint64_t b = mono_ns();
    const double m = static_cast<double>(cal.to_mono_ns(t));
    // Extrapolating a little past the fitted span: allow 4x the residual.
    const double slack = 4 * cal.residual_ns + static_cast<double>(b - a) + 1000;
    EXPECT_GE(m + slack, static_cast<double>(a));
    EXPECT_LE(m, static_cast<double>(b) + slack);
  }
}

TEST(Clock, FitRecoversAKnownLine) {
  ClockFit fit;
  // ticks = 3 * ns + offset, exactly: slope 1/3 ns per tick, no residual.
  for (uint64_t k = 0; k < 50; ++k) {
    const uint64_t mono = 1000000000ULL + k * 7000000ULL;
    fit.add(ClockPair{3 * mono + 12345, mono, mono + 5000000000ULL});
  }
  const Calibration c = fit.fit(true);
  EXPECT_NEAR(c.ns_per_tick, 1.0 / 3.0, 1e-12);
  EXPECT_LT(c.residual_ns, 1.0);
  EXPECT_NEAR(static_cast<double>(c.to_mono_ns(3 * 2000000000ULL + 12345)), 2e9, 2.0);
  // The wall anchor keeps the pairs' (wall - mono) offset.
  EXPECT_EQ(static_cast<int64_t>(c.real0_ns) - static_cast<int64_t>(c.mono0_ns), 5000000000LL);
}

TEST(Clock, ThinningKeepsTheSpan) {
  ClockFit fit;
  for (uint64_t k = 0; k < 5 * ClockFit::kMaxPairs; ++k)
    fit.add(ClockPair{2 * k * 1000, k * 1000, k * 1000});
  const Calibration c = fit.fit(true);
  EXPECT_LE(c.pairs, ClockFit::kMaxPairs);
  EXPECT_NEAR(c.ns_per_tick, 0.5, 1e-9);
}

TEST(Clock, DurationsConvert) {
  clock_init();
  const Calibration cal = clock_calibration();
  const uint64_t t0 = now_ticks();
  const uint64_t m0 = mono_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const uint64_t t1 = now_ticks();
  const uint64_t m1 = mono_ns();
  const double d = cal.ticks_to_ns(t1 - t0);
  EXPECT_NEAR(d, static_cast<double>(m1 - m0), 0.01 * static_cast<double>(m1 - m0) + 5000);
}

TEST(Clock, WallAnchorIsNow) {
  const Calibration cal = clock_calibration();
  const uint64_t wall_now = real_ns();
  const uint64_t mono_now = mono_ns();
  const int64_t predicted = static_cast<int64_t>(cal.real0_ns + (mono_now - cal.mono0_ns));
  EXPECT_LT(std::llabs(predicted - static_cast<int64_t>(wall_now)), 50000000);  // NTP slew only
}

}  // namespace
}  // namespace fabtrace
