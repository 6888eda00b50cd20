// Which raw events (kernel_log::around_windows: off-CPU intervals, IRQs,
// softirqs, fault summaries, cxi work) `fabtrace record --raw windows`, the
// default, writes: those of a process that overlap one of its stalls or slow
// ops (or op errors), the window widened by a margin on each side. A window is
// known only when its record arrives, at its end, after the raw events inside
// it: so every raw event is held for a while (hold_ns) before it is judged, and
// the margin after a window is judged as it comes. Events of no process (cxi
// work items) go with any process's window.
//
// Memory is bounded: the events held (max_bytes: past it, the oldest are
// judged early, against the windows known then) and the windows (max_windows
// merged intervals: past it, the oldest go). One thread; nothing is allocated
// per event (the held bytes live in chunks that are reused).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <unordered_map>
#include <vector>

#include "bpf/fabtrace_events.h"

namespace fabtrace {

class RawWindows {
 public:
  struct Options {
    uint64_t hold_ns = 2000000000ULL;  // how long a raw event waits for its window
    uint64_t margin_ns = 10000000ULL;  // kept before and after each window
    size_t max_bytes = 64u << 20;      // raw events held at most
    size_t max_windows = 1u << 16;     // merged windows kept at most
    // Softirqs shorter than this are not held at all (the caller sums and
    // counts them): on a busy node most raw events are NET_RX softirqs of a few
    // us, and a stall's breakdown already holds their time.
    uint64_t min_softirq_ns = 10000;
    // A window is forgotten this long after its end (a raw event that ends
    // later than that cannot overlap it: none is longer than this).
    uint64_t forget_ns = 60000000000ULL;
  };
  RawWindows() : RawWindows(Options{}) {}
  explicit RawWindows(Options o) : opt_(o) {}

  // The window [start, end] of process `pid` (a stall, a slow op, an op error).
  void keep(uint32_t pid, uint64_t start, uint64_t end);
  // A raw event (its header's size bytes) that arrived at `now`; false, and
  // nothing held, for a softirq shorter than min_softirq_ns.
  bool hold(const void* rec, size_t len, uint64_t now);
  // Judges what was held for hold_ns by `now` (everything with now = UINT64_MAX,
  // and the oldest past max_bytes): `write` gets each event inside a window,
  // `give_way` each other one, in the order they arrived.
  template <typename W, typename G>
  void release(uint64_t now, W&& write, G&& give_way);

  // Whether [start, end] of `pid` overlaps a window (widened by the margin).
  bool inside(uint32_t pid, uint64_t start, uint64_t end) const;
  size_t held_bytes() const { return held_bytes_; }
  size_t windows() const { return order_.size(); }

 private:
  struct Chunk {
    std::vector<uint8_t> bytes;
    uint64_t last_arrival = 0;
  };
  using Intervals = std::map<uint64_t, uint64_t>;  // start -> end, disjoint
  void add(Intervals* m, uint64_t start, uint64_t end);
  static bool overlaps(const Intervals& m, uint64_t start, uint64_t end);
  void forget(uint64_t now);            // windows that ended forget_ns before now
  void forget_before(uint64_t cutoff);  // windows that ended before cutoff

  Options opt_;
  std::deque<Chunk> chunks_;
  std::vector<std::vector<uint8_t>> spare_;  // emptied chunks' buffers, reused
  size_t held_bytes_ = 0;
  std::unordered_map<uint32_t, Intervals> by_pid_;
  Intervals any_;  // every process's windows (events of no process)
  // The windows in the order they came (end, pid): what forget() drops.
  std::deque<std::pair<uint64_t, uint32_t>> order_;
  static constexpr size_t kChunkBytes = 256u << 10;
};

// The span [start, end] of a raw record (its start field; its header's ts the end).
uint64_t raw_record_start(const ft_hdr& h, const uint8_t* rec);

template <typename W, typename G>
void RawWindows::release(uint64_t now, W&& write, G&& give_way) {
  while (!chunks_.empty()) {
    Chunk& c = chunks_.front();
    const bool due =
        now == UINT64_MAX || c.last_arrival + opt_.hold_ns <= now || held_bytes_ > opt_.max_bytes;
    // The newest chunk still takes records: judged only when due as a whole.
    if (!due) break;
    size_t off = 0;
    while (off + sizeof(ft_hdr) <= c.bytes.size()) {
      ft_hdr h;
      std::memcpy(&h, c.bytes.data() + off, sizeof(h));
      const uint8_t* rec = c.bytes.data() + off;
      if (inside(h.pid, raw_record_start(h, rec), h.ts))
        write(rec, static_cast<size_t>(h.size));
      else
        give_way(h);
      off += h.size;
    }
    held_bytes_ -= c.bytes.size();
    c.bytes.clear();
    spare_.push_back(std::move(c.bytes));
    chunks_.pop_front();
  }
  if (now != UINT64_MAX) forget(now);
}

}  // namespace fabtrace
