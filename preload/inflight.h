// In-flight op records: a fixed ring that lives for the whole process.
//
// On issue, a data-path op claims a record, which stores the application's
// context, and the provider is handed the record's address as the op context.
// The completion carries that address back; the CQ shim recognises it by range
// and alignment alone (an unknown context is never dereferenced), restores the
// application's context and releases the record.
//
// Claiming is lock-free: each thread probes a few slots from its own cursor
// with one CAS each; when all are busy the op goes through untimed and counted.
#pragma once

#include <rdma/fabric.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "common/op_kinds.h"

namespace fabtrace {

struct EpWrap;
struct CqWrap;

struct alignas(64) OpRecord {
  // Providers running in FI_CONTEXT / FI_CONTEXT2 mode own the first 64 bytes
  // of an op's context until it completes: they get this, not our fields.
  struct fi_context2 scratch;
  std::atomic<uint32_t> busy{0};
  OpKind kind = OpKind::kSend;
  uint32_t tid = 0;  // issuing thread, when the per-op timeline is on
  void* user_ctx = nullptr;
  EpWrap* ep = nullptr;
  CqWrap* cq = nullptr;  // where the completion will arrive
  fi_addr_t peer = FI_ADDR_UNSPEC;
  uint64_t bytes = 0;
  uint64_t start = 0;  // ticks
};

class InflightRing {
 public:
  InflightRing() = default;
  InflightRing(const InflightRing&) = delete;
  InflightRing& operator=(const InflightRing&) = delete;
  // The preload's ring lives until the process ends; tests make their own.
  ~InflightRing() { std::free(base_); }

  // Allocates `slots` records (rounded up to a power of two). Idempotent.
  void init(size_t slots);
  size_t size() const { return n_; }

  OpRecord* claim();
  static void release(OpRecord* r) { r->busy.store(0, std::memory_order_release); }

  // `p` is exactly one of our records and is in flight. Does not dereference p
  // unless it lies inside the ring.
  OpRecord* owned(void* p) const {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    const uintptr_t b = reinterpret_cast<uintptr_t>(base_);
    if (a < b || a >= b + n_ * sizeof(OpRecord) || (a - b) % sizeof(OpRecord) != 0) return nullptr;
    OpRecord* r = static_cast<OpRecord*>(p);
    return r->busy.load(std::memory_order_acquire) ? r : nullptr;
  }

  OpRecord* begin() const { return base_; }
  OpRecord* end() const { return base_ + n_; }

  std::atomic<uint64_t> full{0};  // claims that found no free record

 private:
  OpRecord* base_ = nullptr;
  size_t n_ = 0;
  size_t mask_ = 0;
  std::atomic<uint32_t> next_thread_{0};
};

}  // namespace fabtrace
