// A NIC's peak: its fastest time window of 1 << shift ticks (the largest
// power of two not above `span`, 10 ms): the window whose busy periods moved
// the most bytes per tick of busy time (ticks with at least one op in
// flight), the basis of the NIC's whole-run "achieved" figure (bytes over busy
// time). The windows partition every busy period the NIC's time windows see
// (a period crossing windows counts in each by its share of time, its bytes
// taken as spread evenly over it, as in the NIC's time windows), so the whole
// run's rate is their busy-time-weighted mean, and the fastest window's is at
// least that: peak >= achieved by construction (process_report.cpp adds the
// periods no window saw). Of equally fast windows, the one with more bytes.
// The stretch reported is the window's activity, from its first issue to its
// last completion. A slow op elsewhere in the run does not weigh on the peak.
//
// Fed with the NIC's final busy periods in time order (the order in which the
// shared window folds them). Fixed memory, and per period the work of one
// window index: a window is weighed once, when it closes.
#pragma once

#include <cstdint>

#include "preload/nic_bins.h"

namespace fabtrace {

struct NicPeak {
  uint64_t origin = 0;  // ticks at the start of window 0
  uint32_t shift = 0;   // a window is 1 << shift ticks
  uint64_t span = 0;    // the longest window allowed, ticks (the report's limit)
  // The fastest window so far: its bytes (shares of periods: not whole), busy
  // ticks, first issue and last completion.
  double best_bytes = 0;
  uint64_t best_busy = 0, best_start = 0, best_end = 0;

  // Activity of one window: bytes completed, busy ticks, first issue, last completion.
  struct Win {
    uint64_t index = UINT64_MAX;
    double bytes = 0;
    uint64_t busy = 0, first = 0, last = 0;
  };
  Win cur;  // the open window

  void add(uint64_t a, uint64_t b, uint64_t bytes) {
    if (a < origin) a = origin;
    if (b <= a) return;
    const uint64_t i0 = (a - origin) >> shift, i1 = (b - 1 - origin) >> shift;
    if (i0 == i1) {  // the usual case: a period inside one window
      piece(i0, a, b, static_cast<double>(bytes));
      return;
    }
    split(a, b, bytes, i0, i1);
  }
  // The open window is weighed too (at exit, once every period is in).
  void finish() {
    close();
    cur = Win();
  }

  void piece(uint64_t i, uint64_t a, uint64_t b, double bytes) {
    if (i != cur.index) {
      if (cur.index != UINT64_MAX && i < cur.index) i = cur.index;  // never older than open
      if (i != cur.index) {
        close();
        cur = Win();
        cur.index = i;
        cur.first = a;
      }
    }
    cur.bytes += bytes;
    cur.busy += b - a;
    if (b > cur.last) cur.last = b;
  }
  // A period across windows: each window its time's share of the bytes, not
  // rounded (a share rounded up in a short piece would be a rate the period
  // never had).
  __attribute__((noinline)) void split(uint64_t a, uint64_t b, uint64_t bytes, uint64_t i0,
                                       uint64_t i1) {
    const double per_tick = static_cast<double>(bytes) / static_cast<double>(b - a);
    for (uint64_t i = i0; i <= i1; ++i) {
      const uint64_t ws = origin + (i << shift);
      const uint64_t s = a > ws ? a : ws;
      const uint64_t e = i == i1 ? b : ws + (uint64_t{1} << shift);
      piece(i, s, e, per_tick * static_cast<double>(e - s));
    }
  }
  // Faster (bytes per busy tick) wins; of equal rates, more bytes.
  void consider(const Win& w) {
    if (!w.busy || w.bytes <= 0) return;
    const long double mine = static_cast<long double>(w.bytes) * best_busy;
    const long double best = static_cast<long double>(best_bytes) * w.busy;
    if (!best_busy || mine > best || (mine == best && w.bytes > best_bytes)) {
      best_bytes = w.bytes;
      best_busy = w.busy;
      best_start = w.first;
      best_end = w.last;
    }
  }
  void close() {
    if (cur.index != UINT64_MAX) consider(cur);
  }
};

}  // namespace fabtrace
