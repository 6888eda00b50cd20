// Per-thread statistics shards.
//
// Every thread that issues or polls gets its own shard; a completion is folded
// into the shard of the thread that observed it. Shards are written by their
// thread only (plain stores, no atomics, no locks) and are read when the report
// is written at exit, and once per interval by the live snapshot's publisher
// (preload/live.h), for which the cell table is published with release stores
// (cap after slots, a cell after its key), off the steady state. They are
// linked into a lock-free list and never freed.
#pragma once

#include <rdma/fabric.h>

#include <atomic>
#include <cstdint>

#include "common/histogram.h"
#include "common/op_kinds.h"
#include "common/report_format.h"
#include "preload/objects.h"
#include "preload/timeline_local.h"

namespace fabtrace {

// One link (endpoint -> peer) x (op, size).
struct CellKey {
  const EpWrap* ep;
  fi_addr_t peer;
  uint64_t bytes;
  OpKind kind;
  // A receive whose CQ entry had no length: bytes is the posted size, not
  // what arrived.
  bool size_unknown = false;
  bool operator==(const CellKey& o) const {
    return ep == o.ep && peer == o.peer && bytes == o.bytes && kind == o.kind &&
           size_unknown == o.size_unknown;
  }
};

struct Cell {
  static constexpr uint32_t kLinkUnset = UINT32_MAX - 1;
  CellKey key;
  uint32_t link_id = kLinkUnset;  // per-op timeline link, assigned on first use
  uint64_t errors = 0;            // completed in error (incl. cancelled)
  uint64_t eagain = 0;            // refused at issue with -FI_EAGAIN (not issued)
  uint64_t refused = 0;           // refused at issue with another error
  uint64_t untimed = 0;      // issued, not timed by design (no completion expected, context kept)
  uint64_t ring_full = 0;    // issued, not timed: no free record in the in-flight ring
  uint64_t unfinished = 0;   // issued and timed, never completed (CQ closed, or exit)
  uint64_t within_50us = 0;  // receives completed less than 50 us after they were posted
  uint64_t ok_bytes = 0;     // bytes of successful completions
  LogHistogram lat;          // successful completions, ticks
};

// NICs (domains) whose busy periods a thread gathers on its own first.
constexpr uint32_t kMaxNics = 16;

// Poll statistics of one CQ as seen by one thread.
struct PollStats {
  static constexpr int kClasses = kGapClasses;  // <10us <100us <1ms <10ms <100ms >=100ms
  uint64_t polls = 0;
  uint64_t gaps[kClasses] = {};
  uint64_t max_gap = 0;      // ticks
  uint64_t max_gap_end = 0;  // ticks at the poll that ended it
  // The longest gap of the live snapshot's current interval (preload/live.h):
  // kept by the poll's slow path only (gaps of 10 us or more, and new
  // maxima), against the interval's number g_live_epoch.
  uint64_t win_max = 0;
  uint32_t win_epoch = 0;
};

// The live snapshot's interval number: its publisher moves it on at each
// snapshot, and a poll's slow path starts win_max afresh when it changed.
extern std::atomic<uint32_t> g_live_epoch;

struct Shard {
  static constexpr uint64_t kDefaultMaxCells = 1 << 20;

  // Finds or creates; nullptr if out of memory / full. The last cell used is
  // checked inline: a thread's ops mostly repeat one (link, op, size). The
  // key's fields go by value so that the key never goes through memory: a key
  // built with byte stores and compared with one 16-bit load (kind,
  // size_unknown) stalls store forwarding, about 5-10 ns per op. gcc merges
  // the two byte compares of operator== into that load, so the last cell's
  // pair is compared with one built in registers (kind_pair).
  Cell* cell(const CellKey& k) { return cell(k.ep, k.peer, k.bytes, k.kind, k.size_unknown); }
  __attribute__((always_inline)) Cell* cell(const EpWrap* ep, fi_addr_t peer, uint64_t bytes,
                                            OpKind kind, bool size_unknown) {
    Cell* m = mru;
    if (__builtin_expect(m != nullptr, 1) && m->key.ep == ep && m->key.peer == peer &&
        m->key.bytes == bytes && kind_pair(m->key) == kind_pair(kind, size_unknown))
      return m;
    return cell_slow(ep, peer, bytes, kind, size_unknown);
  }
  static uint32_t kind_pair(OpKind kind, bool size_unknown) {
    return static_cast<uint32_t>(kind) | static_cast<uint32_t>(size_unknown) << 8;
  }
  static uint32_t kind_pair(const CellKey& k) { return kind_pair(k.kind, k.size_unknown); }
  Cell* cell_slow(const EpWrap* ep, fi_addr_t peer, uint64_t bytes, OpKind kind, bool size_unknown);
  void reset();  // after fork(): the child starts empty

  Shard() { give_nics_merge_space(); }
  Shard(const Shard&) = delete;  // its NIC rings point into it
  Shard& operator=(const Shard&) = delete;
  void give_nics_merge_space() {
    for (NicLocal& l : nic) l.space = &nic_merge;
  }

  Cell** slots = nullptr;
  uint64_t cap = 0, used = 0;
  uint64_t max_cells = kDefaultMaxCells;  // cell table limit (FABTRACE_MAX_CELLS)
  Cell* mru = nullptr;
  uint64_t cells_full = 0;  // ops not aggregated: cell table at its limit
  PollStats cq[kMaxCqs];
  TimelineLocal timeline;
  NicLocal nic[kMaxNics];     // this thread's NIC busy periods, by domain id
  NicLocal::Space nic_merge;  // where this thread's flushes of them merge (NicLocal::space)
  Shard* next = nullptr;
};

// One busy interval [a, b] of domain d's NIC, in which `bytes` were completed,
// seen by the thread of shard s.
__attribute__((always_inline)) inline void nic_interval(Shard* s, DomainWrap* d, uint64_t a,
                                                        uint64_t b, uint64_t bytes) {
  if (!s) return;
  if (d->id < kMaxNics) {
    NicLocal& l = s->nic[d->id];
    l.nic = &d->nic;
    l.add(a, b, bytes);
  } else {
    d->nic.add_shared(a, b, bytes);  // a NIC past kMaxNics: no thread ring
  }
}

// The calling thread's shard (created on first use). __thread, not
// thread_local: another translation unit reads an extern thread_local through
// a check of its TLS init function (a load and a branch on every access);
// a constant-initialised pointer needs none. The same for t_tid and t_lease.
extern __thread Shard* t_shard __attribute__((tls_model("initial-exec")));
Shard* new_shard();
inline Shard* my_shard() {
  Shard* s = t_shard;
  return __builtin_expect(s != nullptr, 1) ? s : new_shard();
}
// The cell limit of the shards created from now on (FABTRACE_MAX_CELLS, read
// by the runtime's configuration before any thread has a shard).
void set_shard_max_cells(uint64_t n);
// Head of the list of all shards.
Shard* all_shards();

}  // namespace fabtrace
