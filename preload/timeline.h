// The per-op timeline: every selected completed op, streamed to a per-rank
// oplog file by a background writer.
//
// The data path only appends to its thread's current chunk (a store and a
// release of the commit count: no lock, no syscall). The writer thread
// periodically writes what each thread committed, so a crash loses at most one
// period. Full chunks go to the writer, which recycles them; when no chunk is
// free the op is dropped and counted, never waited for. Memory is bounded by
// FABTRACE_OPS_MB.
//
// Marks (fabtrace_mark/_begin/_end) go through the same per-thread chunks, so
// one costs one append; the writer sorts them into kMarks blocks. The capture
// window (FABTRACE_OPS_WINDOW, the toggle signal, a mark) is two bounds in
// ticks, [lo_, hi_]: an op is kept when it overlaps them, so ops in flight at
// an edge are kept whole. Changing the window is two relaxed stores, safe in a
// signal handler; the change is recorded through a small lock-free ring that
// the writer drains.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/capture_spec.h"
#include "common/op_kinds.h"
#include "common/oplog_file.h"
#include "common/oplog_format.h"
#include "preload/inflight.h"
#include "preload/objects.h"
#include "preload/stats.h"
#include "preload/timeline_local.h"

namespace fabtrace {

struct TimelineConfig {
  bool on = false;
  std::string nic;             // FABTRACE_OPS_NIC: substring of the NIC address to keep
  uint64_t min_bytes = 65536;  // FABTRACE_OPS_MIN_BYTES; errors always pass
  uint64_t mb = 64;            // FABTRACE_OPS_MB
  uint64_t flush_ms = 200;     // FABTRACE_OPS_FLUSH_MS
  CaptureSpec capture;         // FABTRACE_OPS_WINDOW
  int signo = 0;               // FABTRACE_OPS_SIGNAL (0: none)
  std::string signal_note;     // written in the file: "SIGUSR2", or why there is no toggle
};

class Timeline {
 public:
  static constexpr uint32_t kNoLink = UINT32_MAX;
  static constexpr uint32_t kMaxLinks = 1u << 16;

  // Reads FABTRACE_OPS_* (and whether this rank is selected) into cfg.
  static TimelineConfig config_from_env(long rank);

  Timeline() = default;
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;
  // The preload's timeline is never destroyed (shims may run during exit);
  // benchmarks and tests make their own.
  ~Timeline();

  // Opens the file and starts the writer. Returns false (timeline off) on error.
  bool start(const TimelineConfig& cfg, const std::string& path, const OplogMeta& meta);
  // Final flush, calibration, end block; joins the writer. Idempotent.
  void finish();
  bool on() const { return on_.load(std::memory_order_relaxed); }
  void disable() { on_.store(false, std::memory_order_relaxed); }  // after fork()

  // The data path: one completed op (called by the thread that polled it).
  // Inline (below): room in the thread's chunk, a link already named, no NIC
  // filter. Everything else goes to append_slow.
  // `flags`: oplog::kOp* bits.
  inline void append(Shard* s, Cell* c, const OpRecord* rec, uint64_t end, uint64_t bytes,
                     bool error, uint16_t flags = 0);
  void append_slow(Shard* s, Cell* c, const OpRecord* rec, uint64_t end, uint64_t bytes, bool error,
                   uint16_t flags);

  // ---- marks (preload/marks.cpp is the application's way in)
  static constexpr uint32_t kMaxMarkNames = 1u << 14;
  // The id of `name` in the mark name dictionary (interned on first use, lock
  // free), or oplog::kNoMarkName when the dictionary is full.
  uint32_t mark_name_id(const char* name);
  // One mark record (oplog::MarkKind) in the thread's chunk. Also moves the
  // capture window when it waits for marks (FABTRACE_OPS_WINDOW=mark:NAME):
  // `depth` is the thread's phase depth after a begin, before an end.
  void append_mark(Shard* s, uint8_t kind, uint32_t name, uint32_t tid, int depth, uint64_t now);

  // ---- the capture window
  // Async-signal-safe: turns the capture off (on) at `now` when it is on (off).
  void toggle_capture(uint64_t now);
  bool capturing() const { return capturing_.load(std::memory_order_relaxed); }

 private:
  struct LinkSlot {
    std::atomic<uint32_t> state{0};  // 0 empty, 1 being filled, 2 ready
    const EpWrap* ep = nullptr;
    fi_addr_t peer = 0;
    std::atomic<int8_t> match{-1};  // NIC filter: -1 not decided yet, else kMatch* bits
    bool named = false;             // writer: dictionary entry written
  };

  static constexpr int8_t kMatchInitiator = 1;  // the remote side is the NIC
  static constexpr int8_t kMatchRecv = 2;       // the local side is the NIC
  static bool keeps(const LinkSlot& s, OpKind kind);
  uint32_t link_id(const EpWrap* ep, fi_addr_t peer);
  static inline void put(OpChunk* ch, const OpRecord* rec, uint64_t end, uint64_t bytes,
                         uint32_t link, bool error, uint16_t flags);
  // A chunk of this thread with room for one entry, or nullptr (counted as dropped).
  OpChunk* room(TimelineLocal& tl);
  bool in_capture(uint64_t start, uint64_t end) const {
    return start <= hi_.load(std::memory_order_relaxed) &&
           end >= lo_.load(std::memory_order_relaxed);
  }
  void set_capture(bool on, uint64_t now);
  void push_capture(uint8_t kind, uint64_t now);
  void drain_captures();
  void name_new_marks();
  void write_marks();
  void init_capture(const CaptureSpec& w);
  OpChunk* pop_free();
  void push_free(OpChunk* c);
  void run();
  void pass();
  void write_range(OpChunk* c, uint32_t upto);
  void name_new_links();
  void write_calib();

  TimelineConfig cfg_;
  // The fast path's byte floor: cfg_.min_bytes, or kSlowPathOnly when filtering
  // by NIC (every op then goes to the slow path, which applies the filter).
  static constexpr uint64_t kSlowPathOnly = UINT64_MAX;
  uint64_t fast_min_bytes_ = kSlowPathOnly;
  std::atomic<bool> on_{false};
  std::string path_;
  OplogFileWriter file_;

  OpChunk* pool_ = nullptr;
  uint32_t pool_n_ = 0;
  std::atomic<uint32_t> pool_used_{0};  // chunks handed out at least once
  std::atomic<uint64_t> free_head_{0};  // (tag << 32) | (index + 1)
  std::atomic<OpChunk*> full_head_{nullptr};

  LinkSlot* links_ = nullptr;

  // The capture window, ticks: ops overlapping [lo_, hi_] are kept.
  std::atomic<uint64_t> lo_{0};
  std::atomic<uint64_t> hi_{UINT64_MAX};
  std::atomic<bool> capturing_{true};
  // Capture changes on their way to the file (written by any thread or the
  // signal handler, drained by the writer).
  struct CaptureEvent {
    std::atomic<uint64_t> seq{0};   // index + 1 once `data` is written; 0 while it is
    std::atomic<uint64_t> data{0};  // ticks << 1 | 1 for on (ticks stay below 2^63)
  };
  static constexpr uint32_t kCaptureRing = 256;
  CaptureEvent captures_[kCaptureRing];
  std::atomic<uint64_t> capture_head_{0};
  uint64_t capture_tail_ = 0;  // writer only
  uint64_t captures_lost_ = 0;
  // FABTRACE_OPS_WINDOW=mark:NAME: 0 waiting for the mark, 1 open until the
  // next mark, 2 open until the phase ends (thread mark_tid_ back at mark_depth_), 3 closed.
  std::atomic<int> mark_state_{3};
  uint32_t mark_target_ = oplog::kNoMarkName;
  std::atomic<uint32_t> mark_tid_{0};
  std::atomic<int> mark_depth_{0};

  // The mark name dictionary: open addressing on the name's hash; names live
  // in one arena (bump allocated), both reserved at start.
  struct NameSlot {
    std::atomic<uint32_t> state{0};  // 0 empty, 1 being filled, 2 ready
    uint32_t len = 0;
    uint64_t hash = 0;
    uint64_t off = 0;    // in names_arena_
    bool named = false;  // writer: dictionary entry written
  };
  static constexpr uint64_t kNameArenaBytes = 1u << 20;
  NameSlot* names_ = nullptr;
  char* names_arena_ = nullptr;
  std::atomic<uint64_t> names_used_{0};   // arena bytes handed out
  std::atomic<uint32_t> names_count_{0};  // slots filled
  uint32_t names_seen_ = 0;               // writer: names_count_ at the last naming pass
  std::vector<oplog::OpEntry> marks_staging_;
  uint64_t marks_written_ = 0;

  std::thread writer_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<bool> finished_{false};
  uint64_t written_ = 0, writer_filtered_ = 0;
  std::vector<oplog::OpEntry> staging_;
};

Timeline& timeline();

inline void Timeline::put(OpChunk* ch, const OpRecord* rec, uint64_t end, uint64_t bytes,
                          uint32_t link, bool error, uint16_t flags) {
  const uint32_t i = ch->committed.load(std::memory_order_relaxed);
  ch->e[i] = oplog::OpEntry{rec->start,
                            end,
                            bytes,
                            link,
                            rec->tid,
                            static_cast<uint8_t>(rec->kind),
                            error ? uint8_t{1} : uint8_t{0},
                            flags,
                            0};
  ch->committed.store(i + 1, std::memory_order_release);  // the writer may read it now
}

inline void Timeline::append(Shard* s, Cell* c, const OpRecord* rec, uint64_t end, uint64_t bytes,
                             bool error, uint16_t flags) {
  // fast_min_bytes_ is kSlowPathOnly under a NIC filter, which the slow path applies;
  // so is the capture window when the op is outside it.
  if (__builtin_expect(s && c && c->link_id < kMaxLinks && bytes >= fast_min_bytes_ &&
                           in_capture(rec->start, end),
                       1)) {
    OpChunk* ch = s->timeline.chunk.load(std::memory_order_relaxed);
    if (ch && ch->committed.load(std::memory_order_relaxed) < OpChunk::kEntries) {
      put(ch, rec, end, bytes, c->link_id, error, flags);
      return;
    }
  }
  append_slow(s, c, rec, end, bytes, error, flags);
}

}  // namespace fabtrace
