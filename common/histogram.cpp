#include "common/histogram.h"

#include <cmath>

namespace fabtrace {

namespace {

constexpr int kSubCount = 1 << LogHistogram::kSubBits;

inline uint32_t sat_add(uint32_t a, uint32_t b) {
  const uint32_t r = a + b;
  return r < a ? UINT32_MAX : r;
}

}  // namespace

static_assert(LogHistogram::kBuckets - 1 == ((LogHistogram::kMaxPow2 - 1 - LogHistogram::kSubBits)
                                             << LogHistogram::kSubBits) +
                                                (2 * kSubCount - 1),
              "the largest clamped value must land in the last bucket");

int LogHistogram::bucket_of(uint64_t v) { return bucket_index(v < kClampValue ? v : kClampValue); }

uint64_t LogHistogram::bucket_low(int b) {
  if (b < 0) b = 0;
  if (b >= kBuckets) b = kBuckets - 1;
  if (b < 2 * kSubCount) return static_cast<uint64_t>(b);
  const int s = (b >> kSubBits) - 1;
  return static_cast<uint64_t>(kSubCount + (b & (kSubCount - 1))) << s;
}

uint64_t LogHistogram::bucket_high(int b) {
  if (b < 0) b = 0;
  if (b >= kBuckets) b = kBuckets - 1;
  if (b < 2 * kSubCount) return static_cast<uint64_t>(b) + 1;
  const int s = (b >> kSubBits) - 1;
  return bucket_low(b) + (uint64_t{1} << s);
}

void LogHistogram::merge(const LogHistogram& o) {
  // Safe for &o == this (doubles every count).
  for (int i = 0; i < kBuckets; ++i) counts_[i] = sat_add(counts_[i], o.counts_[i]);
  count_ += o.count_;
  sum_ += o.sum_;
  if (o.min_ < min_) min_ = o.min_;
  if (o.max_ > max_) max_ = o.max_;
}

void LogHistogram::merge_live(const LogHistogram& o) {
  for (int i = 0; i < kBuckets; ++i)
    counts_[i] = sat_add(counts_[i], __atomic_load_n(&o.counts_[i], __ATOMIC_RELAXED));
  count_ += __atomic_load_n(&o.count_, __ATOMIC_RELAXED);
  sum_ += __atomic_load_n(&o.sum_, __ATOMIC_RELAXED);
  const uint64_t mn = __atomic_load_n(&o.min_, __ATOMIC_RELAXED);
  const uint64_t mx = __atomic_load_n(&o.max_, __ATOMIC_RELAXED);
  if (mn < min_) min_ = mn;
  if (mx > max_) max_ = mx;
}

LogHistogram LogHistogram::since(const LogHistogram& before) const {
  LogHistogram d;
  int first = -1, last = -1;
  for (int i = 0; i < kBuckets; ++i) {
    d.counts_[i] = counts_[i] > before.counts_[i] ? counts_[i] - before.counts_[i] : 0;
    d.count_ += d.counts_[i];
    if (d.counts_[i]) {
      if (first < 0) first = i;
      last = i;
    }
  }
  if (!d.count_) return LogHistogram();
  d.sum_ = sum_ > before.sum_ ? sum_ - before.sum_ : 0;
  d.min_ = bucket_low(first) > min_ ? bucket_low(first) : min_;
  d.max_ = bucket_high(last) - 1 < max_ ? bucket_high(last) - 1 : max_;
  if (d.max_ < d.min_) d.max_ = d.min_;
  return d;
}

uint64_t LogHistogram::percentile(double q) const {
  if (count_ == 0) return 0;
  // Ranks are taken over the bucket counts; they add up to count_ unless a
  // bucket saturated, and then this keeps the rank inside the recorded shape.
  uint64_t total = 0;
  for (int i = 0; i < kBuckets; ++i) total += counts_[i];
  if (total == 0) return min_;
  if (!(q > 0.0)) q = 0.0;  // also NaN
  if (q > 1.0) q = 1.0;
  const double want = std::ceil(q * static_cast<double>(total));
  uint64_t rank = want < 1.0 ? 1 : static_cast<uint64_t>(want);
  if (rank > total) rank = total;

  uint64_t seen = 0;
  int b = kBuckets - 1;
  for (int i = 0; i < kBuckets; ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      b = i;
      break;
    }
  }
  const uint64_t lo = bucket_low(b);
  uint64_t mid = lo + (bucket_high(b) - lo) / 2;
  if (mid < min_) mid = min_;
  if (mid > max_) mid = max_;
  return mid;
}

double LogHistogram::count_below(uint64_t bound) const {
  if (count_ == 0 || bound <= min_) return 0.0;
  if (bound > max_) return static_cast<double>(count_);
  // min_ < bound <= max_. Buckets are narrowed to [min, max] where they hold
  // the extremes: no value of the first occupied bucket lies below min, none of
  // the last above max (the last bucket also holds the clamped values).
  const int bmin = bucket_of(min_);
  const int bmax = bucket_of(max_);
  const int bb = bucket_of(bound);
  double below = 0.0;
  for (int i = bmin; i < bb; ++i) below += counts_[i];
  if (counts_[bb] == 0) return below;
  double lo = static_cast<double>(bb == bmin ? min_ : bucket_low(bb));
  // bb == bmax covers the last bucket, whose values may exceed bucket_high.
  double hi = bb == bmax ? static_cast<double>(max_) + 1.0 : static_cast<double>(bucket_high(bb));
  const double b = static_cast<double>(bound);
  double frac = hi > lo ? (b - lo) / (hi - lo) : 0.0;
  if (frac < 0.0) frac = 0.0;
  if (frac > 1.0) frac = 1.0;
  return below + frac * counts_[bb];
}

}  // namespace fabtrace
