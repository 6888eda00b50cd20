#include "userspace/record/uprobes/uprobe_report.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "bpf/uprobe_ops.h"
#include "common/op_kinds.h"
#include "common/report_format.h"
#include "common/uprobe_stats.h"

namespace fabtrace {

static_assert(FT_UP_GAP_CLASSES == kGapClasses, "the uprobe CQ's gap classes are the preload's");

namespace {

// One op kind's row: completions timed, pending ones unfinished, those that
// by design get no completion untimed, refused calls as eagain (-FI_EAGAIN)
// or refused (another error), as the preload counts them.
OpRow op_row(const UprobeRow& u) {
  OpRow o;
  const ft_up_stats& s = u.s;
  o.op = uprobe_op_name(u.op);
  o.recv = u.op < static_cast<uint32_t>(kOpKindCount) && op_is_recv(static_cast<OpKind>(u.op));
  o.count = s.completions;
  o.unfinished = u.pending;
  o.untimed = s.untimed;
  o.eagain = s.eagain;
  o.refused = s.refused > s.eagain ? s.refused - s.eagain : 0;
  // Receives sized as posted: their CQ entries had no length.
  o.size_unknown = o.recv && u.posted;
  // The mean of the row's ops, paired, pending or untimed (a size class
  // holding one size: that size); a row of refusals alone: its calls'.
  const uint64_t ops = s.completions + u.pending + s.untimed;
  if (ops) o.bytes = (s.bytes + u.pending_bytes + s.untimed_bytes) / ops;
  if (s.completions) {
    o.avg_ns = static_cast<double>(s.lat_sum_ns) / static_cast<double>(s.completions);
    o.min_ns = static_cast<double>(s.lat_min_ns);
    o.max_ns = static_cast<double>(s.lat_max_ns);
    // Upper edges of log2 buckets: within a factor of two.
    o.p50_ns = static_cast<double>(uprobe_hist_quantile(s, 0.5));
    o.p99_ns = static_cast<double>(uprobe_hist_quantile(s, 0.99));
    if (!o.recv && o.avg_ns > 0) o.gbps = static_cast<double>(o.bytes) / o.avg_ns;
  }
  return o;
}

}  // namespace

ProcessReport uprobe_process_report(uint32_t pid, const std::vector<UprobeRow>& rows,
                                    const UprobeNames& names, const UprobeReportContext& ctx,
                                    const std::vector<UprobeCq>& cqs) {
  ProcessReport r;
  r.host = ctx.host;
  r.rank = ctx.rank.empty() ? "NA" : ctx.rank;
  r.pid = static_cast<long>(pid);
  r.providers = "uprobes";
  r.source = "uprobes";
  r.start_mono_ns = ctx.start_mono_ns;
  r.start_wall_ns = ctx.start_wall_ns;
  r.duration_s = ctx.duration_s;
  // (local, remote) -> (op, size class, sized as posted) -> the rows of that
  // op and size on links so named, summed.
  std::map<std::pair<std::string, std::string>,
           std::map<std::tuple<uint32_t, uint32_t, bool>, UprobeRow>>
      links;
  // The labels of each (endpoint, peer), made once for all its op kinds' rows
  // (a label may scan the process's names: uprobe_names.h).
  std::map<std::pair<uint64_t, uint64_t>, std::pair<std::string, std::string>> labels_of;
  for (const UprobeRow& u : rows) {
    if (u.pid != pid || u.op == FT_UP_OP_POLLS) continue;
    auto it = labels_of.find({u.ep, u.peer});
    if (it == labels_of.end())
      it = labels_of
               .emplace(std::make_pair(u.ep, u.peer),
                        std::make_pair(uprobe_local_label(pid, u.ep, names),
                                       uprobe_remote_label(pid, u.ep, u.peer, names)))
               .first;
    UprobeRow& sum = links[it->second][{u.op, u.size_class, u.posted}];
    sum.pid = pid;
    sum.op = u.op;
    sum.size_class = u.size_class;
    sum.posted = u.posted;
    sum.pending += u.pending;
    sum.pending_bytes += u.pending_bytes;
    add_uprobe_stats(&sum.s, u.s);
  }
  for (const auto& [labels, ops] : links) {
    LinkReport link;
    link.local = labels.first;
    link.remote = labels.second;
    for (const auto& kv : ops) {
      // A receive's row as posted holds its calls; it has something to say
      // only when some were refused or are pending, or completed without a
      // length (the ops themselves are in the rows of their arrived sizes).
      const UprobeRow& u = kv.second;
      if (u.posted && !u.s.completions && !u.pending && !u.s.refused && !u.s.untimed) continue;
      link.rows.push_back(op_row(u));
    }
    if (link.rows.empty()) continue;
    r.links.push_back(std::move(link));
  }
  // Its CQs in the order they were opened; those opened before the session
  // (opened 0) after them.
  std::vector<const UprobeCq*> mine;
  for (const UprobeCq& q : cqs)
    if (q.pid == pid && q.polls) mine.push_back(&q);
  std::sort(mine.begin(), mine.end(), [](const UprobeCq* a, const UprobeCq* b) {
    return std::make_tuple(a->opened == 0, a->opened, a->cq) <
           std::make_tuple(b->opened == 0, b->opened, b->cq);
  });
  for (const UprobeCq* q : mine) {
    CqReport c;
    c.id = static_cast<uint32_t>(r.cqs.size());
    c.polls = q->polls;
    for (int k = 0; k < kGapClasses; ++k) c.gaps[k] = q->gaps[k];
    c.max_gap_ns = static_cast<double>(q->max_gap_ns);
    c.max_gap_end_s = q->max_gap_end > ctx.start_mono_ns
                          ? static_cast<double>(q->max_gap_end - ctx.start_mono_ns) / 1e9
                          : 0;
    r.cqs.push_back(c);
  }
  return r;
}

}  // namespace fabtrace
