// A NIC's busiest stretch of at most `span` ticks (10 ms), at the resolution
// of fixed windows of 1 << shift ticks (the largest power of two not above
// the span): a stretch is one window's activity, from the first issue to the
// last completion in it, or two adjacent windows' when that lasts at most
// `span`; the busiest is the one whose busy periods completed the most bytes.
// Its bandwidth is those bytes over its length, idle gaps inside included, as
// a program timing its own transfer from its first issue to its last
// completion would measure it: a transfer shorter than a window is one
// stretch wherever the window boundaries fall. A busy period that crosses
// windows counts in each by its share of time (its bytes taken as spread
// evenly over it, as in the NIC's time windows), so a period longer than the
// span gives its mean rate. A slow op elsewhere in the run does not weigh on
// the peak; one in the window before the busiest burst may join its stretch.
//
// Fed with the NIC's final busy periods in time order (the order in which the
// shared window folds them). Fixed memory, and per period the work of one
// window index: candidates are weighed once per window, when it closes.
#pragma once

#include <cstdint>

#include "preload/nic_bins.h"

namespace fabtrace {

struct NicPeak {
  uint64_t origin = 0;  // ticks at the start of window 0
  uint32_t shift = 0;   // a window is 1 << shift ticks
  uint64_t span = 0;    // the longest stretch, ticks
  uint64_t best_bytes = 0, best_start = 0, best_end = 0;

  // Activity of one window: bytes completed, first issue, last completion.
  struct Win {
    uint64_t index = UINT64_MAX;
    uint64_t bytes = 0, first = 0, last = 0;
  };
  Win cur, prev;  // the open window, and the one just before it (if adjacent)

  void add(uint64_t a, uint64_t b, uint64_t bytes) {
    if (a < origin) a = origin;
    if (b <= a) return;
    const uint64_t i0 = (a - origin) >> shift, i1 = (b - 1 - origin) >> shift;
    if (i0 == i1) {  // the usual case: a period inside one window
      piece(i0, a, b, bytes);
      return;
    }
    split(a, b, bytes, i0, i1);
  }
  // The open window is weighed too (at exit, once every period is in).
  void finish() {
    close();
    prev = cur = Win();
  }

  void piece(uint64_t i, uint64_t a, uint64_t b, uint64_t bytes) {
    if (i != cur.index) {
      if (cur.index != UINT64_MAX && i < cur.index) i = cur.index;  // never older than open
      if (i != cur.index) {
        close();
        prev = cur.index != UINT64_MAX && cur.index + 1 == i ? cur : Win();
        cur = Win();
        cur.index = i;
        cur.first = a;
      }
    }
    cur.bytes += bytes;
    if (b > cur.last) cur.last = b;
  }
  __attribute__((noinline)) void split(uint64_t a, uint64_t b, uint64_t bytes, uint64_t i0,
                                       uint64_t i1) {
    split_over_windows(
        a, b, bytes, origin, shift, i0, i1,
        [this](uint64_t i, uint64_t s, uint64_t e, uint64_t part) { piece(i, s, e, part); });
  }
  void consider(uint64_t bytes, uint64_t first, uint64_t last) {
    // More bytes wins; of equal bytes, the shorter stretch.
    if (bytes > best_bytes ||
        (bytes == best_bytes && bytes && last - first < best_end - best_start)) {
      best_bytes = bytes;
      best_start = first;
      best_end = last;
    }
  }
  void close() {
    if (cur.index == UINT64_MAX) return;
    consider(cur.bytes, cur.first, cur.last);
    if (prev.index != UINT64_MAX && cur.last - prev.first <= span)
      consider(prev.bytes + cur.bytes, prev.first, cur.last);
  }
};

}  // namespace fabtrace
