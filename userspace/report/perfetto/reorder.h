// The bounded reorder window of the Perfetto trace's builder: a rank's ops,
// read from its oplog in completion order, come out in start order with
// nothing held per op beyond the window (perfetto_trace.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace fabtrace::report::perfetto_build {

// One op on its way from the oplog to the trace (times: wall-clock ns).
struct Pending {
  int64_t start;
  int64_t end;
  uint64_t bytes;
  uint32_t link;  // index into Builder::links_
  uint8_t kind;
  uint8_t error;
  bool flow_end = false;  // the flow ends here (a receive), else starts (a send)
  uint64_t flow = 0;      // a matched message's flow id (0: none)
};

// Bounded reordering by start time, shaped by how an oplog is written: each
// thread's ops are in completion order (so nearly in start order: an op issued
// earlier but completing later is a few places behind), and the threads' chunks
// are interleaved. So each thread gets a sorted run (the first kRuns tids get
// their own; later ones share them): an op goes at its run's back, or up to
// kFix places before it (absorbing the in-flight scramble); ops further out of
// order go to a min-heap of (start, slot) keys with payloads in a fixed pool.
// pop() returns the earliest start of the run fronts and the heap. At most
// `cap` ops are held; memory is reserved up front (a run's ring when it is
// first used), nothing grows with the oplog.
class ReorderBuffer {
 public:
  static constexpr size_t kRuns = 16;
  static constexpr size_t kFix = 32;

  explicit ReorderBuffer(size_t cap) : cap_(cap), pool_(cap) {
    ring_cap_ = 1;
    while (ring_cap_ < cap) ring_cap_ <<= 1;
    heap_.reserve(cap);
    free_.reserve(cap);
    for (size_t i = cap; i > 0; --i) free_.push_back(static_cast<uint32_t>(i - 1));
    reset();
  }
  bool full() const { return count_ + heap_.size() >= cap_; }
  bool empty() const { return count_ == 0 && heap_.empty(); }
  // Forgets the tid -> run assignment (call when empty, e.g. between oplogs).
  void reset() {
    nruns_ = 0;
    last_tid_ = 0;
    last_run_ = kRuns;
    for (Run& r : runs_) r.head = r.size = 0;
    std::fill(std::begin(front_), std::end(front_), kEmpty);
  }

  void push(const Pending& p, uint32_t tid) {
    Run& q = runs_[run_of(tid)];
    const size_t r = static_cast<size_t>(&q - runs_);
    const size_t mask = ring_cap_ - 1;
    const size_t n = q.size;
    if (n == 0 || p.start >= q.at(n - 1, mask).start) {
      q.at(n, mask) = p;
      ++q.size;
      if (n == 0) front_[r] = p.start;
      ++count_;
      return;
    }
    // q[n-1] starts after p: walk back while the previous one does too.
    const size_t lowest = n > kFix ? n - kFix : 0;
    size_t j = n - 1;
    while (j > lowest && q.at(j - 1, mask).start > p.start) --j;
    if (j == 0 || q.at(j - 1, mask).start <= p.start) {
      for (size_t k = n; k > j; --k) q.at(k, mask) = q.at(k - 1, mask);
      q.at(j, mask) = p;
      ++q.size;
      if (j == 0) front_[r] = p.start;
      ++count_;
      return;
    }
    const uint32_t slot = free_.back();
    free_.pop_back();
    pool_[slot] = p;
    heap_.push_back(Key{p.start, slot});
    std::push_heap(heap_.begin(), heap_.end(), Later());
  }

  Pending pop() {
    size_t best = 0;
    for (size_t r = 1; r < nruns_; ++r)
      if (front_[r] < front_[best]) best = r;
    if (!heap_.empty() && (count_ == 0 || heap_.front().start < front_[best])) {
      std::pop_heap(heap_.begin(), heap_.end(), Later());
      const uint32_t slot = heap_.back().slot;
      heap_.pop_back();
      free_.push_back(slot);
      return pool_[slot];
    }
    Run& q = runs_[best];
    const size_t mask = ring_cap_ - 1;
    const Pending p = q.at(0, mask);
    q.head = (q.head + 1) & mask;
    --q.size;
    front_[best] = q.size == 0 ? kEmpty : q.at(0, mask).start;
    --count_;
    return p;
  }

 private:
  static constexpr int64_t kEmpty = std::numeric_limits<int64_t>::max();
  struct Run {
    std::vector<Pending> ring;  // ring_cap_ entries once used
    size_t head = 0, size = 0;
    Pending& at(size_t i, size_t mask) { return ring[(head + i) & mask]; }
  };
  struct Key {
    int64_t start;
    uint32_t slot;
  };
  struct Later {
    bool operator()(const Key& a, const Key& b) const { return a.start > b.start; }
  };
  size_t run_of(uint32_t tid) {
    if (last_run_ < kRuns && tid == last_tid_) return last_run_;
    size_t r = 0;
    while (r < nruns_ && tids_[r] != tid) ++r;
    if (r == nruns_) {
      if (nruns_ < kRuns) {
        tids_[nruns_++] = tid;
        if (runs_[r].ring.empty()) runs_[r].ring.resize(ring_cap_);
      } else {
        r = tid % kRuns;  // more threads than runs: share
      }
    }
    last_tid_ = tid;
    last_run_ = r;
    return r;
  }

  size_t cap_;
  size_t ring_cap_;
  Run runs_[kRuns];
  uint32_t tids_[kRuns] = {};
  int64_t front_[kRuns];
  size_t nruns_ = 0;
  uint32_t last_tid_ = 0;
  size_t last_run_ = kRuns;
  size_t count_ = 0;  // ops in the runs
  std::vector<Pending> pool_;
  std::vector<uint32_t> free_;
  std::vector<Key> heap_;
};

}  // namespace fabtrace::report::perfetto_build
