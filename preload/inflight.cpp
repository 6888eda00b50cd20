#include "preload/inflight.h"

#include <cstdlib>
#include <new>

namespace fabtrace {

namespace {
constexpr int kProbes = 4;
thread_local size_t t_cursor = SIZE_MAX;
}  // namespace

void InflightRing::init(size_t slots) {
  if (base_) return;
  size_t n = 64;
  while (n < slots) n <<= 1;
  void* mem = nullptr;
  if (posix_memalign(&mem, 64, n * sizeof(OpRecord)) != 0) return;
  base_ = static_cast<OpRecord*>(mem);
  for (size_t i = 0; i < n; ++i) new (&base_[i]) OpRecord();
  mask_ = n - 1;
  n_ = n;
}

OpRecord* InflightRing::claim() {
  if (!n_) return nullptr;
  size_t c = t_cursor;
  if (c == SIZE_MAX) {
    // Spread threads over the ring so that their cursors rarely meet.
    const uint32_t t = next_thread_.fetch_add(1, std::memory_order_relaxed);
    c = (static_cast<size_t>(t) * 0x9E3779B97F4A7C15ULL >> 20) & mask_;
  }
  for (int i = 0; i < kProbes; ++i, c = (c + 1) & mask_) {
    OpRecord* r = &base_[c];
    uint32_t expect = 0;
    if (r->busy.load(std::memory_order_relaxed) == 0 &&
        r->busy.compare_exchange_strong(expect, 1, std::memory_order_acquire,
                                        std::memory_order_relaxed)) {
      t_cursor = (c + 1) & mask_;
      return r;
    }
  }
  t_cursor = c;
  full.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

}  // namespace fabtrace
