#include "userspace/report/perfetto_trace.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "common/cxi_counters.h"
#include "common/op_kinds.h"
#include "common/oplog_file.h"
#include "common/printable.h"
#include "userspace/report/perfetto_kernel.h"
#include "userspace/report/perfetto_writer.h"
#include "userspace/report/summary.h"

namespace fabtrace::report {

namespace {

// Generous upper bounds of what one op / instant / counter value adds to a file
// (packets without their descriptors), used to split files before max_file_bytes.
constexpr size_t kOpBytes = 256;
constexpr size_t kEventBytes = 512;
// Descriptor bytes beyond the names they carry.
constexpr size_t kDescriptorBytes = 64;
// pids <= 0 (unknown) get a synthetic one above Linux's pid_max (4194304).
constexpr int32_t kSyntheticPidBase = 0x40000000;

// One op on its way from the oplog to the trace (times: wall-clock ns).
struct Pending {
  int64_t start;
  int64_t end;
  uint64_t bytes;
  uint32_t link;  // index into Builder::links_
  uint8_t kind;
  uint8_t error;
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
class ReorderWindow {
 public:
  static constexpr size_t kRuns = 16;
  static constexpr size_t kFix = 32;

  explicit ReorderWindow(size_t cap) : cap_(cap), pool_(cap) {
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

// One link of the rank being written: its track (lane 0) and overlap lanes.
struct Link {
  std::string name;  // "local -> remote"
  uint64_t uuid = 0;
  uint32_t gen = 0;  // writer generation its descriptor was written in
  size_t bound = 0;  // bytes of its descriptors (and a lane's), upper bound
  std::vector<int64_t> lane_end;
  std::vector<uint64_t> lane_uuid;
  std::vector<uint32_t> lane_gen;
  uint64_t dropped = 0;
};

struct RankTrack {
  const Rank* rank = nullptr;
  std::string name;  // "rank R (host)"
  int32_t pid = 0;
  int32_t order = 0;
  uint64_t uuid = 0;
  uint32_t gen = 0;
  uint64_t gap_uuid = 0;
  uint32_t gap_gen = 0;
  int64_t wall_offset = 0;  // wall ns = mono ns + wall_offset
  uint64_t dropped = 0;
  int64_t last_ts = 0;
};

struct CounterColumn {
  size_t index = 0;
  bool cumulative = true;
  uint64_t uuid = 0;
  uint32_t gen = 0;
  bool has_prev = false;
  uint64_t prev_t = 0, prev_v = 0;
};

std::string rank_label(const Rank& r) {
  std::string s = "rank " + (r.rank.empty() ? std::string("NA") : r.rank);
  if (!r.host.empty()) s += " (" + r.host + ")";
  return s;
}

// A file-name-safe rendering of a rank string.
std::string file_token(const std::string& s) {
  std::string out;
  for (char c : s) {
    const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    c == '-' || c == '_';
    out += ok ? c : '_';
  }
  return out.empty() ? "NA" : out;
}

bool contains(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

uint64_t to_u64_ts(int64_t ns) { return ns < 0 ? 0 : static_cast<uint64_t>(ns); }

class Builder {
 public:
  Builder(const Job& job, const std::string& out_dir, const PerfettoOptions& opt,
          std::vector<std::string>* files, PerfettoStats* stats)
      : job_(job),
        dir_(out_dir),
        opt_(opt),
        files_(files),
        stats_(stats),
        window_(kPerfettoReorderWindow) {}

  bool run(std::string* error);

 private:
  // ---- files
  bool open_base(const std::string& base, uint64_t snapshot_ns);
  bool open_part();
  bool finish_file();
  // Makes sure `bound` more bytes fit in the current file (see next_part()).
  bool room(size_t bound) {
    if (w_.is_open() && w_.bytes() + bound <= opt_.max_file_bytes) return true;
    return next_part(bound);
  }
  bool next_part(size_t bound);
  bool fail(const std::string& msg) {
    if (error_.empty()) error_ = msg;
    return false;
  }

  // ---- descriptors (written once per file, when first needed)
  void need_process(RankTrack& r) {
    if (r.gen == w_.generation()) return;
    w_.process_track(r.uuid, r.pid, r.name, r.order);
    r.gen = w_.generation();
  }
  void need_link(RankTrack& r, Link& l) {
    if (l.gen == w_.generation()) return;
    need_process(r);
    w_.child_track(l.uuid, r.uuid, l.name, 0, /*explicit_child_order=*/true);
    l.gen = w_.generation();
  }
  uint64_t need_lane(RankTrack& r, Link& l, size_t lane) {
    need_link(r, l);
    if (lane > 0 && l.lane_gen[lane] != w_.generation()) {
      w_.child_track(l.lane_uuid[lane], l.uuid, "lane " + std::to_string(lane + 1),
                     static_cast<int32_t>(lane), false);
      l.lane_gen[lane] = w_.generation();
    }
    return l.lane_uuid[lane];
  }
  uint64_t need_gap_track(RankTrack& r) {
    need_process(r);
    if (r.gap_gen != w_.generation()) {
      w_.child_track(r.gap_uuid, r.uuid, "CQ poll gaps", -1, false);
      r.gap_gen = w_.generation();
    }
    return r.gap_uuid;
  }

  // ---- interned names (cached per file generation)
  uint64_t arg_iid(int which) {
    static const char* const kNames[] = {"bytes", "error", "gap_ms", "polls", "cq", "why"};
    if (arg_gen_[which] != w_.generation()) {
      arg_iid_[which] = w_.annotation_name(kNames[which]);
      arg_gen_[which] = w_.generation();
    }
    return arg_iid_[which];
  }
  uint64_t op_iid(uint8_t kind, bool error) {
    const size_t k = kind + (error ? 256 : 0);
    if (op_gen_[k] != w_.generation()) {
      const std::string& n = op_names_[kind];
      op_iid_[k] = w_.event_name(error ? n + " error" : n);
      op_gen_[k] = w_.generation();
    }
    return op_iid_[k];
  }

  // ---- content
  bool write_rank(RankTrack& r);
  bool write_ops(RankTrack& r);
  uint32_t link_index(const OplogReader& rd, uint32_t id);
  bool place(RankTrack& r, const Pending& p);
  bool write_mark(RankTrack& r, const OplogReader& rd, const OplogCalib& cal,
                  const oplog::OpEntry& m);
  bool write_stalls(RankTrack& r);
  bool write_counters(RankTrack& r);
  bool write_nic_windows(RankTrack& r);
  bool write_kernel(const KernelNode& n, int32_t order, const std::vector<RankTrack>& ranks);
  void warn(const std::string& s) { stats_->warnings.push_back(s); }

  const Job& job_;
  std::string dir_;
  PerfettoOptions opt_;
  std::vector<std::string>* files_;
  PerfettoStats* stats_;
  std::string error_;

  PerfettoWriter w_;
  std::string base_;  // path without ".pftrace"
  int part_ = -1;     // -1: base.pftrace; else base.<part_>.pftrace
  uint64_t snapshot_ns_ = 0;
  uint64_t preamble_bytes_ = 0;
  uint64_t next_uuid_ = 1;

  uint64_t arg_iid_[6] = {};
  uint32_t arg_gen_[6] = {};
  uint64_t op_iid_[512] = {};
  uint32_t op_gen_[512] = {};
  std::vector<std::string> op_names_;

  std::unordered_map<std::string, std::vector<const Stall*>> stalls_by_rank_;

  // Per rank (reset for each).
  std::vector<Link> links_;
  std::unordered_map<std::string, uint32_t> link_by_name_;
  std::vector<uint32_t> link_by_id_;  // oplog link id -> links_ index, kNoLink when unseen
  std::unordered_map<uint32_t, uint32_t> link_by_big_id_;
  ReorderWindow window_;
  int64_t watermark_ = std::numeric_limits<int64_t>::min();
  // The application's marks of the rank: a track per marking thread.
  struct MarkTrack {
    uint32_t tid = 0;
    uint64_t uuid = 0;
    uint32_t gen = 0;
    int depth = 0;  // open phases
  };
  std::vector<MarkTrack> mark_tracks_;
  static constexpr uint32_t kNoLink = 0xFFFFFFFFu;
  static constexpr uint32_t kDenseIds = 1u << 20;
};

bool Builder::open_base(const std::string& base, uint64_t snapshot_ns) {
  base_ = base;
  part_ = -1;
  snapshot_ns_ = snapshot_ns;
  return open_part();
}

bool Builder::open_part() {
  const std::string path =
      part_ < 0 ? base_ + ".pftrace" : base_ + "." + std::to_string(part_) + ".pftrace";
  std::string err;
  if (!w_.open(path, snapshot_ns_, &err)) return fail(err);
  w_.process_ordering_explicit();
  preamble_bytes_ = w_.bytes();
  return true;
}

bool Builder::finish_file() {
  if (!w_.is_open()) return true;
  const std::string path =
      part_ < 0 ? base_ + ".pftrace" : base_ + "." + std::to_string(part_) + ".pftrace";
  std::string err;
  if (!w_.close(&err)) return fail(err);
  files_->push_back(path);
  return true;
}

// Starts the next part when `bound` more bytes would not fit in the current
// file (a file holding nothing but its preamble is never left: content larger
// than max_file_bytes still goes somewhere).
bool Builder::next_part(size_t bound) {
  if (!w_.is_open()) return false;
  if (w_.bytes() + bound <= opt_.max_file_bytes || w_.bytes() <= preamble_bytes_) return true;
  std::string err;
  if (!w_.close(&err)) return fail(err);
  if (part_ < 0) {
    const std::string from = base_ + ".pftrace", to = base_ + ".0.pftrace";
    if (std::rename(from.c_str(), to.c_str()) != 0)
      return fail("cannot rename " + from + " to " + to + ": " + std::strerror(errno));
    files_->push_back(to);
    part_ = 1;
  } else {
    files_->push_back(base_ + "." + std::to_string(part_) + ".pftrace");
    ++part_;
  }
  return open_part();
}

uint32_t Builder::link_index(const OplogReader& rd, uint32_t id) {
  if (id < link_by_id_.size() && link_by_id_[id] != kNoLink) return link_by_id_[id];
  if (id >= kDenseIds) {
    const auto it = link_by_big_id_.find(id);
    if (it != link_by_big_id_.end()) return it->second;
  }
  std::string name;
  const auto l = rd.links().find(id);
  if (l != rd.links().end()) {
    name = l->second.local + " -> " + l->second.remote;
  } else {
    name = "link " + std::to_string(id) + " (not in the oplog's link table)";
  }
  uint32_t idx;
  const auto n = link_by_name_.find(name);
  if (n != link_by_name_.end()) {
    idx = n->second;
  } else {
    idx = static_cast<uint32_t>(links_.size());
    links_.emplace_back();
    Link& k = links_.back();
    k.name = name;
    k.uuid = next_uuid_++;
    k.bound = 2 * (name.size() + kDescriptorBytes);
    link_by_name_.emplace(name, idx);
    ++stats_->link_tracks;
  }
  if (id < kDenseIds) {
    if (id >= link_by_id_.size()) link_by_id_.resize(id + 1, kNoLink);
    link_by_id_[id] = idx;
  } else {
    link_by_big_id_[id] = idx;
  }
  return idx;
}

// Lays one op out on the first free lane of its link and writes it.
bool Builder::place(RankTrack& r, const Pending& p) {
  if (p.start < watermark_) {
    ++stats_->late_ops;
  } else {
    watermark_ = p.start;
  }
  Link& l = links_[p.link];
  const size_t n = l.lane_end.size();
  size_t lane = n;
  for (size_t i = 0; i < n; ++i) {
    if (l.lane_end[i] <= p.start) {
      lane = i;
      break;
    }
  }
  if (lane == n) {
    if (n >= kPerfettoMaxLanes) {
      ++l.dropped;
      ++r.dropped;
      ++stats_->overlap_dropped;
      return true;
    }
    l.lane_end.push_back(p.end);
    l.lane_uuid.push_back(n == 0 ? l.uuid : next_uuid_++);
    l.lane_gen.push_back(0);
    if (n > 0) ++stats_->lane_tracks;
    stats_->max_lanes = std::max<uint32_t>(stats_->max_lanes, static_cast<uint32_t>(n + 1));
  }
  l.lane_end[lane] = p.end;
  if (p.end > r.last_ts) r.last_ts = p.end;

  if (!room(kOpBytes + l.bound + r.name.size() + kDescriptorBytes)) return false;
  const uint64_t track = need_lane(r, l, lane);
  const DebugArg args[2] = {DebugArg::Uint(arg_iid(0), p.bytes),
                            DebugArg::Bool(arg_iid(1), p.error != 0)};
  w_.slice_begin(to_u64_ts(p.start), track, op_iid(p.kind, false), args, 2);
  w_.slice_end(to_u64_ts(p.end), track);
  ++stats_->slices;
  if (p.error) {
    // At the op's end, after its END: not nested in it, and before any later
    // op of the lane (which starts at or after this end).
    w_.instant(to_u64_ts(p.end), track, op_iid(p.kind, true), args, 1);
    ++stats_->error_instants;
  }
  return true;
}

bool Builder::write_ops(RankTrack& r) {
  const Rank& rank = *r.rank;
  OplogReader rd;
  std::string err;
  if (!rd.open(rank.oplog_path, &err) || !rd.scan(&err)) {
    warn("per-op timeline skipped: " + err);
    return true;
  }
  // Op names: the file's own (it may know kinds this build does not).
  op_names_.assign(256, std::string());
  const std::vector<std::string>& names = rd.header().op_names;
  for (size_t k = 0; k < 256; ++k) {
    std::string s = k < names.size() ? names[k] : "";
    if (s.empty()) s = op_name(static_cast<OpKind>(k));
    if (s.empty() || s == "?") s = "op kind " + std::to_string(k);
    op_names_[k] = s;
  }
  std::fill(std::begin(op_gen_), std::end(op_gen_), 0u);

  // Without a calibration the ticks are taken as ns (the identity). The
  // reader has checked the calibration's range; each op's times are checked
  // by mono_ns_checked, and wall offsets are differences of checked times.
  const OplogCalib cal = rd.has_calib() ? rd.calib() : OplogCalib();
  if (rd.has_calib()) {
    // No wall anchor from the rank's report: use the oplog's own.
    if (rank.start_wall_ns == 0 && cal.real0_ns != 0)
      r.wall_offset = static_cast<int64_t>(cal.real0_ns) - static_cast<int64_t>(cal.mono0_ns);
  } else if (rd.ops_read() > 0) {
    warn(rank.oplog_path + " has no clock calibration: its times are taken as ns");
  }

  links_.clear();
  link_by_name_.clear();
  link_by_id_.assign(
      std::min<size_t>(rd.links().empty() ? 0 : rd.links().rbegin()->first + 1, kDenseIds),
      kNoLink);
  link_by_big_id_.clear();
  watermark_ = std::numeric_limits<int64_t>::min();
  window_.reset();
  for (const auto& kv : rd.links()) link_index(rd, kv.first);

  mark_tracks_.clear();
  bool ok = true;
  const auto on_marks = [&](const oplog::OpEntry* e, size_t n) {
    for (size_t i = 0; ok && i < n; ++i) ok = write_mark(r, rd, cal, e[i]);
  };
  const bool read_ok = rd.read_all(
      [&](const oplog::OpEntry* e, size_t n) {
        if (!ok) return;
        for (size_t i = 0; i < n; ++i) {
          const oplog::OpEntry& op = e[i];
          Pending p;
          if (!cal.mono_ns_checked(op.start_ticks, &p.start) ||
              !cal.mono_ns_checked(op.end_ticks, &p.end)) {
            ++stats_->bad_times;  // not a time on any clock: not drawn
            continue;
          }
          p.start += r.wall_offset;
          p.end += r.wall_offset;
          if (p.end < p.start) {
            p.end = p.start;
            ++stats_->bad_times;
          }
          p.bytes = op.bytes;
          p.link = link_index(rd, op.link_id);
          p.kind = op.kind;
          p.error = op.error;
          if (window_.full() && !place(r, window_.pop())) {
            ok = false;
            return;
          }
          window_.push(p, op.tid);
        }
      },
      on_marks, &err);
  while (ok && !window_.empty()) ok = place(r, window_.pop());
  while (!window_.empty()) window_.pop();
  if (!ok) return false;
  if (!read_ok) warn("per-op timeline cut short: " + err);
  if (rd.truncated())
    warn(rank.oplog_path + " is cut short" +
         (rd.stop_reason().empty() ? "" : " (" + rd.stop_reason() + ")") +
         ": its ops up to the damage are shown");
  return true;
}

// A mark of the rank's timeline (oplog version 2): the application's phases
// as slices and its marks as instants on a track per marking thread ("marks
// tid N"), the capture window's changes as instants on the rank's own track.
bool Builder::write_mark(RankTrack& r, const OplogReader& rd, const OplogCalib& cal,
                         const oplog::OpEntry& m) {
  int64_t t = 0;
  if (!cal.mono_ns_checked(m.start_ticks, &t)) {
    ++stats_->bad_times;
    return true;
  }
  const uint64_t ts = to_u64_ts(t + r.wall_offset);
  const std::string& name = rd.mark_name(m.link_id);
  if (!room(kEventBytes + name.size() + r.name.size() + 2 * kDescriptorBytes)) return false;
  if (m.kind == oplog::kCaptureOn || m.kind == oplog::kCaptureOff) {
    need_process(r);
    w_.instant_named(ts, r.uuid,
                     m.kind == oplog::kCaptureOn ? "timeline capture on" : "timeline capture off",
                     nullptr, 0);
    ++stats_->marks;
    return true;
  }
  MarkTrack* mt = nullptr;
  for (MarkTrack& k : mark_tracks_)
    if (k.tid == m.tid) mt = &k;
  if (!mt) {
    mark_tracks_.push_back(MarkTrack{m.tid, next_uuid_++, 0, 0});
    mt = &mark_tracks_.back();
  }
  need_process(r);
  if (mt->gen != w_.generation()) {
    w_.child_track(mt->uuid, r.uuid, "marks tid " + std::to_string(m.tid), -2, false);
    mt->gen = w_.generation();
  }
  switch (m.kind) {
    case oplog::kMarkInstant:
      w_.instant_named(ts, mt->uuid, name.empty() ? "mark" : name, nullptr, 0);
      break;
    case oplog::kPhaseBegin:
      w_.slice_begin(ts, mt->uuid, w_.event_name(name.empty() ? "phase" : name), nullptr, 0);
      ++mt->depth;
      break;
    case oplog::kPhaseEnd:
      if (mt->depth == 0) return true;  // an end without its begin
      w_.slice_end(ts, mt->uuid);
      --mt->depth;
      break;
    default:
      return true;  // a kind from a newer writer
  }
  ++stats_->marks;
  return true;
}

bool Builder::write_stalls(RankTrack& r) {
  const auto it = stalls_by_rank_.find(r.rank->host + '\n' + r.rank->rank);
  if (it == stalls_by_rank_.end()) return true;
  const double min_ns = opt_.long_gap_ms * 1e6;
  for (const Stall* s : it->second) {
    if (s->pid != 0 && r.rank->pid != 0 && s->pid != r.rank->pid) continue;  // another process
    if (!(s->cq.max_gap_ns >= min_ns) || s->cq.max_gap_ns <= 0) continue;
    uint64_t ts = s->end_wall_ns;
    if (ts == 0 && r.rank->start_wall_ns != 0)
      ts = r.rank->start_wall_ns + static_cast<uint64_t>(std::llround(s->cq.max_gap_end_s * 1e9));
    if (ts == 0) continue;  // no wall-clock time to put it at
    char name[96];
    std::snprintf(name, sizeof(name), "CQ#%u poll gap %.3f ms", s->cq.id, s->cq.max_gap_ns / 1e6);
    if (!room(kEventBytes + r.name.size() + kDescriptorBytes)) return false;
    const uint64_t track = need_gap_track(r);
    const DebugArg args[4] = {DebugArg::Double(arg_iid(2), s->cq.max_gap_ns / 1e6),
                              DebugArg::Uint(arg_iid(3), s->cq.polls),
                              DebugArg::Uint(arg_iid(4), s->cq.id),
                              DebugArg::String(arg_iid(5), s->cause.verdict)};
    // An explained stall: the kernel's intervals inside it flow into it.
    const uint64_t flow = stall_flow_id(*s);
    Flows flows;
    if (s->has_cause) {
      flows.ends = &flow;
      flows.nends = 1;
    }
    w_.instant_named(ts, track, name, args, s->has_cause ? 4 : 3, flows);
    ++stats_->stall_instants;
  }
  return true;
}

bool Builder::write_counters(RankTrack& r) {
  const Rank& rank = *r.rank;
  CounterSeries cs;
  std::string err;
  if (!read_counter_csv(rank.counters_path, &cs, &err)) {
    warn("counters skipped: " + err);
    return true;
  }
  std::vector<CounterColumn> cols;
  for (size_t c = 2; c < cs.columns.size(); ++c) {
    const std::string& name = cs.columns[c];
    const size_t colon = name.rfind(':');
    if (colon != std::string::npos &&
        name.compare(colon + 1, std::string::npos, "telemetry_wall_ns") == 0)
      continue;  // the stamp of the sample, not a counter
    CounterColumn col;
    col.index = c;
    col.cumulative =
        !(contains(name, "in_use") || contains(name, "max_") || contains(name, "status"));
    col.uuid = next_uuid_++;
    cols.push_back(col);
  }
  if (cols.empty() || cs.rows.empty()) return true;
  stats_->counter_tracks += cols.size();

  // mono -> wall: the rank's offset, or the file's own (wall_ns - t_mono_ns).
  int64_t offset = r.wall_offset;
  if (rank.start_wall_ns == 0)
    offset = static_cast<int64_t>(cs.rows[0][1]) - static_cast<int64_t>(cs.rows[0][0]);

  for (const std::vector<uint64_t>& row : cs.rows) {
    const uint64_t t = row[0];
    for (CounterColumn& col : cols) {
      const uint64_t v = row[col.index];
      int64_t ts;
      bool is_rate = false;
      double rate = 0;
      if (col.cumulative) {
        if (!col.has_prev) {
          col.has_prev = true;
          col.prev_t = t;
          col.prev_v = v;
          continue;
        }
        if (v == 0 && col.prev_v > 0) continue;   // unreadable in this sample (written as 0)
        if (v < col.prev_v || t <= col.prev_t) {  // counter reset, or time not moving: new base
          col.prev_t = t;
          col.prev_v = v;
          continue;
        }
        rate = static_cast<double>(v - col.prev_v) * 1e9 / static_cast<double>(t - col.prev_t);
        // The rate of [prev, t] drawn from prev on (Perfetto holds a counter's
        // value until its next one), lined up with the ops that caused it.
        ts = static_cast<int64_t>(col.prev_t) + offset;
        is_rate = true;
        col.prev_t = t;
        col.prev_v = v;
      } else {
        ts = static_cast<int64_t>(t) + offset;
      }
      const std::string& name = cs.columns[col.index];
      if (!room(kOpBytes + name.size() + r.name.size() + 2 * kDescriptorBytes)) return false;
      need_process(r);
      if (col.gen != w_.generation()) {
        if (col.cumulative) {
          w_.counter_track(col.uuid, r.uuid, name, "/s",
                           "Per-second rate of the cumulative counter " + name +
                               " between consecutive samples, drawn from the first of the two");
        } else {
          w_.counter_track(col.uuid, r.uuid, name, "", "Sampled value of " + name);
        }
        col.gen = w_.generation();
      }
      if (is_rate) {
        w_.counter_double(to_u64_ts(ts), col.uuid, rate);
      } else {
        const int64_t iv = v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                               ? std::numeric_limits<int64_t>::max()
                               : static_cast<int64_t>(v);
        w_.counter_int(to_u64_ts(ts), col.uuid, iv);
      }
      ++stats_->counter_values;
    }
  }
  return true;
}

// One counter track per NIC of the rank: the bytes of each time window over
// the window's length, in GB/s, held from the window's start (0 where no
// window had activity).
bool Builder::write_nic_windows(RankTrack& r) {
  const Rank& rank = *r.rank;
  for (const NicReport& n : rank.report.nics) {
    if (n.windows.empty() || n.window_ns <= 0) continue;
    const uint64_t uuid = next_uuid_++;
    uint32_t gen = 0;
    const std::string name = "NIC " + n.domain + " " + short_addrs(n.locals, 1) + " GB/s";
    ++stats_->nic_tracks;
    const auto at = [&](uint64_t index) {
      return static_cast<int64_t>(rank.start_mono_ns) +
             static_cast<int64_t>(static_cast<double>(index) * n.window_ns) + r.wall_offset;
    };
    for (size_t i = 0; i < n.windows.size(); ++i) {
      const NicWindow& w = n.windows[i];
      if (!room(2 * kOpBytes + name.size() + r.name.size() + 2 * kDescriptorBytes)) return false;
      need_process(r);
      if (gen != w_.generation()) {
        w_.counter_track(uuid, r.uuid, name, "GB/s",
                         "Bytes of the NIC's sends, writes, reads and atomics completed in each "
                         "time window, spread over their busy periods, over the window's length");
        gen = w_.generation();
      }
      w_.counter_double(to_u64_ts(at(w.index)), uuid, static_cast<double>(w.bytes) / n.window_ns);
      ++stats_->nic_values;
      const bool next_adjacent = i + 1 < n.windows.size() && n.windows[i + 1].index == w.index + 1;
      if (!next_adjacent) {
        w_.counter_double(to_u64_ts(at(w.index + 1)), uuid, 0.0);
        ++stats_->nic_values;
      }
    }
  }
  return true;
}

// The node's kernel tracks, on the clock of the node's ranks (their monotonic
// offset; the log's own anchor where the node has no rank).
bool Builder::write_kernel(const KernelNode& n, int32_t order,
                           const std::vector<RankTrack>& ranks) {
  KernelTraceContext ctx;
  ctx.w = &w_;
  ctx.room = [this](size_t bound) { return room(bound); };
  ctx.next_uuid = &next_uuid_;
  ctx.pid = kSyntheticPidBase / 2 + order;
  ctx.order = order;
  ctx.wall_offset = static_cast<int64_t>(n.meta.real_ns) - static_cast<int64_t>(n.meta.mono_ns);
  for (const RankTrack& r : ranks)
    if (r.rank->host == n.host && r.rank->start_wall_ns) {
      ctx.wall_offset = r.wall_offset;
      break;
    }
  KernelTraceStats ks;
  const bool ok = write_kernel_tracks(n, job_, ctx, &ks, &stats_->warnings);
  stats_->kernel_tracks += ks.tracks;
  stats_->kernel_slices += ks.slices;
  stats_->kernel_instants += ks.instants;
  stats_->kernel_flows += ks.flows;
  return ok;
}

bool Builder::write_rank(RankTrack& r) {
  if (!room(r.name.size() + kDescriptorBytes)) return false;
  need_process(r);
  ++stats_->ranks;
  if (!r.rank->oplog_path.empty() && !write_ops(r)) return false;
  if (!write_stalls(r)) return false;
  if (!r.rank->counters_path.empty() && !write_counters(r)) return false;
  if (!write_nic_windows(r)) return false;
  if (r.dropped > 0) {
    // Say on the rank's own track that ops are missing from the picture.
    if (!room(kEventBytes + r.name.size() + kDescriptorBytes)) return false;
    need_process(r);
    const std::string msg = std::to_string(r.dropped) + " ops not drawn: more than " +
                            std::to_string(kPerfettoMaxLanes) +
                            " overlapping on one link (see the link tables)";
    w_.instant_named(to_u64_ts(r.last_ts), r.uuid, msg, nullptr, 0);
  }
  return true;
}

bool Builder::run(std::string* error) {
  if (dir_.empty()) dir_ = ".";
  if (::mkdir(dir_.c_str(), 0755) != 0 && errno != EEXIST) {
    *error = "cannot create " + dir_ + ": " + std::strerror(errno);
    return false;
  }
  for (const Stall& s : job_.stalls) stalls_by_rank_[s.host + '\n' + s.rank].push_back(&s);

  std::vector<RankTrack> ranks(job_.ranks.size());
  uint64_t first_wall = job_.first_wall_ns;
  for (size_t i = 0; i < job_.ranks.size(); ++i) {
    const Rank& rk = job_.ranks[i];
    RankTrack& r = ranks[i];
    r.rank = &rk;
    r.name = rank_label(rk);
    r.pid = rk.pid > 0 && rk.pid <= std::numeric_limits<int32_t>::max()
                ? static_cast<int32_t>(rk.pid)
                : kSyntheticPidBase + static_cast<int32_t>(i);
    r.order = static_cast<int32_t>(i);
    r.uuid = next_uuid_++;
    r.gap_uuid = next_uuid_++;
    r.wall_offset = rk.wall_offset_ns();
    r.last_ts = static_cast<int64_t>(rk.start_wall_ns);
    if (rk.start_wall_ns != 0 && (first_wall == 0 || rk.start_wall_ns < first_wall))
      first_wall = rk.start_wall_ns;
  }
  // The clock snapshot's instant: any will do (both clocks are equal), the job's start reads best.
  const uint64_t snap = first_wall != 0 ? first_wall : 1;

  const std::string prefix = dir_ + (dir_.back() == '/' ? "" : "/") + "trace";
  bool ok = true;
  if (!opt_.split_per_rank) {
    ok = open_base(prefix, snap);
    for (size_t i = 0; ok && i < ranks.size(); ++i) ok = write_rank(ranks[i]);
    for (size_t i = 0; ok && i < job_.kernel.size(); ++i)
      ok = write_kernel(job_.kernel[i], static_cast<int32_t>(ranks.size() + i), ranks);
    if (ok) ok = finish_file();
  } else {
    std::unordered_set<std::string> used;
    for (size_t i = 0; ok && i < ranks.size(); ++i) {
      const Rank& rk = *ranks[i].rank;
      std::string base = prefix + ".r" + file_token(rk.rank);
      if (used.count(base)) base += ".p" + std::to_string(rk.pid);
      for (int k = 2; used.count(base); ++k) base += "." + std::to_string(k);
      used.insert(base);
      ok = open_base(base, rk.start_wall_ns != 0 ? rk.start_wall_ns : snap);
      if (ok) ok = write_rank(ranks[i]);
      if (ok) ok = finish_file();
    }
    // Each node's kernel tracks in a file of their own.
    for (size_t i = 0; ok && i < job_.kernel.size(); ++i) {
      std::string base = prefix + ".kernel." + file_token(job_.kernel[i].host);
      for (int k = 2; used.count(base); ++k) base += "." + std::to_string(k);
      used.insert(base);
      ok = open_base(base, snap);
      if (ok) ok = write_kernel(job_.kernel[i], static_cast<int32_t>(ranks.size() + i), ranks);
      if (ok) ok = finish_file();
    }
  }
  if (!ok) {
    if (w_.is_open()) {
      std::string ignored;
      w_.close(&ignored);
    }
    *error = error_.empty() ? "writing the Perfetto trace failed" : error_;
    return false;
  }
  return true;
}

}  // namespace

bool write_perfetto_stats(const report::Job& job, const std::string& out_dir,
                          const PerfettoOptions& opt, std::vector<std::string>* files_written,
                          PerfettoStats* stats, std::string* error) {
  std::vector<std::string> files_local;
  PerfettoStats stats_local;
  std::string error_local;
  if (!files_written) files_written = &files_local;
  if (!stats) stats = &stats_local;
  if (!error) error = &error_local;
  files_written->clear();
  *stats = PerfettoStats();
  Builder b(job, out_dir, opt, files_written, stats);
  return b.run(error);
}

bool write_perfetto(const report::Job& job, const std::string& out_dir, const PerfettoOptions& opt,
                    std::vector<std::string>* files_written, std::string* error) {
  PerfettoStats stats;
  const bool ok = write_perfetto_stats(job, out_dir, opt, files_written, &stats, error);
  for (const std::string& w : stats.warnings)
    std::fprintf(stderr, "fabtrace: perfetto: %s\n", printable(w).c_str());
  if (stats.bad_times > 0)
    std::fprintf(stderr,
                 "fabtrace: perfetto: %llu ops with impossible times (ending before they start, "
                 "or beyond any clock)\n",
                 static_cast<unsigned long long>(stats.bad_times));
  if (stats.overlap_dropped > 0)
    std::fprintf(stderr,
                 "fabtrace: perfetto: %llu ops not drawn: more than %u overlapping on one link\n",
                 static_cast<unsigned long long>(stats.overlap_dropped), kPerfettoMaxLanes);
  return ok;
}

}  // namespace fabtrace::report
