#include "common/clock.h"

#include <gtest/gtest.h>

#include <thread>

namespace fabtrace {
namespace {

// Ticks converted through the calibration land on CLOCK_MONOTONIC.
TEST(Clock, TicksMapOntoMonotonic) {
  clock_init();
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  const Calibration cal = clock_calibration();
  for (int i = 0; i < 5; ++i) {
    const uint64_t a = mono_ns();
    const uint64_t t = now_ticks();
    const uint64_t b = mono_ns();
    const uint64_t m = cal.to_mono_ns(t);
    // Within the bracket, plus a generous allowance for the slope measured
    // over a short baseline on a loaded VM.
    EXPECT_GE(m + 200000, a);
    EXPECT_LE(m, b + 200000);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!cal.tsc) {
    EXPECT_DOUBLE_EQ(cal.ns_per_tick, 1.0);
  }
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
