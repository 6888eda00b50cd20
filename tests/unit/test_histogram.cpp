#include "common/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace fabtrace {
namespace {

using H = LogHistogram;
constexpr uint64_t kClamp = uint64_t{1} << H::kMaxPow2;

static_assert(std::is_trivially_copyable<H>::value, "compared with memcmp below");

// Histograms are ~1.5 KB; keep them off the test stack anyway.
std::unique_ptr<H> make() { return std::make_unique<H>(); }

bool same_state(const H& a, const H& b) { return std::memcmp(&a, &b, sizeof(H)) == 0; }

// The ceil(q*n)-th smallest value (1-based), as percentile() defines its rank.
uint64_t exact_percentile(const std::vector<uint64_t>& sorted, double q) {
  const double want = std::ceil(q * static_cast<double>(sorted.size()));
  size_t rank = want < 1.0 ? 1 : static_cast<size_t>(want);
  if (rank > sorted.size()) rank = sorted.size();
  return sorted[rank - 1];
}

// ---- bucket layout ---------------------------------------------------------

TEST(HistogramBuckets, LayoutConstants) {
  EXPECT_EQ(H::kBuckets, 368);
  EXPECT_EQ(H::bucket_low(0), 0u);
  EXPECT_EQ(H::bucket_high(H::kBuckets - 1), kClamp);
}

TEST(HistogramBuckets, ContiguousAndRoundTrip) {
  for (int b = 0; b < H::kBuckets; ++b) {
    const uint64_t lo = H::bucket_low(b), hi = H::bucket_high(b);
    ASSERT_LT(lo, hi) << b;
    ASSERT_EQ(H::bucket_of(lo), b) << b;
    ASSERT_EQ(H::bucket_of(hi - 1), b) << b;
    if (b + 1 < H::kBuckets) {
      ASSERT_EQ(hi, H::bucket_low(b + 1)) << b;
    }
    if (lo < 16) {
      ASSERT_EQ(hi - lo, 1u) << "values below 16 are exact, bucket " << b;
    } else {
      // Every power of two split into 8: width is exactly 1/8 of the octave start.
      const uint64_t octave = uint64_t{1} << (63 - __builtin_clzll(lo));
      ASSERT_EQ(hi - lo, octave / 8) << b;
      ASSERT_LE(8 * (hi - lo), lo) << "relative width <= 12.5%, bucket " << b;
    }
  }
}

TEST(HistogramBuckets, SmallValuesAreExact) {
  for (uint64_t v = 0; v < 16; ++v) {
    EXPECT_EQ(H::bucket_of(v), static_cast<int>(v));
    EXPECT_EQ(H::bucket_low(static_cast<int>(v)), v);
  }
}

TEST(HistogramBuckets, PowersOfTwoAndNeighbours) {
  for (int k = 0; k < 64; ++k) {
    const uint64_t p = uint64_t{1} << k;
    for (uint64_t v : {p - 1, p, p + 1, p + p / 2, 2 * p - 1}) {
      const int b = H::bucket_of(v);
      ASSERT_GE(b, 0);
      ASSERT_LT(b, H::kBuckets);
      if (v < kClamp) {
        ASSERT_LE(H::bucket_low(b), v) << v;
        ASSERT_LT(v, H::bucket_high(b)) << v;
      } else {
        ASSERT_EQ(b, H::kBuckets - 1) << v;
      }
    }
    if (k >= 3 && k < H::kMaxPow2) {
      EXPECT_EQ(H::bucket_low(H::bucket_of(p)), p) << "octave starts on a bucket edge";
    }
  }
}

TEST(HistogramBuckets, RandomValuesFallInTheirBucket) {
  std::mt19937_64 rng(12345);
  for (int i = 0; i < 200000; ++i) {
    // Spread over all magnitudes: random bit length, then random bits.
    const int bits = static_cast<int>(rng() % 49);
    const uint64_t v = bits == 0 ? 0 : (rng() >> (64 - bits));
    const int b = H::bucket_of(v);
    ASSERT_LE(H::bucket_low(b), v);
    ASSERT_LT(v, H::bucket_high(b));
  }
}

TEST(HistogramBuckets, OutOfRangeIndicesAreClamped) {
  EXPECT_EQ(H::bucket_low(-5), 0u);
  EXPECT_EQ(H::bucket_high(H::kBuckets + 10), kClamp);
}

// ---- basic statistics --------------------------------------------------------

TEST(Histogram, EmptyIsAllZero) {
  auto h = make();
  EXPECT_EQ(h->count(), 0u);
  EXPECT_EQ(h->sum(), 0u);
  EXPECT_EQ(h->min(), 0u);
  EXPECT_EQ(h->max(), 0u);
  EXPECT_EQ(h->mean(), 0.0);
  EXPECT_EQ(h->percentile(0.5), 0u);
  EXPECT_EQ(h->percentile(1.0), 0u);
  EXPECT_EQ(h->count_below(100), 0.0);
}

TEST(Histogram, ExactCountSumMinMax) {
  auto h = make();
  std::mt19937_64 rng(7);
  uint64_t sum = 0, mn = UINT64_MAX, mx = 0;
  for (int i = 0; i < 10000; ++i) {
    const uint64_t v = rng() % 1000000007;
    h->record(v);
    sum += v;
    mn = std::min(mn, v);
    mx = std::max(mx, v);
  }
  EXPECT_EQ(h->count(), 10000u);
  EXPECT_EQ(h->sum(), sum);
  EXPECT_EQ(h->min(), mn);
  EXPECT_EQ(h->max(), mx);
  EXPECT_DOUBLE_EQ(h->mean(), static_cast<double>(sum) / 10000.0);
}

TEST(Histogram, SingleValueIsReportedExactly) {
  for (uint64_t v : {0ull, 1ull, 7ull, 8ull, 1000ull, 123456789ull, (1ull << 47) + 3}) {
    auto h = make();
    h->record(v);
    h->record(v);
    for (double q : {0.0, 0.01, 0.5, 0.99, 1.0}) EXPECT_EQ(h->percentile(q), v) << v << " q=" << q;
    EXPECT_EQ(h->count_below(v), 0.0);
    EXPECT_EQ(h->count_below(v + 1), 2.0);
  }
}

TEST(Histogram, SmallValuesGiveExactPercentiles) {
  auto h = make();
  std::vector<uint64_t> vals;
  std::mt19937 rng(99);
  for (int i = 0; i < 5000; ++i) vals.push_back(rng() % 16);
  for (uint64_t v : vals) h->record(v);
  std::sort(vals.begin(), vals.end());
  for (int i = 0; i <= 100; ++i) {
    const double q = i / 100.0;
    EXPECT_EQ(h->percentile(q), exact_percentile(vals, q)) << q;
  }
  for (uint64_t bound = 0; bound <= 17; ++bound) {
    const double want =
        static_cast<double>(std::lower_bound(vals.begin(), vals.end(), bound) - vals.begin());
    EXPECT_EQ(h->count_below(bound), want) << bound;
  }
}

TEST(Histogram, PercentileIsMidpointOfBucket) {
  auto h = make();
  // 100 lies in [96, 104); min and max elsewhere so no clamping applies.
  h->record(10);
  h->record(100);
  h->record(5000);
  EXPECT_EQ(h->percentile(0.5), 100u);
  h->record(97);
  h->record(97);
  EXPECT_EQ(h->percentile(0.5), 100u);  // 3rd of 5 is 97, bucket midpoint 100
}

TEST(Histogram, QuantileArgumentIsClamped) {
  auto h = make();
  for (uint64_t v = 100; v < 200; ++v) h->record(v);
  EXPECT_EQ(h->percentile(-1.0), h->percentile(0.0));
  EXPECT_EQ(h->percentile(2.0), h->percentile(1.0));
  EXPECT_EQ(h->percentile(std::nan("")), h->percentile(0.0));
  EXPECT_LE(h->percentile(1.0), 199u);
  EXPECT_GE(h->percentile(0.0), 100u);
}

// ---- accuracy against exact percentiles of random data ------------------------

struct Dist {
  const char* name;
  std::function<uint64_t(std::mt19937&)> draw;
};

std::vector<Dist> distributions() {
  return {
      {"uniform_small",
       [](std::mt19937& r) { return std::uniform_int_distribution<uint64_t>(0, 100)(r); }},
      {"uniform_wide",
       [](std::mt19937& r) { return std::uniform_int_distribution<uint64_t>(0, 10000000)(r); }},
      {"exponential",
       [](std::mt19937& r) {
         return static_cast<uint64_t>(std::exponential_distribution<double>(1.0 / 5000.0)(r));
       }},
      {"lognormal_latency",
       [](std::mt19937& r) {
         return static_cast<uint64_t>(std::lognormal_distribution<double>(7.0, 1.0)(r));
       }},
      {"lognormal_heavy",
       [](std::mt19937& r) {
         return static_cast<uint64_t>(std::lognormal_distribution<double>(10.0, 3.0)(r));
       }},
      {"bimodal",
       [](std::mt19937& r) {
         return std::bernoulli_distribution(0.9)(r)
                    ? std::uniform_int_distribution<uint64_t>(800, 1200)(r)
                    : std::uniform_int_distribution<uint64_t>(50000000, 60000000)(r);
       }},
      {"pareto",
       [](std::mt19937& r) {
         const double u = std::uniform_real_distribution<double>(1e-12, 1.0)(r);
         return static_cast<uint64_t>(100.0 * std::pow(u, -1.0 / 1.2));
       }},
      {"all_magnitudes",
       [](std::mt19937& r) {
         const int bits = std::uniform_int_distribution<int>(0, 47)(r);
         return bits == 0 ? uint64_t{0}
                          : std::uniform_int_distribution<uint64_t>(uint64_t{1} << (bits - 1),
                                                                    (uint64_t{1} << bits) - 1)(r);
       }},
  };
}

class HistogramAccuracy : public ::testing::TestWithParam<int> {};

TEST_P(HistogramAccuracy, PercentilesWithinDocumentedBound) {
  const Dist d = distributions()[GetParam()];
  for (unsigned seed : {1u, 2u, 3u}) {
    std::mt19937 rng(seed * 7919 + GetParam());
    const int n = seed == 1 ? 100 : 50000;
    std::vector<uint64_t> vals(n);
    auto h = make();
    for (auto& v : vals) {
      v = d.draw(rng);
      h->record(v);
    }
    std::sort(vals.begin(), vals.end());
    const double qs[] = {0.0, 0.001, 0.01, 0.05,  0.1,    0.25,    0.5, 0.75,
                         0.9, 0.95,  0.99, 0.999, 0.9999, 0.99999, 1.0};
    for (double q : qs) {
      const uint64_t exact = exact_percentile(vals, q);
      const uint64_t got = h->percentile(q);
      // Midpoint of a bucket at most exact/8 wide: off by at most exact/16 (6.25%).
      const double err = std::fabs(static_cast<double>(got) - static_cast<double>(exact));
      EXPECT_LE(err, static_cast<double>(exact) / 16.0)
          << d.name << " seed " << seed << " q=" << q << " exact=" << exact << " got=" << got;
      EXPECT_GE(got, vals.front());
      EXPECT_LE(got, vals.back());
    }
    EXPECT_EQ(h->count(), static_cast<uint64_t>(n));
    EXPECT_EQ(h->min(), vals.front());
    EXPECT_EQ(h->max(), vals.back());
  }
}

TEST_P(HistogramAccuracy, CountBelowWithinStraddlingBucket) {
  const Dist d = distributions()[GetParam()];
  std::mt19937 rng(4242 + GetParam());
  std::vector<uint64_t> vals(20000);
  auto h = make();
  for (auto& v : vals) {
    v = d.draw(rng);
    h->record(v);
  }
  std::sort(vals.begin(), vals.end());
  auto exact_below = [&](uint64_t bound) {
    return static_cast<double>(std::lower_bound(vals.begin(), vals.end(), bound) - vals.begin());
  };
  auto in_bucket = [&](int b) {
    return static_cast<double>(std::lower_bound(vals.begin(), vals.end(), H::bucket_high(b)) -
                               std::lower_bound(vals.begin(), vals.end(), H::bucket_low(b)));
  };
  // Bucket edges: exact.
  for (int b = 0; b < H::kBuckets; ++b) {
    const uint64_t edge = H::bucket_low(b);
    ASSERT_DOUBLE_EQ(h->count_below(edge), exact_below(edge)) << d.name << " edge " << edge;
  }
  // Any bound: off by no more than the population of the bucket it falls in.
  for (int i = 0; i < 2000; ++i) {
    const uint64_t bound = vals[rng() % vals.size()] + rng() % 3;
    const double got = h->count_below(bound);
    const double want = exact_below(bound);
    ASSERT_LE(std::fabs(got - want), in_bucket(H::bucket_of(bound)) + 1e-9)
        << d.name << " bound " << bound;
  }
  EXPECT_EQ(h->count_below(vals.front()), 0.0);
  EXPECT_EQ(h->count_below(vals.back() + 1), static_cast<double>(vals.size()));
  EXPECT_EQ(h->count_below(UINT64_MAX), static_cast<double>(vals.size()));
}

INSTANTIATE_TEST_SUITE_P(Distributions, HistogramAccuracy,
                         ::testing::Range(0, static_cast<int>(distributions().size())),
                         [](const ::testing::TestParamInfo<int>& param_info) {
                           return std::string(distributions()[param_info.param].name);
                         });

TEST(Histogram, CountBelowInterpolatesLinearly) {
  auto h = make();
  // 128 values filling the bucket [1024, 1152), plus two far outside it.
  h->record(0);
  for (uint64_t v = 1024; v < 1152; ++v) h->record(v);
  h->record(100000);
  EXPECT_DOUBLE_EQ(h->count_below(1024), 1.0);
  EXPECT_DOUBLE_EQ(h->count_below(1088), 1.0 + 64.0);  // halfway through the bucket
  EXPECT_DOUBLE_EQ(h->count_below(1056), 1.0 + 32.0);
  EXPECT_DOUBLE_EQ(h->count_below(1152), 129.0);
}

// ---- merge -------------------------------------------------------------------

TEST(HistogramMerge, EqualsRecordingEverythingInOne) {
  std::mt19937 rng(2024);
  std::lognormal_distribution<double> ln(8.0, 2.5);
  auto all = make();
  std::vector<std::unique_ptr<H>> parts;
  for (int i = 0; i < 5; ++i) parts.push_back(make());
  for (int i = 0; i < 100000; ++i) {
    const uint64_t v = static_cast<uint64_t>(ln(rng));
    all->record(v);
    parts[rng() % parts.size()]->record(v);
  }
  parts[3]->record(uint64_t{1} << 50);  // clamped values merge too
  all->record(uint64_t{1} << 50);
  auto merged = make();
  for (const auto& p : parts) merged->merge(*p);
  auto empty = make();
  merged->merge(*empty);  // merging an empty histogram changes nothing

  EXPECT_TRUE(same_state(*merged, *all));
  EXPECT_EQ(merged->count(), all->count());
  EXPECT_EQ(merged->sum(), all->sum());
  EXPECT_EQ(merged->min(), all->min());
  EXPECT_EQ(merged->max(), all->max());
  for (int i = 0; i <= 1000; ++i)
    EXPECT_EQ(merged->percentile(i / 1000.0), all->percentile(i / 1000.0));
  for (int b = 0; b < H::kBuckets; ++b)
    EXPECT_EQ(merged->count_below(H::bucket_low(b)), all->count_below(H::bucket_low(b)));
}

TEST(HistogramMerge, IntoEmptyCopiesAndKeepsMinMax) {
  auto a = make(), b = make();
  b->record(500);
  b->record(20);
  a->merge(*b);
  EXPECT_TRUE(same_state(*a, *b));
  EXPECT_EQ(a->min(), 20u);
  EXPECT_EQ(a->max(), 500u);
}

// ---- saturation and clamping -----------------------------------------------------

TEST(HistogramLimits, BucketCountsSaturateInsteadOfWrapping) {
  auto h = make();
  h->record(5);
  h->record(100);
  // Self-merge doubles every count: after 33 doublings each value was seen
  // 2^33 times, which would wrap a uint32 bucket count to 0.
  for (int i = 0; i < 33; ++i) h->merge(*h);
  EXPECT_EQ(h->count(), uint64_t{1} << 34);
  EXPECT_EQ(h->sum(), (uint64_t{5} + 100) << 33);
  EXPECT_EQ(h->min(), 5u);
  EXPECT_EQ(h->max(), 100u);
  EXPECT_EQ(h->percentile(0.25), 5u);
  EXPECT_EQ(h->percentile(0.75), 100u);
  EXPECT_DOUBLE_EQ(h->count_below(50), static_cast<double>(UINT32_MAX));
  // record() on a saturated bucket stays saturated.
  h->record(5);
  h->record(5);
  EXPECT_DOUBLE_EQ(h->count_below(50), static_cast<double>(UINT32_MAX));
  EXPECT_EQ(h->count(), (uint64_t{1} << 34) + 2);
  EXPECT_EQ(h->percentile(0.25), 5u);
}

TEST(HistogramLimits, HugeValuesLandInTheLastBucket) {
  for (uint64_t v : {kClamp - 1, kClamp, kClamp + 1, uint64_t{1} << 60, UINT64_MAX}) {
    EXPECT_EQ(H::bucket_of(v), H::kBuckets - 1) << v;
  }
  auto h = make();
  h->record(1000);
  h->record(kClamp * 4);
  h->record(UINT64_MAX);
  EXPECT_EQ(h->count(), 3u);
  EXPECT_EQ(h->max(), UINT64_MAX);
  EXPECT_EQ(h->min(), 1000u);
  EXPECT_EQ(h->sum(), 1000u + kClamp * 4 + UINT64_MAX);  // wraps modulo 2^64
  // 1000 lies in [960, 1024): the midpoint 992 is clamped up to the minimum.
  EXPECT_EQ(h->percentile(0.0), 1000u);
  const uint64_t top = h->percentile(1.0);  // midpoint of the last bucket
  EXPECT_EQ(top, H::bucket_low(H::kBuckets - 1) + (uint64_t{1} << 43));
  EXPECT_LT(top, kClamp);
  // The last bucket spans [15 * 2^44, max]: almost none of it lies below 2^48.
  EXPECT_NEAR(h->count_below(kClamp), 1.0, 1e-3);
  EXPECT_GE(h->count_below(UINT64_MAX), 2.0);
  EXPECT_LE(h->count_below(UINT64_MAX), 3.0);

  auto solo = make();
  solo->record(UINT64_MAX);
  EXPECT_EQ(solo->percentile(0.5), UINT64_MAX);  // clamped into [min, max]
}

}  // namespace
}  // namespace fabtrace
