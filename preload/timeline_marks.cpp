// The per-op timeline's marks (the application's fabtrace_mark/_begin/_end)
// and its capture window (FABTRACE_OPS_WINDOW, the toggle signal): the parts
// of Timeline that are not the ops' own data path (preload/timeline.cpp).
#include <cstring>

#include "common/clock.h"
#include "common/env.h"
#include "preload/stats.h"
#include "preload/timeline.h"

namespace fabtrace {

namespace {
uint64_t name_hash(const char* s, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(s[i])) * 0x100000001b3ULL;
  return h;
}
}  // namespace

uint32_t Timeline::mark_name_id(const char* name) {
  if (!names_) return oplog::kNoMarkName;
  if (!name) name = "";
  const size_t len = strnlen(name, oplog::kMaxMarkNameBytes);
  const uint64_t h = name_hash(name, len);
  constexpr uint32_t kMask = kMaxMarkNames - 1;
  uint32_t i = static_cast<uint32_t>(h) & kMask;
  for (uint32_t probe = 0; probe < kMaxMarkNames; ++probe, i = (i + 1) & kMask) {
    NameSlot& s = names_[i];
    uint32_t st = s.state.load(std::memory_order_acquire);
    if (st == 0) {
      // At three quarters full, new names are refused: probes stay short.
      if (names_count_.load(std::memory_order_relaxed) >= kMaxMarkNames / 4 * 3)
        return oplog::kNoMarkName;
      const uint64_t off = names_used_.fetch_add(len, std::memory_order_relaxed);
      if (off + len > kNameArenaBytes) return oplog::kNoMarkName;
      if (s.state.compare_exchange_strong(st, 1, std::memory_order_acq_rel)) {
        s.hash = h;
        s.len = static_cast<uint32_t>(len);
        s.off = off;
        std::memcpy(names_arena_ + off, name, len);
        names_count_.fetch_add(1, std::memory_order_relaxed);
        s.state.store(2, std::memory_order_release);
        return i;
      }
    }
    while (st == 1) st = s.state.load(std::memory_order_acquire);  // a few stores away
    if (s.hash == h && s.len == len && std::memcmp(names_arena_ + s.off, name, len) == 0) return i;
  }
  return oplog::kNoMarkName;
}

void Timeline::append_mark(Shard* s, uint8_t kind, uint32_t name, uint32_t tid, int depth,
                           uint64_t now) {
  if (!s) return;
  // FABTRACE_OPS_WINDOW=mark:NAME (state 3, the usual case, costs one load).
  int st = mark_state_.load(std::memory_order_acquire);
  if (st == 0 && name == mark_target_ &&
      (kind == oplog::kMarkInstant || kind == oplog::kPhaseBegin)) {
    const int to = kind == oplog::kMarkInstant ? 1 : 2;
    if (to == 2) {
      mark_tid_.store(tid, std::memory_order_relaxed);
      mark_depth_.store(depth, std::memory_order_relaxed);
    }
    if (mark_state_.compare_exchange_strong(st, to, std::memory_order_acq_rel))
      set_capture(true, now);
  } else if ((st == 1 && kind == oplog::kMarkInstant) ||
             (st == 2 && kind == oplog::kPhaseEnd &&
              tid == mark_tid_.load(std::memory_order_relaxed) &&
              depth == mark_depth_.load(std::memory_order_relaxed))) {
    if (mark_state_.compare_exchange_strong(st, 3, std::memory_order_acq_rel))
      set_capture(false, now);
  }
  OpChunk* ch = room(s->timeline);
  if (!ch) return;
  const uint32_t i = ch->committed.load(std::memory_order_relaxed);
  ch->e[i] = oplog::OpEntry{now, now, 0, name, tid, kind, 0, oplog::kOpIsMark, 0};
  ch->committed.store(i + 1, std::memory_order_release);
}

// ---------------------------------------------------------------- capture window

void Timeline::init_capture(const CaptureSpec& w) {
  switch (w.kind) {
    case CaptureSpec::kWhole:
      break;
    case CaptureSpec::kTime: {
      const Calibration cal = clock_calibration();
      const uint64_t t0 = now_ticks();  // about the first fabric activity: the timeline starts then
      const uint64_t lo = t0 + cal.ns_to_ticks(w.start_s * 1e9);
      const uint64_t hi = w.duration_s < 0 ? UINT64_MAX : lo + cal.ns_to_ticks(w.duration_s * 1e9);
      lo_.store(lo, std::memory_order_relaxed);
      hi_.store(hi, std::memory_order_relaxed);
      push_capture(oplog::kCaptureOn, lo);
      if (hi != UINT64_MAX) push_capture(oplog::kCaptureOff, hi);
      break;
    }
    case CaptureSpec::kMark:
      mark_target_ = mark_name_id(w.mark.c_str());
      if (mark_target_ == oplog::kNoMarkName) {
        log_line("warning: FABTRACE_OPS_WINDOW=mark:%s: no room for the name; whole run",
                 w.mark.c_str());
        break;
      }
      lo_.store(UINT64_MAX, std::memory_order_relaxed);
      capturing_.store(false, std::memory_order_relaxed);
      mark_state_.store(0, std::memory_order_release);
      break;
    case CaptureSpec::kSignal:
      lo_.store(UINT64_MAX, std::memory_order_relaxed);
      capturing_.store(false, std::memory_order_relaxed);
      break;
  }
}

// Only relaxed atomics and the lock-free ring: callable from a signal handler.
void Timeline::set_capture(bool on, uint64_t now) {
  if (on) {
    lo_.store(now, std::memory_order_relaxed);
    hi_.store(UINT64_MAX, std::memory_order_relaxed);
  } else {
    hi_.store(now, std::memory_order_relaxed);
  }
  capturing_.store(on, std::memory_order_relaxed);
  push_capture(on ? oplog::kCaptureOn : oplog::kCaptureOff, now);
}

void Timeline::toggle_capture(uint64_t now) {
  set_capture(!capturing_.load(std::memory_order_relaxed), now);
}

void Timeline::push_capture(uint8_t kind, uint64_t now) {
  const uint64_t i = capture_head_.fetch_add(1, std::memory_order_acq_rel);
  CaptureEvent& e = captures_[i % kCaptureRing];
  // A reader that sees this data (acquire) also sees seq no longer its old
  // index: no fence needed (and none allowed under ThreadSanitizer).
  e.seq.exchange(0, std::memory_order_acq_rel);
  e.data.store(now << 1 | (kind == oplog::kCaptureOn ? 1 : 0), std::memory_order_release);
  e.seq.store(i + 1, std::memory_order_release);
}

void Timeline::drain_captures() {
  const uint64_t head = capture_head_.load(std::memory_order_acquire);
  while (capture_tail_ < head) {
    CaptureEvent& e = captures_[capture_tail_ % kCaptureRing];
    const uint64_t want = capture_tail_ + 1;
    const uint64_t seq = e.seq.load(std::memory_order_acquire);
    if (seq == want) {
      const uint64_t d = e.data.load(std::memory_order_acquire);
      const uint64_t t = d >> 1;
      const uint8_t k = (d & 1) ? oplog::kCaptureOn : oplog::kCaptureOff;
      if (e.seq.load(std::memory_order_acquire) == want) {
        marks_staging_.push_back(oplog::OpEntry{t, t, 0, oplog::kNoMarkName, 0, k, 0, 0, 0});
      } else {
        ++captures_lost_;  // overwritten while read: more than kCaptureRing changes in a pass
      }
    } else if (seq > want || head - capture_tail_ > kCaptureRing) {
      ++captures_lost_;
    } else {
      break;  // still being written: the next pass takes it
    }
    ++capture_tail_;
  }
}

void Timeline::name_new_marks() {
  std::vector<OplogMarkName> fresh;
  for (uint32_t i = 0; i < kMaxMarkNames; ++i) {
    NameSlot& s = names_[i];
    if (s.named || s.state.load(std::memory_order_acquire) != 2) continue;
    s.named = true;
    fresh.push_back(OplogMarkName{i, std::string(names_arena_ + s.off, s.len)});
  }
  if (!fresh.empty()) file_.write_mark_names(fresh);
}

void Timeline::write_marks() {
  // Every name a mark uses was interned before the mark was committed; the
  // count is only a cheap way to skip the scan when nothing is new.
  const uint32_t count = names_count_.load(std::memory_order_acquire);
  bool scan = count != names_seen_;
  for (const oplog::OpEntry& m : marks_staging_)
    if (m.link_id != oplog::kNoMarkName && m.link_id < kMaxMarkNames && !names_[m.link_id].named)
      scan = true;
  if (scan) {
    names_seen_ = count;
    name_new_marks();
  }
  if (marks_staging_.empty()) return;
  if (file_.write_marks(marks_staging_.data(), marks_staging_.size()))
    marks_written_ += marks_staging_.size();
  marks_staging_.clear();
}

}  // namespace fabtrace
