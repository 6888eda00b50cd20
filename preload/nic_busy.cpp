#include "preload/objects.h"

namespace fabtrace {

namespace {
constexpr uint64_t kCountMask = (1ULL << NicBusy::kInflightBits) - 1;
constexpr uint64_t kUnitMask = (1ULL << (64 - NicBusy::kInflightBits)) - 1;
inline uint64_t units(uint64_t ticks) { return (ticks >> NicBusy::kUnitShift) & kUnitMask; }
}  // namespace

void NicBusy::issue(uint64_t now) {
  uint64_t old = word.load(std::memory_order_relaxed);
  uint64_t nw;
  do {
    const uint64_t n = old & kCountMask;
    if (n == kCountMask) return;  // saturated: cannot happen with a bounded ring
    nw = n == 0 ? (units(now) << kInflightBits) | 1 : old + 1;
  } while (!word.compare_exchange_weak(old, nw, std::memory_order_relaxed));
}

void NicBusy::complete(uint64_t now, uint64_t k) {
  uint64_t old = word.load(std::memory_order_relaxed);
  uint64_t nw;
  do {
    const uint64_t n = old & kCountMask;
    if (n == 0) return;
    nw = n <= k ? 0 : old - k;
  } while (!word.compare_exchange_weak(old, nw, std::memory_order_relaxed));
  if ((old & kCountMask) <= k) {
    // The period [start, now] closed; modular arithmetic keeps it right across
    // the wrap of the 44-bit unit counter.
    const uint64_t start = old >> kInflightBits;
    busy_units.fetch_add((units(now) - start) & kUnitMask, std::memory_order_relaxed);
  }
}

void NicBusy::unissue() {
  uint64_t old = word.load(std::memory_order_relaxed);
  uint64_t nw;
  do {
    const uint64_t n = old & kCountMask;
    if (n == 0) return;
    nw = n == 1 ? 0 : old - 1;
  } while (!word.compare_exchange_weak(old, nw, std::memory_order_relaxed));
}

uint64_t NicBusy::busy_ticks(uint64_t now) const {
  uint64_t u = busy_units.load(std::memory_order_relaxed);
  const uint64_t w = word.load(std::memory_order_relaxed);
  if (w & kCountMask) u += (units(now) - (w >> kInflightBits)) & kUnitMask;
  return u << kUnitShift;
}

}  // namespace fabtrace
