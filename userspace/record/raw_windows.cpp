#include "userspace/record/raw_windows.h"

#include <algorithm>
#include <iterator>

#include "common/kernel_log.h"

namespace fabtrace {

uint64_t raw_record_start(const ft_hdr& h, const uint8_t* rec) {
  using kernel_log::record_as;
  uint64_t s = h.ts;
  switch (h.kind) {
    case FT_EV_OFFCPU:
      s = record_as<ft_offcpu>(rec).start;
      break;
    case FT_EV_IRQ:
    case FT_EV_SOFTIRQ:
      s = record_as<ft_irq>(rec).start;
      break;
    case FT_EV_FAULTS:
      s = record_as<ft_faults>(rec).first;
      break;
    case FT_EV_WORK:
      s = record_as<ft_work>(rec).start;
      break;
    case FT_EV_POLL:
      s = record_as<ft_poll>(rec).enter;
      break;
    default:
      break;
  }
  return std::min<uint64_t>(s, h.ts);
}

void RawWindows::add(Intervals* m, uint64_t start, uint64_t end) {
  // Merged with every interval it touches: the map stays disjoint and sorted.
  auto it = m->upper_bound(start);
  if (it != m->begin() && std::prev(it)->second >= start) --it;
  while (it != m->end() && it->first <= end) {
    start = std::min(start, it->first);
    end = std::max(end, it->second);
    it = m->erase(it);
  }
  (*m)[start] = end;
}

bool RawWindows::overlaps(const Intervals& m, uint64_t start, uint64_t end) {
  // The last interval starting at or before `end`: it overlaps if it reaches `start`.
  auto it = m.upper_bound(end);
  return it != m.begin() && std::prev(it)->second >= start;
}

void RawWindows::keep(uint32_t pid, uint64_t start, uint64_t end) {
  if (end < start) return;
  const uint64_t s = start > opt_.margin_ns ? start - opt_.margin_ns : 0;
  const uint64_t e = end + opt_.margin_ns < end ? UINT64_MAX : end + opt_.margin_ns;
  add(&by_pid_[pid], s, e);
  add(&any_, s, e);
  order_.emplace_back(e, pid);
  // Past the bound, the oldest windows go (and what ended with them).
  while (order_.size() > opt_.max_windows) {
    const uint64_t oldest = order_.front().first;
    forget_before(oldest == UINT64_MAX ? UINT64_MAX : oldest + 1);
    if (oldest == UINT64_MAX) order_.pop_front();
  }
}

bool RawWindows::inside(uint32_t pid, uint64_t start, uint64_t end) const {
  if (pid == 0) return overlaps(any_, start, end);
  const auto it = by_pid_.find(pid);
  return it != by_pid_.end() && overlaps(it->second, start, end);
}

void RawWindows::forget(uint64_t now) {
  if (now >= opt_.forget_ns) forget_before(now - opt_.forget_ns);
}

void RawWindows::forget_before(uint64_t cutoff) {
  auto prune = [cutoff](Intervals* m) {
    while (!m->empty() && m->begin()->second < cutoff) m->erase(m->begin());
  };
  while (!order_.empty() && order_.front().first < cutoff) {
    const uint32_t pid = order_.front().second;
    order_.pop_front();
    const auto it = by_pid_.find(pid);
    if (it != by_pid_.end()) {
      prune(&it->second);
      if (it->second.empty()) by_pid_.erase(it);
    }
  }
  prune(&any_);
}

bool RawWindows::hold(const void* rec, size_t len, uint64_t now) {
  const auto* bytes = static_cast<const uint8_t*>(rec);
  const ft_hdr h = kernel_log::record_as<ft_hdr>(bytes);
  if (h.kind == FT_EV_SOFTIRQ && h.ts - raw_record_start(h, bytes) < opt_.min_softirq_ns)
    return false;
  if (chunks_.empty() || chunks_.back().bytes.size() + len > kChunkBytes) {
    chunks_.emplace_back();
    if (!spare_.empty()) {
      chunks_.back().bytes = std::move(spare_.back());
      spare_.pop_back();
    }
    chunks_.back().bytes.reserve(kChunkBytes);
  }
  Chunk& c = chunks_.back();
  const size_t at = c.bytes.size();
  c.bytes.resize(at + len);
  std::memcpy(c.bytes.data() + at, rec, len);
  c.last_arrival = now;
  held_bytes_ += len;
  return true;
}

}  // namespace fabtrace
