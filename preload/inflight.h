// In-flight op records: a fixed ring that lives for the whole process.
//
// On issue, a data-path op claims a record, which stores the application's
// context, and the provider is handed the record's address as the op context.
// The completion carries that address back; the CQ shim recognises it by range
// and alignment alone (an unknown context is never dereferenced), restores the
// application's context and releases the record.
//
// Claiming takes no atomic read-modify-write on the steady path. The ring is cut
// into segments; a thread leases one segment at a time (one CAS, when it starts
// issuing or when its segment is full) and is then the only thread that claims
// records in it, so a claim is a load and a plain store. Any thread releases a
// record with a release store. A thread's lease ends when it exits. When the
// leased segment and a few others have no free record, the op goes through
// untimed and is counted; so does an op of a thread that finds no segment to
// lease (more issuing threads than segments: raise FABTRACE_INFLIGHT).
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
  InflightRing();
  InflightRing(const InflightRing&) = delete;
  InflightRing& operator=(const InflightRing&) = delete;
  // The preload's ring lives until the process ends; tests make their own.
  ~InflightRing();

  // Allocates `slots` records (rounded up to a power of two, at least 64).
  // Idempotent.
  void init(size_t slots);
  size_t size() const { return n_; }

  // A free record, now owned by the caller, or nullptr (counted in `full`).
  inline OpRecord* claim();
  static void release(OpRecord* r) { r->busy.store(0, std::memory_order_release); }

  // `p` is exactly one of our records and is in flight. Does not dereference p
  // unless it lies inside the ring.
  OpRecord* owned(void* p) const {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    const uintptr_t b = reinterpret_cast<uintptr_t>(base_);
    if (a - b >= n_ * sizeof(OpRecord) || (a - b) % sizeof(OpRecord) != 0) return nullptr;
    OpRecord* r = static_cast<OpRecord*>(p);
    return r->busy.load(std::memory_order_acquire) ? r : nullptr;
  }

  OpRecord* begin() const { return base_; }
  OpRecord* end() const { return base_ + n_; }

  // In a child after fork(): every record is free and only the calling thread
  // (the child's only thread) keeps its lease.
  void reset_after_fork();

  std::atomic<uint64_t> full{0};  // claims that found no free record

 private:
  static constexpr int kProbes = 8;    // records tried per segment
  static constexpr int kSegTries = 4;  // segments tried before giving up
  struct alignas(64) Segment {
    std::atomic<uint32_t> leased{0};
    uint32_t cursor = 0;  // next record to try; the lease holder's only
  };
  // The calling thread's lease, per thread (one ring at a time: leasing in
  // another ring forgets, but does not free, the previous lease).
  struct Lease {
    const InflightRing* ring;
    Segment* seg;
    OpRecord* first;  // the segment's first record
  };
  static __thread Lease t_lease __attribute__((tls_model("initial-exec")));

  OpRecord* claim_slow();
  OpRecord* probe(Segment* seg, OpRecord* first);
  bool lease_next(uint32_t from);
  friend void inflight_thread_exit(void*);

  OpRecord* base_ = nullptr;
  Segment* segs_ = nullptr;
  size_t n_ = 0;
  size_t nseg_ = 0;
  uint32_t seg_shift_ = 0;  // records per segment = 1 << seg_shift_
  std::atomic<uint32_t> next_thread_{0};
};

inline OpRecord* InflightRing::probe(Segment* seg, OpRecord* first) {
  const uint32_t mask = (1u << seg_shift_) - 1;
  uint32_t c = seg->cursor;
  for (int i = 0; i < kProbes; ++i, c = (c + 1) & mask) {
    OpRecord* r = first + c;
    // Only the lease holder turns a free record busy, so a load and a store
    // suffice; the acquire orders our writes after the releasing thread's reads.
    if (r->busy.load(std::memory_order_acquire) == 0) {
      r->busy.store(1, std::memory_order_relaxed);
      seg->cursor = (c + 1) & mask;
      return r;
    }
  }
  seg->cursor = c;
  return nullptr;
}

inline OpRecord* InflightRing::claim() {
  const Lease& l = t_lease;
  if (__builtin_expect(l.ring == this, 1)) {
    if (OpRecord* r = probe(l.seg, l.first)) return r;
  }
  return claim_slow();
}

}  // namespace fabtrace
