// The Perfetto trace's ops of one rank: its oplog streamed through the
// reorder window onto one track per link (lanes for overlapping ops), its
// errors as instants, and the application's marks on a track per thread.
#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "common/op_kinds.h"
#include "common/oplog_file.h"
#include "userspace/report/perfetto/builder.h"

namespace fabtrace::report::perfetto_build {

uint64_t message_flow_id(uint32_t i) { return (uint64_t{0xf10e} << 48) | i; }

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
  Flows flows;
  if (p.flow) {
    if (p.flow_end) {
      flows.ends = &p.flow;
      flows.nends = 1;
    } else {
      flows.ids = &p.flow;
      flows.n = 1;
    }
  }
  w_.slice_begin(to_u64_ts(p.start), track, op_iid(p.kind, false), args, 2, flows);
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
    if (rank.start_wall_ns() == 0 && cal.real0_ns != 0)
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
  reorder_.reset();
  for (const auto& kv : rd.links()) link_index(rd, kv.first);

  // The flows of the rank's matched messages (post_evidence.h): a send starts
  // its message's flow, the receive ends it. By the op's start on the rank's
  // CLOCK_MONOTONIC, as the matcher read it. Not in a trace split per rank: a
  // flow does not cross files (and with --mpi, the other processes writing
  // their ranks' files have no matching).
  const std::vector<Message>& msgs = job_.waits.messages;
  if (messages_by_rank_.empty() && !msgs.empty() && !opt_.split_per_rank) {
    messages_by_rank_.resize(job_.ranks.size());
    for (uint32_t i = 0; i < msgs.size(); ++i) {
      if (msgs[i].send_rank < job_.ranks.size()) messages_by_rank_[msgs[i].send_rank].push_back(i);
      if (msgs[i].recv_rank < job_.ranks.size() && msgs[i].recv_rank != msgs[i].send_rank)
        messages_by_rank_[msgs[i].recv_rank].push_back(i);
    }
  }
  std::unordered_map<int64_t, uint64_t> flow_out, flow_in;
  const size_t ri = static_cast<size_t>(&rank - job_.ranks.data());
  if (ri < messages_by_rank_.size())
    for (uint32_t i : messages_by_rank_[ri]) {
      if (msgs[i].send_rank == ri) flow_out.emplace(msgs[i].send_start, message_flow_id(i));
      if (msgs[i].recv_rank == ri) flow_in.emplace(msgs[i].recv_start, message_flow_id(i));
    }

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
          if (!flow_out.empty() || !flow_in.empty()) {
            if (const auto f = flow_out.find(p.start); f != flow_out.end()) {
              p.flow = f->second;
            } else if (const auto g = flow_in.find(p.start); g != flow_in.end()) {
              p.flow = g->second;
              p.flow_end = true;
            }
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
          if (reorder_.full() && !place(r, reorder_.pop())) {
            ok = false;
            return;
          }
          reorder_.push(p, op.tid);
        }
      },
      on_marks, &err);
  while (ok && !reorder_.empty()) ok = place(r, reorder_.pop());
  while (!reorder_.empty()) reorder_.pop();
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

}  // namespace fabtrace::report::perfetto_build
