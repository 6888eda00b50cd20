// The Perfetto trace's waits (root_causes.h), on a track of each rank, "waits
// (who waited on whom, and why)": a slice for each of its waits for a peer,
// named for the peer, with the root and its cause as args; and an instant
// "root cause: ..." at the end of each of its delays that was the root of
// waits, with a flow from each of those waits. The root's mark is an instant
// at the delay's end, not a slice over the delay: the trace processor links a
// flow's events in time order, and a delay may have begun before the wait
// did, but it ends after the wait began (it overlaps the wait).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>

#include "userspace/report/job/wait_states.h"
#include "userspace/report/perfetto/builder.h"

namespace fabtrace::report::perfetto_build {

uint64_t wait_flow_id(size_t i) {
  return (uint64_t{0xf10f} << 48) | (static_cast<uint64_t>(i) & ((uint64_t{1} << 48) - 1));
}

void Builder::index_waits() {
  const std::vector<Wait>& list = job_.waits.list;
  if (list.empty()) return;
  waits_ = analyze_waits(job_);
  const size_t n = job_.ranks.size();
  waits_by_rank_.assign(n, {});
  roots_by_rank_.assign(n, {});
  rank_labels_.resize(n);
  wait_to_trace_.assign(n, 0);
  const std::vector<int64_t> off = job_clock_offsets(job_);
  for (size_t r = 0; r < n; ++r) {
    rank_labels_[r] = rank_label(job_.ranks[r]);
    wait_to_trace_[r] = job_.ranks[r].wall_offset_ns() - off[r];
  }
  // Per root, its delays that caused waits: one mark for the delays of one
  // cause that overlap (one kernel record, or the time it was late to post
  // while several ranks waited on it), with the flows of every wait they caused.
  std::vector<std::vector<size_t>> caused(n);
  for (size_t i = 0; i < list.size() && i < waits_.waits.size(); ++i) {
    const Wait& w = list[i];
    if (w.rank >= n || w.on >= n) continue;
    waits_by_rank_[w.rank].push_back(i);
    const WaitRoot& wr = waits_.waits[i];
    if (wr.known && wr.root < n) caused[wr.root].push_back(i);
  }
  for (size_t r = 0; r < n; ++r) {
    std::vector<size_t>& v = caused[r];
    const auto root = [&](size_t i) -> const WaitRoot& { return waits_.waits[i]; };
    std::stable_sort(v.begin(), v.end(), [&](size_t a, size_t b) {
      return std::tie(root(a).cause, root(a).delay_start) <
             std::tie(root(b).cause, root(b).delay_start);
    });
    int64_t until = 0;
    for (size_t k = 0; k < v.size(); ++k) {
      const WaitRoot& wr = root(v[k]);
      std::vector<RootMark>& at = roots_by_rank_[r];
      if (k == 0 || wr.cause != root(v[k - 1]).cause || wr.delay_start > until) {
        at.emplace_back();
        at.back().ts = wr.delay_end + wait_to_trace_[r];
        at.back().cause = wr.cause;
        until = wr.delay_end;
      }
      RootMark& m = at.back();
      until = std::max(until, wr.delay_end);
      // After its delays' end and the start of every wait it ends (ranks'
      // clocks differ by their anchors).
      m.ts = std::max({m.ts, wr.delay_end + wait_to_trace_[r],
                       list[v[k]].start + wait_to_trace_[list[v[k]].rank] + 1});
      m.flows.push_back(wait_flow_id(v[k]));
    }
  }
  for (auto& v : waits_by_rank_)
    std::stable_sort(v.begin(), v.end(),
                     [&](size_t a, size_t b) { return list[a].start < list[b].start; });
}

bool Builder::write_waits(RankTrack& r) {
  const size_t ri = static_cast<size_t>(r.rank - job_.ranks.data());
  if (ri >= waits_by_rank_.size()) return true;
  const std::vector<Wait>& list = job_.waits.list;
  // A rank's waits end at distinct op events and begin after the last one
  // before: they do not overlap, except two ended by one CQ read (clipped).
  int64_t prev_end = std::numeric_limits<int64_t>::min();
  for (const size_t i : waits_by_rank_[ri]) {
    const Wait& w = list[i];
    const WaitRoot& wr = waits_.waits[i];
    const std::string& on = rank_labels_[w.on];
    const std::string& root = rank_labels_[wr.known ? wr.root : w.on];
    if (!room(kOpBytes + on.size() + root.size() + wr.cause.size() + r.name.size() +
              2 * kDescriptorBytes))
      return false;
    const uint64_t track = need_wait_track(r);
    const int64_t s = std::max(w.start + wait_to_trace_[ri], prev_end);
    const int64_t e = std::max(w.end + wait_to_trace_[ri], s);
    prev_end = e;
    const DebugArg args[3] = {DebugArg::Uint(arg_iid(0), w.bytes),
                              DebugArg::String(arg_iid(6), root),
                              DebugArg::String(arg_iid(5), wr.cause)};
    const uint64_t flow = wait_flow_id(i);
    Flows flows;
    if (wr.known) {
      flows.ids = &flow;
      flows.n = 1;
    }
    w_.slice_begin(to_u64_ts(s), track, w_.event_name("waiting for " + on), args, wr.known ? 3 : 1,
                   flows);
    w_.slice_end(to_u64_ts(e), track);
    ++stats_->wait_slices;
  }
  for (const RootMark& m : roots_by_rank_[ri]) {
    const std::string name = "root cause: " + m.cause;
    if (!room(kEventBytes + name.size() + 10 * m.flows.size() + r.name.size() +
              2 * kDescriptorBytes))
      return false;
    const uint64_t track = need_wait_track(r);
    const DebugArg args[1] = {DebugArg::Uint(arg_iid(7), m.flows.size())};
    Flows flows;
    flows.ends = m.flows.data();
    flows.nends = m.flows.size();
    w_.instant_named(to_u64_ts(m.ts), track, name, args, 1, flows);
    ++stats_->root_instants;
    stats_->wait_flows += m.flows.size();
  }
  return true;
}

}  // namespace fabtrace::report::perfetto_build
