// The Perfetto trace's builder (perfetto_trace.h), internal to its files:
// perfetto_trace.cpp (the run over ranks and nodes, the files and their
// parts), perfetto/ops.cpp (a rank's ops and marks from its oplog) and
// perfetto/series.cpp (its poll gaps, NIC counters and NIC bandwidth) and
// perfetto/waits.cpp (who waited on whom, and why).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/oplog_file.h"
#include "userspace/report/analysis/kernel_join.h"
#include "userspace/report/analysis/root_causes.h"
#include "userspace/report/job/job.h"
#include "userspace/report/perfetto/kernel.h"
#include "userspace/report/perfetto/options.h"
#include "userspace/report/perfetto/reorder.h"
#include "userspace/report/perfetto/writer.h"
#include "userspace/report/text/summary.h"

namespace fabtrace::report::perfetto_build {

// Generous upper bounds of what one op / instant / counter value adds to a file
// (packets without their descriptors), used to split files before max_file_bytes.
inline constexpr size_t kOpBytes = 256;
inline constexpr size_t kEventBytes = 512;
// Descriptor bytes beyond the names they carry.
inline constexpr size_t kDescriptorBytes = 64;
// The flow id of Job::waits.messages[i] (apart from the stalls' hashed ids).
uint64_t message_flow_id(uint32_t i);
// The flow id from Job::waits.list[i] to its root cause.
uint64_t wait_flow_id(size_t i);
// "rank R (host)": a rank's process track.
std::string rank_label(const Rank& r);

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
  uint64_t wait_uuid = 0;
  uint32_t wait_gen = 0;
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

// A wall-clock time as a trace timestamp (times before the epoch clamp to 0).
inline uint64_t to_u64_ts(int64_t ns) { return ns < 0 ? 0 : static_cast<uint64_t>(ns); }

class Builder {
 public:
  Builder(const Job& job, const std::string& out_dir, const PerfettoOptions& opt,
          std::vector<std::string>* files, PerfettoStats* stats)
      : job_(job),
        dir_(out_dir),
        opt_(opt),
        files_(files),
        stats_(stats),
        reorder_(kPerfettoReorderWindow) {}

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
  uint64_t need_wait_track(RankTrack& r) {
    need_process(r);
    if (r.wait_uuid == 0) r.wait_uuid = next_uuid_++;
    if (r.wait_gen != w_.generation()) {
      w_.child_track(r.wait_uuid, r.uuid, "waits (who waited on whom, and why)", -1, false);
      r.wait_gen = w_.generation();
    }
    return r.wait_uuid;
  }

  // ---- interned names (cached per file generation)
  uint64_t arg_iid(int which) {
    static const char* const kNames[] = {"bytes", "error", "gap_ms", "polls",
                                         "cq",    "why",   "root",   "waits"};
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
  void index_waits();
  bool write_waits(RankTrack& r);
  bool write_counters(RankTrack& r);
  bool write_nic_bins(RankTrack& r);
  bool write_kernel(const KernelNode& n, int32_t order, const std::vector<RankTrack>& ranks);
  void warn(const std::string& s) { stats_->warnings.push_back(s); }
  bool mine(size_t item) const { return !opt_.mine || opt_.mine(item); }
  // The files and warnings added since the last call are item's.
  void mark_item(size_t item) {
    stats_->file_items.resize(files_->size(), static_cast<uint32_t>(item));
    stats_->warning_items.resize(stats_->warnings.size(), static_cast<uint32_t>(item));
  }

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

  uint64_t arg_iid_[8] = {};
  uint32_t arg_gen_[8] = {};
  uint64_t op_iid_[512] = {};
  uint32_t op_gen_[512] = {};
  std::vector<std::string> op_names_;

  std::unordered_map<std::string, std::vector<const Stall*>> stalls_by_rank_;

  // Who waited on whom (index_waits; not in a trace split per rank, whose
  // files a flow cannot cross): per rank, its waits (indices into
  // Job::waits.list) and the delays of its that were the root of waits.
  struct RootMark {
    int64_t ts = 0;  // on the trace's clock: after the delay and every wait's start
    std::string cause;
    std::vector<uint64_t> flows;
  };
  WaitAnalysis waits_;
  std::vector<std::vector<size_t>> waits_by_rank_;
  std::vector<std::vector<RootMark>> roots_by_rank_;
  std::vector<int64_t> wait_to_trace_;  // per rank: job clock -> trace clock
  std::vector<std::string> rank_labels_;

  // Per rank (reset for each).
  std::vector<Link> links_;
  // Job::waits.messages by rank: each message's index under its sender and
  // its receiver (built on the first rank written).
  std::vector<std::vector<uint32_t>> messages_by_rank_;
  std::unordered_map<std::string, uint32_t> link_by_name_;
  std::vector<uint32_t> link_by_id_;  // oplog link id -> links_ index, kNoLink when unseen
  std::unordered_map<uint32_t, uint32_t> link_by_big_id_;
  ReorderBuffer reorder_;
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

}  // namespace fabtrace::report::perfetto_build
