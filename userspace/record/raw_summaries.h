// The sums of the raw events (kernel_log::is_raw), per thread and cause, that
// `fabtrace record` keeps whatever becomes of the events themselves (written,
// or given way to the log's bound): FT_EV_SUMMARY records, each what one key
// gained since its previous record, so that a reader sums them (and a killed
// session's log holds the sums up to its last drain). A key is (process,
// thread, kind, and its cause: the off-CPU kind, syscall and what it waited
// on; the IRQ's CPU, number and name; the softirq's CPU and vector; the cxi
// work function). The collector's own threads are counted where they took or
// held a traced thread's CPU (self_count, self_ns).
//
// Bounded: the keys that gained since the last drain, at most max_keys (past
// it, a new key's events are summed under its kind alone: pid, tid and cause
// 0). One thread; an event costs one hash lookup (a node is allocated per key
// and drain period only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "bpf/fabtrace_events.h"

namespace fabtrace {

class RawSummaries {
 public:
  explicit RawSummaries(size_t max_keys = 1u << 16) : max_keys_(max_keys) {}

  // The collector's own threads (tids), as they are now.
  void set_self(const std::vector<uint32_t>& tids) { self_.assign(tids.begin(), tids.end()); }
  // One raw event, as the ring buffer delivered it (its size checked).
  void add(const ft_hdr& h, const uint8_t* rec);
  // `count` softirqs of vector `vec` that took `ns` in all, on `cpu`, while
  // thread tid of pid ran: short ones the kernel summed instead of sending
  // (bpf/irq.bpf.c).
  void add_softirqs(uint32_t pid, uint32_t tid, uint32_t cpu, uint32_t vec, uint64_t count,
                    uint64_t ns);
  // Calls emit(const ft_summary&) for every key that gained since the last
  // drain (ts = now), then starts again from none.
  template <typename F>
  void drain(uint64_t now, F&& emit);

  size_t keys() const { return map_.size(); }
  uint64_t folded() const { return folded_; }  // events summed past max_keys
  // Over the session: the intervals in which the collector took or held a
  // traced thread's CPU, and the time it held it.
  uint64_t self_count() const { return self_count_; }
  uint64_t self_ns() const { return self_ns_; }

 private:
  struct Key {
    uint32_t pid = 0, tid = 0, cpu = 0;
    uint16_t of = 0;
    uint8_t off_kind = 0, wait_on = 0;
    int32_t code = 0;
    uint32_t pad = 0;  // no implicit padding: the key is compared and hashed as bytes
    uint64_t func = 0;
    char name[FT_NAME_LEN] = {};
    bool operator==(const Key& o) const { return std::memcmp(this, &o, sizeof(Key)) == 0; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  struct Sum {
    uint64_t count = 0, ns = 0, faults = 0, self_count = 0, self_ns = 0;
  };
  static_assert(sizeof(Key) == 32 + FT_NAME_LEN, "Key has no padding");
  bool is_self(uint32_t tid) const;
  Sum& sum_of(Key k, uint64_t events);  // past max_keys_: under its kind alone

  size_t max_keys_;
  std::unordered_map<Key, Sum, KeyHash> map_;  // what each key gained since the last drain
  std::vector<uint32_t> self_;
  uint64_t folded_ = 0, self_count_ = 0, self_ns_ = 0;
};

template <typename F>
void RawSummaries::drain(uint64_t now, F&& emit) {
  for (const auto& [key, sum] : map_) {
    const Key* k = &key;
    const Sum* s = &sum;
    ft_summary r{};
    r.h.ts = now;
    r.h.kind = FT_EV_SUMMARY;
    r.h.size = sizeof(r);
    r.h.cpu = k->cpu;
    r.h.pid = k->pid;
    r.h.tid = k->tid;
    r.of = k->of;
    r.off_kind = k->off_kind;
    r.wait_on = k->wait_on;
    r.code = k->code;
    r.func = k->func;
    r.count = s->count;
    r.ns = s->ns;
    r.faults = s->faults;
    r.self_count = s->self_count;
    r.self_ns = s->self_ns;
    std::memcpy(r.name, k->name, sizeof(r.name));
    emit(r);
  }
  map_.clear();
}

}  // namespace fabtrace
