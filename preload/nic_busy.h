// Concurrency-aware busy time of one NIC (one libfabric domain): the length of
// the union of the in-flight intervals [issue, completion] of its ops.
//
// Only the completion side takes part, once per poll: the ops of one NIC that
// a poll completes all end at the poll's timestamp, so together they are the
// one interval [earliest issue, poll].
//
// Each thread first merges its intervals into its own BusyPeriodRing for the NIC
// (plain stores: nothing shared). When that ring fills, the thread moves its
// periods into the NIC's shared ring under a try-lock (one exchange per
// kLocal periods); a thread that finds the lock held keeps going and folds its
// oldest period into a private total instead, so no poll ever waits. Rings
// hold the most recent disjoint periods; older ones are folded into a total.
//
// Each period carries the bytes of the ops completed in it; the shared ring
// hands every period it folds (and, at exit, the rest), in time order, to the
// NIC's time bins (nic_bins.h) and peak tracker (nic_peak.h).
// Periods a thread folded on its own while the lock was held reach only the
// totals: their time and bytes are counted as unbinned. So do the periods
// that find the lock held where there is no thread ring to keep them in (a
// NIC past the thread's kMaxNics, a thread's ring at exit): they go to the
// NIC's contended totals (two atomic adds), never waited for, never lost.
//
// What is exact and what is not: overlapping ops of one thread always merge.
// Ops of different threads merge as long as they meet in the shared ring
// (the most recent kShared periods); a period folded while the lock was held
// may overlap another thread's and is then counted twice, and an op reaching
// back past the shared ring's folded periods counts only from their end.
#pragma once

#include <atomic>
#include <cstdint>

#include "preload/nic_bins.h"
#include "preload/nic_peak.h"

namespace fabtrace {

// Where a NIC's final busy periods go: its time bins and its busiest stretch.
//
// Periods arrive one per op in a ping-pong, and nearly all of them fall in the
// same time bin (about 10 ms) as the one before: [lo, hi) caches the ticks
// that are in both the bin and the busiest stretch's open window of
// the latest period, so that such a period updates the two with four adds and
// a max (what bins.add and peak.add would do, without their index arithmetic).
// Anything else, and anything that moves a bin or a window, takes the general
// path, which sets the cache again.
struct NicActivity {
  NicBins bins;
  NicPeak peak;
  uint64_t lo = 0, hi = 0;  // empty until the first period
  uint32_t bin = 0;         // the bin of [lo, hi)

  void add(uint64_t a, uint64_t b, uint64_t bytes) {
    if (__builtin_expect(a >= lo && b <= hi && b > a, 1)) {
      bins.busy[bin] += b - a;
      bins.bytes[bin] += bytes;
      peak.cur.bytes += static_cast<double>(bytes);
      peak.cur.busy += b - a;
      if (b > peak.cur.last) peak.cur.last = b;
      return;
    }
    add_slow(a, b, bytes);
  }
  // n ascending disjoint periods, period i being [a(i), b(i)] with bytes(i),
  // whose lengths add up to `busy` and bytes to `nbytes`: what n calls of add
  // do, in one step when they all lie in the cached bin and window (a
  // thread's flush of a ping-pong's periods nearly always does).
  template <typename Start, typename End, typename Bytes>
  void add_run(uint32_t n, Start a, End b, Bytes bytes, uint64_t busy, uint64_t nbytes) {
    if (n == 0) return;
    if (a(0) >= lo && b(n - 1) <= hi) {
      bins.busy[bin] += busy;
      bins.bytes[bin] += nbytes;
      peak.cur.bytes += static_cast<double>(nbytes);  // integers: exact, in any order
      peak.cur.busy += busy;
      if (b(n - 1) > peak.cur.last) peak.cur.last = b(n - 1);
      return;
    }
    for (uint32_t i = 0; i < n; ++i) add(a(i), b(i), bytes(i));
  }
  // The open window of the busiest stretch is weighed too (at exit).
  void finish() {
    peak.finish();
    lo = hi = 0;
  }
  __attribute__((noinline)) void add_slow(uint64_t a, uint64_t b, uint64_t bytes) {
    bins.add(a, b, bytes);
    peak.add(a, b, bytes);
    // The cache: the intersection of the bin and the peak's window that
    // hold b - 1, when the peak's open window is that one (it never goes
    // back to an older window, so a period there is not "inside" it).
    lo = hi = 0;
    if (b <= a || b - 1 < bins.origin || b - 1 < peak.origin) return;
    const uint64_t bi = (b - 1 - bins.origin) >> bins.shift;
    const uint64_t pi = (b - 1 - peak.origin) >> peak.shift;
    if (bi >= NicBins::kBins || pi != peak.cur.index) return;
    const uint64_t blo = bins.origin + (bi << bins.shift);
    const uint64_t plo = peak.origin + (pi << peak.shift);
    lo = blo > plo ? blo : plo;
    const uint64_t bhi = blo + (uint64_t{1} << bins.shift);
    const uint64_t phi = plo + (uint64_t{1} << peak.shift);
    hi = bhi < phi ? bhi : phi;
    bin = static_cast<uint32_t>(bi);
  }
};

// The most recent disjoint busy periods (ascending), plus the ticks of those
// folded out of it. N is a power of two.
template <int N>
struct BusyPeriodRing {
  static_assert((N & (N - 1)) == 0, "power of two");
  uint64_t start[N] = {}, end[N] = {}, bytes[N] = {};
  uint32_t head = 0, n = 0;     // oldest period, number of periods
  uint64_t folded = 0;          // ticks of the periods that left the ring
  uint64_t folded_bytes = 0;    // their bytes
  uint64_t folded_end = 0;      // end of the newest of them: nothing before it counts again
  NicActivity* sink = nullptr;  // where folded periods go (the shared ring's only)

  uint64_t& s(uint32_t i) { return start[(head + i) & (N - 1)]; }
  uint64_t& e(uint32_t i) { return end[(head + i) & (N - 1)]; }
  uint64_t& b(uint32_t i) { return bytes[(head + i) & (N - 1)]; }
  bool full() const { return n == N; }

  // fold_oldest, k times (0 < k <= n), the periods handed to the sink in one go.
  void fold_oldest_run(uint32_t k) {
    uint64_t ticks = 0, nbytes = 0;
    for (uint32_t i = 0; i < k; ++i) ticks += e(i) - s(i), nbytes += this->b(i);
    folded += ticks;
    folded_bytes += nbytes;
    if (sink)
      sink->add_run(
          k, [this](uint32_t i) { return s(i); }, [this](uint32_t i) { return e(i); },
          [this](uint32_t i) { return this->b(i); }, ticks, nbytes);
    folded_end = e(k - 1);
    head = (head + k) & (N - 1);
    n -= k;
  }
  void fold_oldest() {
    fold(start[head], end[head], bytes[head]);
    folded_end = end[head];
    head = (head + 1) & (N - 1);
    --n;
  }
  // Adds [a, b] in which `nbytes` were completed. When the ring is full and
  // [a, b] is a new period, the oldest one is folded first. Inline for the
  // usual cases: into an empty ring, after the newest period (a ping-pong makes one per op; in a
  // full ring, the NIC's shared one always is, the oldest is folded first),
  // or overlapping only it; insert_slow decides the rest, with the same steps.
  void insert(uint64_t a, uint64_t b, uint64_t nbytes = 0) {
    if (__builtin_expect(b > a, 1)) {
      if (__builtin_expect(n != 0, 1)) {
        const uint32_t last = (head + n - 1) & (N - 1);
        if (a > end[last]) {  // periods are never before folded_end
          if (n == N) fold_oldest();
          append(a, b, nbytes);
          return;
        }
        if (a >= start[last]) {
          extend_newest(last, b, nbytes);
          return;
        }
      } else if (a >= folded_end) {  // the first period after a flush: a thread's 1 in kLocal
        append(a, b, nbytes);
        return;
      }
    }
    insert_slow(a, b, nbytes);
  }
  __attribute__((noinline)) void insert_slow(uint64_t a, uint64_t b, uint64_t nbytes) {
    if (a < folded_end) a = folded_end;  // that part is already counted, or lost
    if (b <= a) {
      // Its time is counted already; its bytes join the newest period (or
      // the folded ones) so that no byte is lost.
      if (n)
        this->b(n - 1) += nbytes;
      else
        folded_bytes += nbytes;
      return;
    }
    if (n && a <= e(n - 1)) {
      if (a >= s(n - 1))
        extend_newest((head + n - 1) & (N - 1), b, nbytes);
      else
        merge(a, b, nbytes);  // reaches back further: out-of-order completions
      return;
    }
    if (full()) fold_oldest();
    append(a, b, nbytes);
  }
  // Whether insert would append a period that starts at `a`: after every kept
  // period or, in an empty ring, not before the folded ones.
  bool after_all(uint64_t a) const {
    return n ? a > end[(head + n - 1) & (N - 1)] : a >= folded_end;
  }
  // The periods of `src` (ascending and disjoint, the first one after_all):
  // what inserting them one by one does, the oldest kept periods folded to
  // make room, in bulk (one sum and one hand-over to the sink for the folded
  // ones, then copies).
  template <int M>
  void append_run(BusyPeriodRing<M>& src) {
    static_assert(M <= N, "a run never folds periods of its own");
    const uint32_t m = src.n;
    if (n + m > N) fold_oldest_run(n + m - N);  // <= n, as m <= N
    uint32_t to = (head + n) & (N - 1);
    for (uint32_t i = 0; i < m; ++i, to = (to + 1) & (N - 1)) {
      start[to] = src.s(i);
      end[to] = src.e(i);
      bytes[to] = src.b(i);
    }
    n += m;
  }
  // Room for the periods a run of M merges into: the ring's own and the run's.
  template <int M>
  struct MergeSpace {
    uint64_t start[N + M], end[N + M], bytes[N + M];
  };
  // Periods [0, src.n) of `src` (ascending and disjoint): their union with the
  // kept ones, in one pass. The kept periods that end before the run's first
  // start stay; the later ones and the run's are merged in time order into
  // `out` and written back, the oldest periods folded to make room. As insert
  // does, a period's part before the folded ones is cut off (its time is
  // counted already, or lost), and one entirely before them leaves its bytes
  // to the newest period. Inserting a run one period at a time shifted the
  // newer periods for each one that fell between two others (two threads'
  // periods interleave): up to run x ring moves, against run + ring here.
  template <int M>
  void insert_run(BusyPeriodRing<M>& src, MergeSpace<M>& out) {
    static_assert(M <= N, "a run never folds periods of its own");
    if (src.n == 0) return;
    if (after_all(src.s(0))) {
      append_run(src);
      return;
    }
    uint32_t keep = n;  // kept periods [0, keep) end before the run starts
    while (keep > 0 && e(keep - 1) >= src.s(0)) --keep;
    // Two threads' periods interleave: which one comes next, and whether it
    // overlaps the one before, are coin tosses, so both are decided without a
    // branch (a mispredicted one per period cost more than the rest of the
    // merge). The period being built stays in registers, stored at out[o]
    // after each step (o moves on when a new one starts).
    uint32_t o = 0, i = keep, j = 0;
    uint64_t lost_bytes = 0;  // of run periods entirely before the folded ones
    uint64_t cs = 0, ce = 0, cb = 0;
    bool have = false;
    while (i < n || j < src.n) {
      const uint32_t ri = (head + i) & (N - 1), si = (src.head + j) & (M - 1);
      const uint64_t rs = i < n ? start[ri] : UINT64_MAX;
      const uint64_t ss = j < src.n ? src.start[si] : UINT64_MAX;
      const bool ring_first = rs <= ss;
      uint64_t a = ring_first ? rs : (ss < folded_end ? folded_end : ss);
      const uint64_t b = ring_first ? end[ri] : src.end[si];
      const uint64_t nb = ring_first ? bytes[ri] : src.bytes[si];
      i += ring_first;
      j += !ring_first;
      if (__builtin_expect(b <= a, 0)) {  // a run period before the folded ones
        lost_bytes += nb;
        continue;
      }
      const bool join = have && a <= ce;
      o += have && !join;
      cs = join ? cs : a;
      ce = join ? (b > ce ? b : ce) : b;
      cb = join ? cb + nb : nb;
      have = true;
      out.start[o] = cs, out.end[o] = ce, out.bytes[o] = cb;
    }
    o += have;
    n = keep;  // the ring is now its first `keep` periods, then out's
    if (n > 0 && n + o > N) fold_oldest_run(n + o - N < n ? n + o - N : n);
    uint32_t first = 0;
    for (; n + o - first > N; ++first) {
      fold(out.start[first], out.end[first], out.bytes[first]);
      folded_end = out.end[first];
    }
    for (uint32_t k = first; k < o; ++k) append(out.start[k], out.end[k], out.bytes[k]);
    if (n)
      this->b(n - 1) += lost_bytes;
    else
      folded_bytes += lost_bytes;
  }
  // Hands every period still in the ring to the sink (at exit).
  void bin_all() {
    if (!sink) return;
    for (uint32_t i = 0; i < n; ++i) sink->add(s(i), e(i), b(i));
  }
  uint64_t total() const {
    uint64_t t = folded;
    for (uint32_t i = 0; i < n; ++i) t += end[(head + i) & (N - 1)] - start[(head + i) & (N - 1)];
    return t;
  }
  uint64_t total_bytes() const {
    uint64_t t = folded_bytes;
    for (uint32_t i = 0; i < n; ++i) t += bytes[(head + i) & (N - 1)];
    return t;
  }

 private:
  // [a, b] after every period, with room for it.
  void append(uint64_t a, uint64_t b, uint64_t nbytes) {
    const uint32_t i = (head + n) & (N - 1);
    start[i] = a;
    end[i] = b;
    bytes[i] = nbytes;
    ++n;
  }
  // [a, b] overlapping only the newest period, at slot `last`.
  void extend_newest(uint32_t last, uint64_t b, uint64_t nbytes) {
    if (b > end[last]) end[last] = b;
    bytes[last] += nbytes;
  }
  void fold(uint64_t a, uint64_t b, uint64_t nbytes) {
    folded += b - a;
    folded_bytes += nbytes;
    if (sink) sink->add(a, b, nbytes);
  }
  // General case: [a, b] merges the periods it overlaps (contiguous, as the
  // ring is sorted and disjoint), or lands in a gap between two of them.
  void merge(uint64_t a, uint64_t b, uint64_t nbytes) {
    uint32_t hi = n;
    while (hi > 0 && s(hi - 1) > b) --hi;
    uint32_t lo = hi;
    while (lo > 0 && e(lo - 1) >= a) --lo;
    if (lo < hi) {
      if (s(lo) < a) a = s(lo);
      if (e(hi - 1) > b) b = e(hi - 1);
      for (uint32_t i = lo; i < hi; ++i) nbytes += this->b(i);
    }
    if (lo == hi && full()) {
      // A new period in a gap, and no room. One older than every kept period is
      // disjoint from all of them and (clamped above) from the folded ones.
      if (lo == 0) {
        fold(a, b, nbytes);
        return;
      }
      fold_oldest();  // shifts every index down by one
      --lo, --hi;
    }
    // Replace periods [lo, hi) by [a, b], shifting the newer ones.
    const uint32_t removed = hi - lo;
    if (removed == 0) {
      for (uint32_t i = n; i > lo; --i)
        s(i) = s(i - 1), e(i) = e(i - 1), this->b(i) = this->b(i - 1);
      ++n;
    } else {
      for (uint32_t i = hi; i < n; ++i)
        s(i - removed + 1) = s(i), e(i - removed + 1) = e(i), this->b(i - removed + 1) = this->b(i);
      n -= removed - 1;
    }
    s(lo) = a;
    e(lo) = b;
    this->b(lo) = nbytes;
  }
};

// The periods a thread gathers for one NIC before it hands them over
// (NicLocal: why 64).
constexpr int kNicLocalPeriods = 64;

// The NIC's shared state. Public members only: it sits inside DomainWrap,
// which must stay standard-layout for container_of.
struct NicBusy {
  // Four threads' batches of kLocal periods meet here before they are folded.
  static constexpr int kShared = 256;
  bool serial = false;  // FI_THREAD_DOMAIN: the application serializes the domain
  std::atomic<uint32_t> lock{0};
  BusyPeriodRing<kShared> shared_ring;  // the lock holder's only
  NicActivity activity;                 // the lock holder's only (shared_ring.sink points here)
  BusyPeriodRing<kShared>::MergeSpace<kNicLocalPeriods> merge_space;  // the lock holder's only
  // Periods threads folded on their own while the lock was held: in the
  // totals, not in the bins.
  uint64_t unbinned_ticks = 0, unbinned_bytes = 0;
  // Periods that found the lock held and had no thread ring to wait in.
  std::atomic<uint64_t> contended_ticks{0}, contended_bytes{0};

  NicBusy() { shared_ring.sink = &activity; }
  // Time bins (and the busiest stretch's windows) start at `origin`, 1 << shift
  // ticks each; the busiest stretch lasts at most `span`.
  void set_bins(uint64_t origin, uint32_t shift, uint64_t span) {
    activity.bins.origin = activity.peak.origin = origin;
    activity.bins.shift = activity.peak.shift = shift;  // the bins' may grow later
    activity.peak.span = span;
    activity.lo = activity.hi = 0;
  }
  NicBusy(const NicBusy&) = delete;
  NicBusy& operator=(const NicBusy&) = delete;

  // Runs f(shared_ring) under the try-lock; false (f not run) when it is held.
  template <typename F>
  bool with_busy_ring(F f) {
    if (serial) {
      f(shared_ring);
      return true;
    }
    if (lock.load(std::memory_order_relaxed) || lock.exchange(1, std::memory_order_acquire))
      return false;
    f(shared_ring);
    lock.store(0, std::memory_order_release);
    return true;
  }
  // Counts [a, b] and its bytes in the totals only (the lock was held).
  void add_contended(uint64_t ticks, uint64_t nbytes) {
    contended_ticks.fetch_add(ticks, std::memory_order_relaxed);
    contended_bytes.fetch_add(nbytes, std::memory_order_relaxed);
  }
  // Adds [a, b] straight to the shared ring, or to the contended totals
  // while another thread holds it.
  void add_shared(uint64_t a, uint64_t b, uint64_t nbytes) {
    if (!with_busy_ring([=](BusyPeriodRing<kShared>& g) { g.insert(a, b, nbytes); }))
      add_contended(b > a ? b - a : 0, nbytes);
  }
  // Total busy ticks (at exit, once every thread's periods are in).
  uint64_t busy_ticks() const {
    return shared_ring.total() + contended_ticks.load(std::memory_order_relaxed);
  }
  // The part of them (and their bytes) in no time bin.
  uint64_t unbinned_busy_ticks() const {
    return unbinned_ticks + contended_ticks.load(std::memory_order_relaxed);
  }
  uint64_t unbinned_busy_bytes() const {
    return unbinned_bytes + contended_bytes.load(std::memory_order_relaxed);
  }
};

// A thread's periods for one NIC, not yet in the NIC's shared ring.
struct NicLocal {
  // A flush takes the NIC's lock and writes its ring's lines, which the
  // other threads of the NIC then read from this core's cache: per op, that
  // costs in proportion to how often a thread flushes. With 8 periods per
  // flush, 2 threads on one NIC cost 120 ns per op against 52 ns on two NICs
  // (bench_overhead BM_Threads2_SeparateCq vs SeparateNic, idle machine);
  // with 64 (and the shared ring kept at 4 batches), 66 ns. 64 x 24 bytes
  // per NIC a thread uses.
  static constexpr int kLocal = kNicLocalPeriods;
  NicBusy* nic = nullptr;
  BusyPeriodRing<kLocal> w;
  // Where the thread's own flushes merge: its own (set once, by its shard),
  // so that those lines stay in its core's cache (the NIC's, shared by every
  // thread that flushes into it, moved back and forth with each flush: two
  // threads on one NIC spent 60 ns per op against 44.5 with their own,
  // BM_Threads2_SeparateCq CPU time, medians of 5 paired rounds). Flushes
  // made for it by another thread (at exit), and those of a ring without one,
  // use the NIC's, under the same lock.
  using Space = BusyPeriodRing<NicBusy::kShared>::MergeSpace<kLocal>;
  Space* space = nullptr;

  // Moves every period into the NIC's shared ring, as one run (insert_run).
  // False when its lock is held. With each period inserted on its own, a
  // ping-pong's op spent 6 ns on its NIC's busy time, most of it in the
  // flush; as one run, 2.8 ns (BM_Step/nic_add_serial).
  bool flush() { return flush_into(nullptr); }
  // The same, merging in `merge` (nullptr: the NIC's).
  __attribute__((noinline)) bool flush_into(Space* merge) {
    if (!nic || (w.n == 0 && w.folded == 0 && w.folded_bytes == 0)) return true;
    if (!merge) merge = &nic->merge_space;
    return nic->with_busy_ring([this, merge](BusyPeriodRing<NicBusy::kShared>& g) {
      g.insert_run(w, *merge);
      g.folded += w.folded;
      g.folded_bytes += w.folded_bytes;
      nic->unbinned_ticks += w.folded;
      nic->unbinned_bytes += w.folded_bytes;
      w.n = 0;
      w.folded = 0;
      w.folded_bytes = 0;
    });
  }
  // At exit: every period into the NIC's shared ring or, while another thread
  // holds it, into the NIC's contended totals. Never waits, loses nothing.
  void flush_at_exit() {
    if (flush()) return;
    nic->add_contended(w.total(), w.total_bytes());
    w.n = 0;
    w.folded = 0;
    w.folded_bytes = 0;
  }
  __attribute__((always_inline)) void add(uint64_t a, uint64_t b, uint64_t nbytes = 0) {
    if (__builtin_expect(w.full(), 0) && !flush_into(space)) {
      // The NIC is being updated by another thread: count our oldest period
      // on our own rather than wait.
      w.fold_oldest();
    }
    w.insert(a, b, nbytes);
  }
};

}  // namespace fabtrace
