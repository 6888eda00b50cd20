// A NIC's busiest stretch of at most `span` ticks (10 ms): of all the stretches
// of at most `span` that end where a busy period ends, the one in which the
// NIC's busy periods completed the most bytes. Its bandwidth is those bytes
// over the stretch's length from the first issue in it to the last
// completion, idle gaps inside included, as a program timing its own transfer
// from its first issue to its last completion would measure it. A period
// reaching back past the stretch's start counts in proportion to its time
// inside (its bytes are taken as spread evenly over it, as in the NIC's time
// windows). A slow op elsewhere in the run does not weigh on the peak; one
// less than `span` away from the busiest burst may join its stretch.
//
// Fed with the NIC's final busy periods in time order (the order in which the
// shared window folds them); memory is fixed: when `kMax` periods are inside
// the span, the two oldest are joined (a stretch can then no longer start
// between them).
#pragma once

#include <cstdint>

namespace fabtrace {

struct NicPeak {
  static constexpr uint32_t kMax = 1024;
  uint64_t span = 0;  // ticks
  double best_bytes = 0;
  uint64_t best_start = 0, best_end = 0;

  void add(uint64_t a, uint64_t b, uint64_t bytes) {
    if (b <= a) return;
    if (n_ == kMax) join_oldest();
    const uint32_t i = (head_ + n_) & (kMax - 1);
    s_[i] = a;
    e_[i] = b;
    b_[i] = bytes;
    ++n_;
    sum_ += bytes;
    const uint64_t from = b > span ? b - span : 0;  // the stretch ending at b starts here at most
    while (n_ > 1 && e_[head_] <= from) {
      sum_ -= b_[head_];
      head_ = (head_ + 1) & (kMax - 1);
      --n_;
    }
    double got = static_cast<double>(sum_);
    uint64_t start = s_[head_];
    if (start < from) {  // the oldest reaches back past the stretch: its share inside
      const double out = static_cast<double>(from - start) / static_cast<double>(e_[head_] - start);
      got -= static_cast<double>(b_[head_]) * out;
      start = from;
    }
    // More bytes wins; of equal bytes, the shorter stretch.
    if (got > best_bytes || (got == best_bytes && got > 0 && b - start < best_end - best_start)) {
      best_bytes = got;
      best_start = start;
      best_end = b;
    }
  }

  // Public members only: NicPeak sits inside DomainWrap, which must stay
  // standard-layout for container_of.
  void join_oldest() {
    const uint32_t next = (head_ + 1) & (kMax - 1);
    s_[next] = s_[head_];
    b_[next] += b_[head_];
    head_ = next;
    --n_;
  }
  uint64_t s_[kMax] = {}, e_[kMax] = {}, b_[kMax] = {};  // the periods in the span
  uint32_t head_ = 0, n_ = 0;
  uint64_t sum_ = 0;
};

}  // namespace fabtrace
