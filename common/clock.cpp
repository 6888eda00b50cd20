#include "common/clock.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "common/env.h"
#include "common/input_limits.h"

namespace fabtrace {
namespace clock_detail {
bool g_use_tsc = false;
}

namespace {
std::once_flag g_once;
ClockFit* g_fit = nullptr;  // never destroyed: used from exit handlers
}  // namespace

bool Calibration::valid_from_file() const {
  return ns_per_tick_ok(ns_per_tick) && time_ns_ok(mono0_ns) && time_ns_ok(real0_ns) &&
         finite_in(residual_ns, 0.0, static_cast<double>(limits::kMaxTimeNs));
}

bool Calibration::mono_ns_checked(uint64_t ticks, int64_t* out) const {
  // The tick difference as a signed value (a tick before tick0 is a time
  // before the anchor), scaled in double, then bounded before any integer
  // arithmetic so that neither the cast nor the sum can overflow.
  const double d = static_cast<double>(static_cast<int64_t>(ticks - tick0)) * ns_per_tick;
  constexpr double kMax = static_cast<double>(limits::kMaxTimeNs);
  if (!time_ns_ok(mono0_ns) || !finite_in(d, -kMax, kMax)) return false;
  const int64_t t = static_cast<int64_t>(mono0_ns) + std::llround(d);
  if (t < 0 || !time_ns_ok(static_cast<uint64_t>(t))) return false;
  *out = t;
  return true;
}

ClockPair sample_clock_pair() {
  ClockPair best{};
  uint64_t best_width = UINT64_MAX;
  for (int i = 0; i < 16; ++i) {
    const uint64_t a = mono_ns();
    const uint64_t t = now_ticks();
    const uint64_t b = mono_ns();
    if (b - a < best_width) {
      best_width = b - a;
      best = ClockPair{t, a + (b - a) / 2, 0};
    }
  }
  // The wall clock, moved back to the pair's instant.
  const uint64_t r = real_ns();
  best.real_ns = r - (mono_ns() - best.mono_ns);
  return best;
}

void ClockFit::add(const ClockPair& p) {
  std::lock_guard<std::mutex> lk(mu_);
  if (pairs_.size() >= kMaxPairs) {
    size_t j = 0;
    for (size_t i = 0; i < pairs_.size(); i += 2) pairs_[j++] = pairs_[i];
    pairs_.resize(j);
  }
  pairs_.push_back(p);
}

Calibration ClockFit::fit(bool tsc) const {
  std::lock_guard<std::mutex> lk(mu_);
  Calibration c;
  c.tsc = tsc;
  if (pairs_.empty()) return c;
  const ClockPair& f = pairs_.front();
  c.pairs = pairs_.size();
  c.real0_ns = f.real_ns;
  if (!tsc || pairs_.size() < 2) {
    // Ticks are CLOCK_MONOTONIC ns: the identity, anchored at the first pair.
    c.tick0 = tsc ? f.ticks : f.mono_ns;
    c.mono0_ns = f.mono_ns;
    c.ns_per_tick = 1.0;
    return c;
  }
  // Fit in coordinates relative to the first pair, where doubles are exact
  // enough (hours of ticks are < 2^53).
  double sx = 0, sy = 0;
  for (const ClockPair& p : pairs_) {
    sx += static_cast<double>(p.ticks - f.ticks);
    sy += static_cast<double>(static_cast<int64_t>(p.mono_ns - f.mono_ns));
  }
  const double n = static_cast<double>(pairs_.size());
  const double mx = sx / n, my = sy / n;
  double sxx = 0, sxy = 0;
  for (const ClockPair& p : pairs_) {
    const double dx = static_cast<double>(p.ticks - f.ticks) - mx;
    const double dy = static_cast<double>(static_cast<int64_t>(p.mono_ns - f.mono_ns)) - my;
    sxx += dx * dx;
    sxy += dx * dy;
  }
  if (sxx <= 0) return fit(false);
  const double slope = sxy / sxx;
  const double intercept = my - slope * mx;  // mono - mono_first at ticks == first ticks
  c.tick0 = f.ticks;
  c.mono0_ns = f.mono_ns + static_cast<uint64_t>(static_cast<int64_t>(std::llround(intercept)));
  c.real0_ns = f.real_ns + (c.mono0_ns - f.mono_ns);
  c.ns_per_tick = slope;
  double worst = 0;
  for (const ClockPair& p : pairs_) {
    const double pred = static_cast<double>(p.ticks - f.ticks) * slope + intercept;
    const double act = static_cast<double>(static_cast<int64_t>(p.mono_ns - f.mono_ns));
    worst = std::max(worst, std::fabs(pred - act));
  }
  c.residual_ns = worst;
  return c;
}

bool cpu_has_invariant_tsc() {
#if FABTRACE_HAVE_TSC
  FILE* f = std::fopen("/proc/cpuinfo", "r");
  if (!f) return false;
  char line[4096];
  bool constant = false, nonstop = false;
  while (std::fgets(line, sizeof(line), f)) {
    if (std::strncmp(line, "flags", 5) != 0) continue;
    constant = std::strstr(line, " constant_tsc") != nullptr;
    nonstop = std::strstr(line, " nonstop_tsc") != nullptr;
    break;
  }
  std::fclose(f);
  return constant && nonstop;
#else
  return false;
#endif
}

void clock_init() {
  std::call_once(g_once, [] {
    const std::string mode = env_choice("FABTRACE_CLOCK", {"auto", "tsc", "mono"}, "auto");
    const bool tsc =
        FABTRACE_HAVE_TSC && mode != "mono" && (mode == "tsc" || cpu_has_invariant_tsc());
    clock_detail::g_use_tsc = tsc;
    g_fit = new ClockFit();
    const ClockPair p0 = sample_clock_pair();
    g_fit->add(p0);
    if (tsc) {
      // A first slope over 2 ms, so that thresholds (poll-gap classes, the
      // 50 us late-receiver mark) can be expressed in ticks from the start.
      ClockPair p1;
      do {
        p1 = sample_clock_pair();
      } while (p1.mono_ns - p0.mono_ns < 2000000);
      g_fit->add(p1);
    }
  });
}

void clock_add_pair() {
  clock_init();
  g_fit->add(sample_clock_pair());
}

Calibration clock_calibration() {
  clock_add_pair();
  return g_fit->fit(clock_uses_tsc());
}

}  // namespace fabtrace
