#include "preload/timeline.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <new>

#include "common/clock.h"
#include "common/env.h"
#include "common/rank.h"
#include "preload/inflight.h"
#include "preload/names.h"
#include "preload/stats.h"

namespace fabtrace {

namespace {
uint64_t link_hash(const EpWrap* ep, fi_addr_t peer) {
  uint64_t h = reinterpret_cast<uintptr_t>(ep) * 0x9E3779B97F4A7C15ULL;
  h ^= (peer + 0x632BE59BD9B4E019ULL) * 0xBF58476D1CE4E5B9ULL;
  return h ^ (h >> 31);
}
}  // namespace

// Under FABTRACE_OPS_NIC: sends, writes, reads and atomics aimed at the NIC,
// and receives posted on it. Undecided links keep their ops for now.
bool Timeline::keeps(const LinkSlot& s, OpKind kind) {
  const int8_t m = s.match.load(std::memory_order_relaxed);
  if (m < 0) return true;
  return (m & (op_is_recv(kind) ? kMatchRecv : kMatchInitiator)) != 0;
}

Timeline::~Timeline() {
  finish();
  std::free(pool_);
  delete[] links_;
  delete[] names_;
  std::free(names_arena_);
}

Timeline& timeline() {
  static Timeline* t = new Timeline();  // never destroyed: shims may run during exit
  return *t;
}

TimelineConfig Timeline::config_from_env(long rank) {
  TimelineConfig c;
  // Only white space is no filter (it would match every address).
  c.nic = env_trimmed("FABTRACE_OPS_NIC");
  const std::string ranks = env_trimmed("FABTRACE_OPS_RANKS");
  bool selected = false;
  if (ranks == "all") {
    selected = true;
  } else if (!ranks.empty()) {
    RankSpec spec;
    std::string err;
    if (!spec.parse(ranks, &err))
      log_line("warning: FABTRACE_OPS_RANKS=%s is not a rank list (%s); per-op timeline off",
               ranks.c_str(), err.c_str());
    else
      selected = spec.contains(rank);
  }
  // The NIC filter runs on every rank: which ops touch that NIC is decided per link.
  c.on = selected || !c.nic.empty();
  c.min_bytes = env_u64("FABTRACE_OPS_MIN_BYTES", 65536);
  c.mb = env_u64("FABTRACE_OPS_MB", 64, 1, 1 << 20);
  c.flush_ms = env_u64("FABTRACE_OPS_FLUSH_MS", 200, 1, 60000);
  const std::string win = env_trimmed("FABTRACE_OPS_WINDOW");
  std::string why;
  if (!parse_capture_spec(win, &c.capture, &why))
    log_line("warning: FABTRACE_OPS_WINDOW=%s: %s; the timeline covers the whole run", win.c_str(),
             why.c_str());
  const char* sig = std::getenv("FABTRACE_OPS_SIGNAL");
  c.signo = parse_capture_signal(sig ? env_trimmed("FABTRACE_OPS_SIGNAL") : "USR2", &why);
  if (c.signo < 0) {
    log_line("warning: FABTRACE_OPS_SIGNAL=%s: %s; using USR2", sig, why.c_str());
    c.signo = parse_capture_signal("USR2", &why);
  }
  return c;
}

bool Timeline::start(const TimelineConfig& cfg, const std::string& path, const OplogMeta& meta) {
  cfg_ = cfg;
  fast_min_bytes_ = cfg.nic.empty() ? cfg.min_bytes : kSlowPathOnly;
  pool_n_ = static_cast<uint32_t>(std::max<uint64_t>(2, (cfg.mb << 20) / sizeof(OpChunk)));
  // Virtual until used: chunks are carved off on demand, so a rank that logs
  // little pays little physical memory.
  pool_ = static_cast<OpChunk*>(std::malloc(static_cast<size_t>(pool_n_) * sizeof(OpChunk)));
  links_ = new (std::nothrow) LinkSlot[kMaxLinks];
  names_ = new (std::nothrow) NameSlot[kMaxMarkNames];
  names_arena_ = static_cast<char*>(std::malloc(kNameArenaBytes));
  if (!pool_ || !links_ || !names_ || !names_arena_) {
    log_line("warning: per-op timeline off (cannot allocate %llu MiB for it)",
             static_cast<unsigned long long>(cfg.mb));
    return false;
  }
  if (!file_.open(path, meta)) return false;  // the writer said why, in one line
  path_ = path;
  write_calib();
  OplogCaptureSpec w;
  w.spec = cfg.capture.text();
  w.signal = cfg.signal_note;
  file_.write_capture(w);
  init_capture(cfg.capture);
  staging_.reserve(OpChunk::kEntries);
  on_.store(true, std::memory_order_release);
  writer_ = std::thread([this] { run(); });
  return true;
}

uint32_t Timeline::link_id(const EpWrap* ep, fi_addr_t peer) {
  uint32_t i = static_cast<uint32_t>(link_hash(ep, peer)) & (kMaxLinks - 1);
  for (uint32_t probe = 0; probe < kMaxLinks; ++probe, i = (i + 1) & (kMaxLinks - 1)) {
    LinkSlot& s = links_[i];
    uint32_t st = s.state.load(std::memory_order_acquire);
    if (st == 0) {
      if (s.state.compare_exchange_strong(st, 1, std::memory_order_acq_rel)) {
        s.ep = ep;
        s.peer = peer;
        s.state.store(2, std::memory_order_release);
        return i;
      }
    }
    while (st == 1) st = s.state.load(std::memory_order_acquire);  // two stores away
    if (s.ep == ep && s.peer == peer) return i;
  }
  return kNoLink;
}

OpChunk* Timeline::pop_free() {
  uint64_t head = free_head_.load(std::memory_order_acquire);
  while (head & 0xffffffffu) {
    OpChunk* c = &pool_[(head & 0xffffffffu) - 1];
    const uint64_t next = ((head >> 32) + 1) << 32 | c->free_next.load(std::memory_order_relaxed);
    if (free_head_.compare_exchange_weak(head, next, std::memory_order_acq_rel)) return c;
  }
  const uint32_t n = pool_used_.fetch_add(1, std::memory_order_relaxed);
  if (n >= pool_n_) {
    pool_used_.store(pool_n_, std::memory_order_relaxed);
    return nullptr;
  }
  return new (&pool_[n]) OpChunk();
}

void Timeline::push_free(OpChunk* c) {
  c->committed.store(0, std::memory_order_relaxed);
  c->flushed = 0;
  c->full_next = nullptr;
  const uint32_t idx = static_cast<uint32_t>(c - pool_) + 1;
  uint64_t head = free_head_.load(std::memory_order_relaxed);
  uint64_t next;
  do {
    c->free_next.store(static_cast<uint32_t>(head & 0xffffffffu), std::memory_order_relaxed);
    next = ((head >> 32) + 1) << 32 | idx;
  } while (!free_head_.compare_exchange_weak(head, next, std::memory_order_acq_rel));
}

OpChunk* Timeline::room(TimelineLocal& tl) {
  OpChunk* ch = tl.chunk.load(std::memory_order_relaxed);
  if (ch && ch->committed.load(std::memory_order_relaxed) < OpChunk::kEntries) return ch;
  OpChunk* fresh = pop_free();
  if (!fresh) {
    ++tl.dropped;
    return nullptr;
  }
  if (ch) {
    OpChunk* head = full_head_.load(std::memory_order_relaxed);
    do {
      ch->full_next = head;
    } while (!full_head_.compare_exchange_weak(head, ch, std::memory_order_release,
                                               std::memory_order_relaxed));
  }
  tl.chunk.store(fresh, std::memory_order_release);
  return fresh;
}

void Timeline::append_slow(Shard* s, Cell* c, const OpRecord* rec, uint64_t end, uint64_t bytes,
                           bool error, uint16_t flags) {
  if (!s) return;
  TimelineLocal& tl = s->timeline;
  if (bytes < cfg_.min_bytes && !error) {
    ++tl.filtered;
    return;
  }
  if (!in_capture(rec->start, end)) {
    ++tl.outside;
    return;
  }
  uint32_t link = kNoLink;
  if (c) {
    if (c->link_id == Cell::kLinkUnset) c->link_id = link_id(c->key.ep, c->key.peer);
    link = c->link_id;
  }
  if (!cfg_.nic.empty() && link != kNoLink && !keeps(links_[link], rec->kind)) {
    ++tl.filtered;
    return;
  }
  OpChunk* ch = room(tl);
  if (ch) put(ch, rec, end, bytes, link, error, flags);
}

void Timeline::name_new_links() {
  std::vector<OplogLink> fresh;
  for (uint32_t i = 0; i < kMaxLinks; ++i) {
    LinkSlot& s = links_[i];
    if (s.named || s.state.load(std::memory_order_acquire) != 2) continue;
    OplogLink l;
    l.id = i;
    l.local = local_label(s.ep);
    l.remote = remote_label(s.ep, s.peer);
    if (!cfg_.nic.empty()) {
      const bool remote = l.remote.find(cfg_.nic) != std::string::npos;
      const bool local = l.local.find(cfg_.nic) != std::string::npos;
      s.match.store(static_cast<int8_t>((remote ? kMatchInitiator : 0) | (local ? kMatchRecv : 0)),
                    std::memory_order_relaxed);
    }
    s.named = true;
    fresh.push_back(std::move(l));
  }
  if (!fresh.empty()) file_.write_links(fresh);
}

void Timeline::write_range(OpChunk* c, uint32_t upto) {
  if (upto <= c->flushed) return;
  staging_.clear();
  for (uint32_t i = c->flushed; i < upto; ++i) {
    const oplog::OpEntry& e = c->e[i];
    if (e.flags & oplog::kOpIsMark) {
      oplog::OpEntry m = e;
      m.flags = 0;
      marks_staging_.push_back(m);
      continue;
    }
    // The NIC filter is decided per link when the link is named; ops the data
    // path logged before that are sorted out here.
    if (!cfg_.nic.empty() && e.link_id != kNoLink &&
        !keeps(links_[e.link_id], static_cast<OpKind>(e.kind))) {
      ++writer_filtered_;
      continue;
    }
    staging_.push_back(e);
  }
  c->flushed = upto;
  if (!staging_.empty() && file_.write_ops(staging_.data(), staging_.size()))
    written_ += staging_.size();
}

void Timeline::pass() {
  name_new_links();
  // Full chunks first (they hold a thread's older entries), then what each
  // thread has committed in its current chunk.
  OpChunk* full = full_head_.exchange(nullptr, std::memory_order_acquire);
  OpChunk* ordered = nullptr;
  while (full) {
    OpChunk* n = full->full_next;
    full->full_next = ordered;
    ordered = full;
    full = n;
  }
  while (ordered) {
    OpChunk* n = ordered->full_next;
    write_range(ordered, ordered->committed.load(std::memory_order_acquire));
    push_free(ordered);
    ordered = n;
  }
  for (Shard* s = all_shards(); s; s = s->next) {
    OpChunk* c = s->timeline.chunk.load(std::memory_order_acquire);
    if (c) write_range(c, c->committed.load(std::memory_order_acquire));
  }
  drain_captures();
  write_marks();
}

void Timeline::write_calib() { file_.write_calib(clock_calibration()); }

void Timeline::run() {
  auto next_calib = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    cv_.wait_for(lk, std::chrono::milliseconds(cfg_.flush_ms), [this] { return stop_; });
    if (stop_) break;
    lk.unlock();
    pass();
    if (std::chrono::steady_clock::now() >= next_calib) {
      // Refresh the fit while running, so a long run's file converts well
      // even if it never reaches a clean exit.
      write_calib();
      next_calib += std::chrono::seconds(1);
    }
    lk.lock();
  }
}

void Timeline::finish() {
  if (!on_.load(std::memory_order_acquire) || finished_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (writer_.joinable()) writer_.join();
  pass();
  write_calib();
  uint64_t dropped = 0, filtered = writer_filtered_, outside = 0;
  for (Shard* s = all_shards(); s; s = s->next) {
    dropped += s->timeline.dropped;
    filtered += s->timeline.filtered;
    outside += s->timeline.outside;
  }
  file_.write_end(written_, dropped, filtered, outside);
  file_.close();
  // Threads' chunks and counts belong to this timeline: a later one (tests,
  // benchmarks) must start them afresh.
  for (Shard* s = all_shards(); s; s = s->next) {
    s->timeline.chunk.store(nullptr, std::memory_order_relaxed);
    s->timeline.dropped = s->timeline.filtered = s->timeline.outside = 0;
  }
  on_.store(false, std::memory_order_release);
  if (file_.failed())  // its first error was said: never a path to a cut file as a success
    log_line("warning: per-op timeline %s is incomplete: a write failed (see above)",
             path_.c_str());
  else if (cfg_.capture.kind == CaptureSpec::kWhole && capture_head_.load() == 0)
    log_line("per-op timeline -> %s (%llu ops)", path_.c_str(),
             static_cast<unsigned long long>(written_));
  else
    log_line("per-op timeline -> %s (%llu ops; %llu outside the capture window %s)", path_.c_str(),
             static_cast<unsigned long long>(written_), static_cast<unsigned long long>(outside),
             cfg_.capture.kind == CaptureSpec::kWhole ? "(signal)" : cfg_.capture.text().c_str());
  if (captures_lost_)
    log_line("warning: %llu capture window changes not recorded (more than %u between writes)",
             static_cast<unsigned long long>(captures_lost_), kCaptureRing);
  if (dropped)
    log_line(
        "WARNING: %llu per-op records dropped (writer fell behind or buffer full); raise "
        "FABTRACE_OPS_MB",
        static_cast<unsigned long long>(dropped));
  if (!cfg_.nic.empty() && written_ == 0)
    log_line(
        "WARNING: per-op timeline on, but 0 ops matched FABTRACE_OPS_NIC=%s: check the "
        "address form against a NIC line of the report",
        cfg_.nic.c_str());
}

}  // namespace fabtrace
