// A NIC's activity over time: per time bin, the busy time (ticks with at
// least one op in flight) and the bytes of the ops that completed, in a fixed
// number of bins (the report calls them its time windows). This answers "was
// the NIC saturated" where the whole-run figure (bytes / whole busy time)
// cannot: one slow op anywhere in the run weighs on the whole-run figure, only
// on its own bins here.
//
// Busy periods (nic_busy.h) arrive here once they are final, each with the
// bytes of the ops completed in it. A period's bytes are spread over its
// bins in proportion to its time in each, so a bin's bytes / busy time
// is the time-weighted mean rate of the periods that touch it, never more than
// the fastest of them. Memory is fixed: when a period ends past the last
// bin, bins merge pairwise and their width doubles.
#pragma once

#include <cstdint>

namespace fabtrace {

// Splits the period [a, b) with `bytes` over the bins i0..i1 (of 1 << shift
// ticks from origin) that it crosses: f(i, start, end, bytes in it), the bytes
// by time share, the last bin taking the rest so that they add up exactly.
template <typename F>
void split_over_bins(uint64_t a, uint64_t b, uint64_t bytes, uint64_t origin, uint32_t shift,
                     uint64_t i0, uint64_t i1, F&& f) {
  const double per_tick = static_cast<double>(bytes) / static_cast<double>(b - a);
  uint64_t given = 0;
  for (uint64_t i = i0; i <= i1; ++i) {
    const uint64_t ws = origin + (i << shift);
    const uint64_t s = a > ws ? a : ws;
    const uint64_t e = i == i1 ? b : ws + (uint64_t{1} << shift);
    const uint64_t part =
        i == i1 ? bytes - given : static_cast<uint64_t>(per_tick * static_cast<double>(e - s));
    given += part;
    f(i, s, e, part);
  }
}

struct NicBins {
  static constexpr uint32_t kBins = 4096;
  uint64_t origin = 0;  // ticks at the start of bin 0
  uint32_t shift = 0;   // a bin is 1 << shift ticks
  uint32_t used = 0;    // bins [0, used) may be non-zero
  uint64_t busy[kBins] = {};
  uint64_t bytes[kBins] = {};

  // Period [a, b) with `n` bytes completed in it.
  void add(uint64_t a, uint64_t b, uint64_t n) {
    if (a < origin) a = origin;
    if (b <= a) return;
    while (((b - 1 - origin) >> shift) >= kBins) coarsen();
    const uint64_t i0 = (a - origin) >> shift, i1 = (b - 1 - origin) >> shift;
    if (i1 + 1 > used) used = static_cast<uint32_t>(i1 + 1);
    if (i0 == i1) {  // the usual case: a period inside one bin
      busy[i0] += b - a;
      bytes[i0] += n;
      return;
    }
    spread(a, b, n, i0, i1);
  }
  uint64_t width() const { return uint64_t{1} << shift; }

  __attribute__((noinline)) void spread(uint64_t a, uint64_t b, uint64_t n, uint64_t i0,
                                        uint64_t i1) {
    split_over_bins(a, b, n, origin, shift, i0, i1,
                    [this](uint64_t i, uint64_t s, uint64_t e, uint64_t part) {
                      busy[i] += e - s;
                      bytes[i] += part;
                    });
  }
  void coarsen() {
    for (uint32_t i = 0; i < kBins / 2; ++i) {
      busy[i] = busy[2 * i] + busy[2 * i + 1];
      bytes[i] = bytes[2 * i] + bytes[2 * i + 1];
    }
    for (uint32_t i = kBins / 2; i < kBins; ++i) busy[i] = bytes[i] = 0;
    used = (used + 1) / 2;
    ++shift;
  }
};

}  // namespace fabtrace
