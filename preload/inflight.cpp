#include "preload/inflight.h"

#include <pthread.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

namespace fabtrace {

__thread InflightRing::Lease InflightRing::t_lease
    __attribute__((tls_model("initial-exec"))) = {nullptr, nullptr, nullptr};

namespace {

// Rings alive now, so that a thread's exit hook never touches a ring that is
// gone (tests make and destroy their own; the preload's is never destroyed).
// Never destroyed itself: threads may exit during static destruction.
// The mutex is off the hot path: it is taken when a ring is made or destroyed
// (once per process in the preload) and when a thread that held a lease exits
// (once per thread); claim(), claim_slow(), lease_next() and release() never
// take it (segments are leased with one CAS each).
std::mutex& rings_mu() {
  static auto* m = new std::mutex();
  return *m;
}
std::vector<InflightRing*>& live_rings() {
  static auto* v = new std::vector<InflightRing*>();
  return *v;
}

pthread_key_t g_exit_key;
pthread_once_t g_exit_once = PTHREAD_ONCE_INIT;

}  // namespace

// Called at thread exit (pthread key destructor) for a thread that held a lease.
void inflight_thread_exit(void*) {
  InflightRing::Lease& l = InflightRing::t_lease;
  std::lock_guard<std::mutex> lk(rings_mu());
  auto& v = live_rings();
  if (l.ring && std::find(v.begin(), v.end(), l.ring) != v.end())
    l.seg->leased.store(0, std::memory_order_release);
  l = {nullptr, nullptr, nullptr};
}

namespace {
void make_exit_key() { pthread_key_create(&g_exit_key, inflight_thread_exit); }
}  // namespace

InflightRing::InflightRing() {
  std::lock_guard<std::mutex> lk(rings_mu());
  live_rings().push_back(this);
}

InflightRing::~InflightRing() {
  {
    std::lock_guard<std::mutex> lk(rings_mu());
    auto& v = live_rings();
    v.erase(std::remove(v.begin(), v.end(), this), v.end());
  }
  if (t_lease.ring == this) t_lease = {nullptr, nullptr, nullptr};
  std::free(base_);
  delete[] segs_;
}

void InflightRing::init(size_t slots) {
  if (base_) return;
  size_t n = 64;
  while (n < slots) n <<= 1;
  // 64 records per segment once the ring has 64 segments of them; smaller
  // rings keep at least 8 segments (of 8 records or more) for their threads.
  uint32_t shift = 6;
  while (shift > 3 && (n >> shift) < 64) --shift;
  auto* segs = new (std::nothrow) Segment[n >> shift];
  void* mem = nullptr;
  if (!segs || posix_memalign(&mem, 64, n * sizeof(OpRecord)) != 0) {
    delete[] segs;
    return;
  }
  base_ = static_cast<OpRecord*>(mem);
  for (size_t i = 0; i < n; ++i) new (&base_[i]) OpRecord();
  segs_ = segs;
  seg_shift_ = shift;
  nseg_ = n >> shift;
  n_ = n;
}

// Gives up the current lease (if in this ring) and leases a segment at or
// after `from` that nobody holds, trying kSegTries of them.
bool InflightRing::lease_next(uint32_t from) {
  Lease& l = t_lease;
  if (l.ring == this) {
    l.seg->leased.store(0, std::memory_order_release);
    l = {nullptr, nullptr, nullptr};
  }
  for (int t = 0; t < kSegTries; ++t) {
    const size_t i = (from + static_cast<uint32_t>(t)) & (nseg_ - 1);
    Segment* s = &segs_[i];
    uint32_t expect = 0;
    if (s->leased.load(std::memory_order_relaxed) == 0 &&
        s->leased.compare_exchange_strong(expect, 1, std::memory_order_acquire,
                                          std::memory_order_relaxed)) {
      l = {this, s, base_ + (i << seg_shift_)};
      return true;
    }
  }
  return false;
}

OpRecord* InflightRing::claim_slow() {
  if (!n_) return nullptr;
  Lease& l = t_lease;
  uint32_t from;
  if (l.ring == this) {
    from = static_cast<uint32_t>(l.seg - segs_) + 1;  // ours is full: move on
  } else {
    // First claim of this thread: spread threads over the ring, and end the
    // lease when the thread exits.
    const uint32_t t = next_thread_.fetch_add(1, std::memory_order_relaxed);
    from = static_cast<uint32_t>((static_cast<uint64_t>(t) * 0x9E3779B97F4A7C15ULL) >> 40);
    pthread_once(&g_exit_once, make_exit_key);
    pthread_setspecific(g_exit_key, this);
  }
  for (int t = 0; t < kSegTries; ++t) {
    if (!lease_next(from)) break;
    if (OpRecord* r = probe(l.seg, l.first)) return r;
    from = static_cast<uint32_t>(l.seg - segs_) + 1;
  }
  full.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

void InflightRing::reset_after_fork() {
  for (OpRecord* r = begin(); r != end(); ++r) release(r);
  const Segment* mine = t_lease.ring == this ? t_lease.seg : nullptr;
  for (size_t i = 0; i < nseg_; ++i)
    if (&segs_[i] != mine) segs_[i].leased.store(0, std::memory_order_relaxed);
}

}  // namespace fabtrace
