// The one clock of fabtrace: every stored time is CLOCK_MONOTONIC nanoseconds or
// converts to it through the calibration kept here.
//
// The data path reads raw "ticks": the TSC where the CPU has an invariant TSC
// (about 10 ns a read here), CLOCK_MONOTONIC nanoseconds otherwise (about 25 ns).
// Durations and histograms stay in ticks on the data path; the report converts
// them with the calibration taken over the whole run, so the data path never
// multiplies or divides.
#pragma once

#include <cstdint>
#include <ctime>
#include <mutex>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define FABTRACE_HAVE_TSC 1
#else
#define FABTRACE_HAVE_TSC 0
#endif

namespace fabtrace {

namespace clock_detail {
// Set once by clock_init() before any wrapped object exists; read-only after.
extern bool g_use_tsc;
}  // namespace clock_detail

inline uint64_t mono_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t real_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

// Whether ticks are TSC cycles (decided by clock_init()).
inline bool clock_uses_tsc() { return clock_detail::g_use_tsc; }

// The hot-path timestamp, in ticks.
inline uint64_t now_ticks() {
#if FABTRACE_HAVE_TSC
  if (clock_detail::g_use_tsc) return __rdtsc();
#endif
  return mono_ns();
}

// Maps ticks onto CLOCK_MONOTONIC: mono_ns = mono0_ns + (ticks - tick0) * ns_per_tick.
struct Calibration {
  bool tsc = false;          // ticks are TSC cycles (else they are already ns)
  double ns_per_tick = 1.0;  // slope
  uint64_t tick0 = 0;        // a tick value ...
  uint64_t mono0_ns = 0;     // ... and the CLOCK_MONOTONIC time it corresponds to
  uint64_t real0_ns = 0;     // CLOCK_REALTIME read at the same instant (wall anchor)
  double residual_ns = 0;    // largest |fit - CLOCK_MONOTONIC| over the pairs fitted
  uint64_t pairs = 0;        // (ticks, CLOCK_MONOTONIC) pairs behind the fit

  double ticks_to_ns(uint64_t dticks) const { return static_cast<double>(dticks) * ns_per_tick; }
  uint64_t to_mono_ns(uint64_t ticks) const {
    const double d = (static_cast<double>(ticks) - static_cast<double>(tick0)) * ns_per_tick;
    return mono0_ns + static_cast<uint64_t>(static_cast<int64_t>(d));
  }
  uint64_t ns_to_ticks(double ns) const { return static_cast<uint64_t>(ns / ns_per_tick); }
  // to_mono_ns for ticks and a calibration read back from a file: false when
  // the result is not a time in [0, limits::kMaxTimeNs] (where to_mono_ns
  // would overflow). The calibration itself must pass valid_from_file().
  bool mono_ns_checked(uint64_t ticks, int64_t* out) const;
  // Slope, anchors and residual within common/input_limits.h's bounds.
  bool valid_from_file() const;
};

// One reading of the tick clock, CLOCK_MONOTONIC and CLOCK_REALTIME at (nearly)
// the same instant: the tick read is bracketed by two monotonic reads and the
// tightest of a few brackets wins.
struct ClockPair {
  uint64_t ticks = 0, mono_ns = 0, real_ns = 0;
};
ClockPair sample_clock_pair();

// Least-squares line through (ticks, CLOCK_MONOTONIC) pairs taken over the run.
// Keeps at most kMaxPairs (thinning to every other pair when full, so the
// baseline keeps its span). Thread-safe; never on the data path.
class ClockFit {
 public:
  static constexpr size_t kMaxPairs = 1024;
  void add(const ClockPair& p);
  // The fitted calibration; with fewer than two pairs, or ticks that are
  // nanoseconds already, the identity through the first pair.
  Calibration fit(bool tsc) const;

 private:
  mutable std::mutex mu_;
  std::vector<ClockPair> pairs_;
};

// Decides TSC or clock_gettime (FABTRACE_CLOCK=tsc|mono overrides) and takes a
// first calibration (about 2 ms of spinning when the TSC is used). Idempotent.
void clock_init();

// Adds a pair to the process's fit now (control path: object creation, the
// background writer's ticks, exit).
void clock_add_pair();

// The process's fit, including a pair taken now.
Calibration clock_calibration();

// Whether this CPU advertises an invariant TSC (constant_tsc + nonstop_tsc).
bool cpu_has_invariant_tsc();

}  // namespace fabtrace
