#include "userspace/record/raw_summaries.h"

#include <algorithm>

#include "common/kernel_log.h"

namespace fabtrace {

size_t RawSummaries::KeyHash::operator()(const Key& k) const {
  // The key's 8 words (no padding: zeroed where unused), mixed a word at a time.
  uint64_t w[sizeof(Key) / 8];
  std::memcpy(w, &k, sizeof(w));
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (const uint64_t x : w) {
    h ^= x;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 31;
  }
  return static_cast<size_t>(h);
}

bool RawSummaries::is_self(uint32_t tid) const {
  return tid && std::find(self_.begin(), self_.end(), tid) != self_.end();
}

RawSummaries::Sum& RawSummaries::sum_of(Key k, uint64_t events) {
  auto it = map_.find(k);
  if (it == map_.end()) {
    if (map_.size() >= max_keys_) {
      folded_ += events;
      Key any;
      any.of = k.of;
      k = any;
    }
    it = map_.try_emplace(k).first;
  }
  return it->second;
}

void RawSummaries::add_softirqs(uint32_t pid, uint32_t tid, uint32_t cpu, uint32_t vec,
                                uint64_t count, uint64_t ns) {
  // The key add() gives a softirq record (its name stays empty).
  Key k;
  k.pid = pid;
  k.tid = tid;
  k.of = FT_EV_SOFTIRQ;
  k.cpu = cpu;
  k.code = static_cast<int32_t>(vec);
  Sum& s = sum_of(k, count);
  s.count += count;
  s.ns += ns;
}

void RawSummaries::add(const ft_hdr& h, const uint8_t* rec) {
  using kernel_log::record_as;
  Key k;
  k.pid = h.pid;
  k.tid = h.tid;
  k.of = h.kind;
  uint64_t ns = 0, faults = 0, self_count = 0, self_ns = 0;
  switch (h.kind) {
    case FT_EV_OFFCPU: {
      const auto e = record_as<ft_offcpu>(rec);
      ns = h.ts > e.start ? h.ts - e.start : 0;
      k.off_kind = e.off_kind;
      k.wait_on = e.wait_on;
      k.code = e.syscall;
      const bool took = e.off_kind == FT_OFF_PREEMPTED && is_self(e.out_pid);
      const bool held = is_self(e.ran_pid);
      if (took || held) {
        self_count = 1;
        self_ns = held ? e.ran_ns : 0;
      }
      break;
    }
    case FT_EV_IRQ:
    case FT_EV_SOFTIRQ: {
      const auto e = record_as<ft_irq>(rec);
      ns = h.ts > e.start ? h.ts - e.start : 0;
      k.cpu = h.cpu;
      k.code = static_cast<int32_t>(e.irq);
      if (h.kind == FT_EV_IRQ) {
        std::memcpy(k.name, e.name, sizeof(k.name));
        k.name[FT_NAME_LEN - 1] = 0;
        // What follows the name's end is not part of it (a stale byte would
        // make a key of its own).
        const size_t n = strnlen(k.name, FT_NAME_LEN);
        std::memset(k.name + n, 0, FT_NAME_LEN - n);
      }
      break;
    }
    case FT_EV_FAULTS:
      faults = record_as<ft_faults>(rec).count;
      break;
    case FT_EV_WORK: {
      const auto e = record_as<ft_work>(rec);
      ns = h.ts > e.start ? h.ts - e.start : 0;
      k.func = e.func;
      k.pid = k.tid = 0;
      break;
    }
    case FT_EV_POLL: {
      // A run of polls: the time inside them, not the gaps between.
      ns = record_as<ft_poll>(rec).busy_ns;
      break;
    }
    default:
      return;
  }
  Sum& s = sum_of(k, 1);
  s.count += 1;
  s.ns += ns;
  s.faults += faults;
  s.self_count += self_count;
  s.self_ns += self_ns;
  self_count_ += self_count;
  self_ns_ += self_ns;
}

}  // namespace fabtrace
