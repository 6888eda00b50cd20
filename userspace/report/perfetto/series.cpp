// The Perfetto trace's series of one rank: its long CQ poll gaps as
// instants, its NIC counters (per-second rates of the cumulative ones) and
// its NICs' bandwidth over time as counter tracks.
#include <cmath>
#include <cstdint>
#include <string>

#include "common/counter_csv.h"
#include "userspace/report/perfetto/builder.h"
#include "userspace/report/text/formats.h"

namespace fabtrace::report::perfetto_build {

namespace {

bool contains(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

}  // namespace

bool Builder::write_stalls(RankTrack& r) {
  const auto it = stalls_by_rank_.find(r.rank->host() + '\n' + r.rank->rank());
  if (it == stalls_by_rank_.end()) return true;
  const double min_ns = opt_.long_gap_ms * 1e6;
  for (const Stall* s : it->second) {
    if (s->pid != 0 && r.rank->pid() != 0 && s->pid != r.rank->pid()) continue;  // another process
    if (!(s->cq.max_gap_ns >= min_ns) || s->cq.max_gap_ns <= 0) continue;
    uint64_t ts = s->end_wall_ns;
    if (ts == 0 && r.rank->start_wall_ns() != 0)
      ts = r.rank->start_wall_ns() + static_cast<uint64_t>(std::llround(s->cq.max_gap_end_s * 1e9));
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
        name.compare(colon + 1, std::string::npos, kTelemetryWallColumn) == 0)
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
  if (rank.start_wall_ns() == 0)
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

// One counter track per NIC of the rank: the bytes of each time bin over
// the bin's length, in GB/s, held from the bin's start (0 where no
// bin had activity).
bool Builder::write_nic_bins(RankTrack& r) {
  const Rank& rank = *r.rank;
  for (const NicReport& n : rank.report.nics) {
    if (n.bins.empty() || n.window_ns <= 0) continue;
    const uint64_t uuid = next_uuid_++;
    uint32_t gen = 0;
    const std::string name = "NIC " + n.domain + " " + short_addrs(n.locals, 1) + " GB/s";
    ++stats_->nic_tracks;
    const auto at = [&](uint64_t index) {
      return static_cast<int64_t>(rank.start_mono_ns()) +
             static_cast<int64_t>(static_cast<double>(index) * n.window_ns) + r.wall_offset;
    };
    for (size_t i = 0; i < n.bins.size(); ++i) {
      const NicTimeBin& w = n.bins[i];
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
      const bool next_adjacent = i + 1 < n.bins.size() && n.bins[i + 1].index == w.index + 1;
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

}  // namespace fabtrace::report::perfetto_build
