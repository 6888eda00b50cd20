// A fixed-memory log-linear histogram of unsigned 64-bit values (ticks or ns).
//
// Values below 8 get a bucket each; above, every power of two is split into 8
// equal sub-buckets, so any percentile is reported within 1/8 (12.5%) of the true
// value, and within about 6% when the bucket midpoint is used. Values at or above
// 2^kMaxPow2 land in the last bucket. The memory is one array of kBuckets uint32
// counts; count, sum, min and max are kept exactly beside it.
//
// Single writer: each instance is owned by one thread (the preload keeps one per
// polling thread and merges them at exit), so record() is plain stores.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fabtrace {

class LogHistogram {
 public:
  static constexpr int kSubBits = 3;   // 8 sub-buckets per power of two
  static constexpr int kMaxPow2 = 48;  // values >= 2^48 are clamped
  static constexpr int kBuckets = (kMaxPow2 - kSubBits + 1) << kSubBits;

  // Inline: the preload records one value per completion.
  void record(uint64_t v) {
    const int b = bucket_index(v < kClampValue ? v : kClampValue);
    counts_[b] += counts_[b] != UINT32_MAX;  // saturate, never wrap
    ++count_;
    sum_ += v;
    min_ = v < min_ ? v : min_;
    max_ = v > max_ ? v : max_;
  }
  void merge(const LogHistogram& o);
  // merge() of a histogram that another thread may be recording into (the
  // live snapshot's publisher: preload/live.h): each field is read once and
  // whole (a relaxed atomic load), so a value recorded meanwhile may be in
  // some of the fields and not yet in others.
  void merge_live(const LogHistogram& o);
  // What was recorded after `before`, an earlier state of the same histogram:
  // the buckets' counts subtracted (count is their sum; sum subtracted), and
  // min and max the edges of the first and last bucket left (the extremes
  // within a bucket's width).
  LogHistogram since(const LogHistogram& before) const;

  uint64_t count() const { return count_; }
  uint64_t sum() const { return sum_; }  // wraps only after 2^64 total
  uint64_t min() const { return count_ ? min_ : 0; }
  uint64_t max() const { return max_; }
  double mean() const { return count_ ? static_cast<double>(sum_) / count_ : 0.0; }

  // q in [0, 1]. The midpoint of the bucket holding the ceil(q*count)-th value,
  // clamped into [min, max]. 0 when empty.
  uint64_t percentile(double q) const;
  // Number of recorded values v with v < bound, counting a bucket that straddles
  // bound in proportion to its overlap (linear interpolation).
  double count_below(uint64_t bound) const;

  static int bucket_of(uint64_t v);
  static uint64_t bucket_low(int b);   // smallest value of bucket b
  static uint64_t bucket_high(int b);  // one past the largest value of bucket b

 private:
  static constexpr uint64_t kClampValue = (uint64_t{1} << kMaxPow2) - 1;
  // Bucket index of v (already clamped below 2^kMaxPow2).
  //
  // With p the index of the highest set bit of v|8 (so p >= kSubBits) and
  // s = p - kSubBits, v >> s lies in [8, 16) for v >= 8 and equals v for v < 8.
  // The index (s << kSubBits) + (v >> s) therefore gives values below 16 a
  // bucket each and splits every higher power of two [2^p, 2^(p+1)) into 8
  // buckets of width 2^s.
  static int bucket_index(uint64_t v) {
    const int p = 63 - __builtin_clzll(v | (uint64_t{1} << kSubBits));
    const int s = p - kSubBits;
    return (s << kSubBits) + static_cast<int>(v >> s);
  }

  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
  uint32_t counts_[kBuckets] = {};
};

}  // namespace fabtrace
