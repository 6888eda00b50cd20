#include "common/clock.h"

#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "common/env.h"

namespace fabtrace {
namespace clock_detail {
bool g_use_tsc = false;
}

namespace {
std::once_flag g_once;
Calibration g_start;  // written once under g_once

// One (ticks, mono, real) sample taken as close together as possible: the
// tick read is bracketed by two monotonic reads and the tightest bracket of a
// few tries wins, so the pairing error is a fraction of one clock_gettime.
struct Pair {
  uint64_t ticks, mono, real;
};
Pair sample_pair() {
  Pair best{};
  uint64_t best_width = UINT64_MAX;
  for (int i = 0; i < 16; ++i) {
    const uint64_t a = mono_ns();
    const uint64_t t = now_ticks();
    const uint64_t b = mono_ns();
    if (b - a < best_width) {
      best_width = b - a;
      best = Pair{t, a + (b - a) / 2, 0};
    }
  }
  best.real = real_ns();
  best.real -= mono_ns() - best.mono;  // move the wall read back to the pair's instant
  return best;
}
}  // namespace

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
    bool tsc = FABTRACE_HAVE_TSC && mode != "mono" && (mode == "tsc" || cpu_has_invariant_tsc());
    clock_detail::g_use_tsc = tsc;
    Pair p0 = sample_pair();
    g_start.tsc = tsc;
    g_start.tick0 = p0.ticks;
    g_start.mono0_ns = p0.mono;
    g_start.real0_ns = p0.real;
    g_start.ns_per_tick = 1.0;
    if (tsc) {
      // A short first slope so that thresholds (poll-gap classes, the 50 us
      // late-receiver mark) can be expressed in ticks from the start.
      Pair p1{};
      do {
        p1 = sample_pair();
      } while (p1.mono - p0.mono < 2000000);
      g_start.ns_per_tick =
          static_cast<double>(p1.mono - p0.mono) / static_cast<double>(p1.ticks - p0.ticks);
    }
  });
}

Calibration clock_calibration() {
  clock_init();
  Calibration c = g_start;
  if (!c.tsc) return c;
  Pair p = sample_pair();
  if (p.mono - c.mono0_ns >= 50000000 && p.ticks > c.tick0)
    c.ns_per_tick =
        static_cast<double>(p.mono - c.mono0_ns) / static_cast<double>(p.ticks - c.tick0);
  return c;
}

}  // namespace fabtrace
