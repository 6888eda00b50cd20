#include "preload/process_report.h"

#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "common/op_kinds.h"
#include "preload/names.h"

namespace fabtrace {

namespace {

// Every thread's cells of one (endpoint, peer, op, size), and every thread's
// polls of one CQ, summed.
using CellMapKey = std::tuple<const EpWrap*, fi_addr_t, int, uint64_t, bool>;
struct Folded {
  std::map<CellMapKey, Cell> cells;
  uint64_t cells_full = 0;
  std::vector<PollStats> polls = std::vector<PollStats>(kMaxCqs);
};

void merge_into(Cell& dst, const Cell& src) {
#define FABTRACE_OUTCOME_MERGE(m, words) dst.m += src.m;
  FABTRACE_OP_OUTCOMES(FABTRACE_OUTCOME_MERGE)
#undef FABTRACE_OUTCOME_MERGE
  dst.within_50us += src.within_50us;
  dst.ok_bytes += src.ok_bytes;
  dst.lat.merge(src.lat);
}

void fold(const Shard* s, Folded* f) {
  f->cells_full += s->cells_full;
  for (uint64_t i = 0; i < s->cap; ++i) {
    const Cell* c = s->slots[i];
    if (!c) continue;
    Cell& d = f->cells[CellMapKey{c->key.ep, c->key.peer, static_cast<int>(c->key.kind),
                                  c->key.bytes, c->key.size_unknown}];
    d.key = c->key;
    merge_into(d, *c);
  }
  for (uint32_t q = 0; q < kMaxCqs; ++q) {
    const PollStats& p = s->cq[q];
    PollStats& d = f->polls[q];
    d.polls += p.polls;
    for (int k = 0; k < PollStats::kClasses; ++k) d.gaps[k] += p.gaps[k];
    if (p.max_gap > d.max_gap) d.max_gap = p.max_gap, d.max_gap_end = p.max_gap_end;
  }
}

// Whether any op was seen at all.
bool any_activity(const Folded& f) {
  for (const auto& kv : f.cells) {
    const Cell& c = kv.second;
    uint64_t ops = c.lat.count();
#define FABTRACE_OUTCOME_ADD(m, words) ops += c.m;
    FABTRACE_OP_OUTCOMES(FABTRACE_OUTCOME_ADD)
#undef FABTRACE_OUTCOME_ADD
    if (ops) return true;
  }
  return false;
}

// One link's cells, by (op, size, size unknown).
using RowKey = std::tuple<int, uint64_t, bool>;
using LinkCells = std::map<std::pair<std::string, std::string>, std::map<RowKey, Cell>>;

// What a NIC's report sums over the cells of its endpoints: their local
// addresses, and the successful non-receive ops and their bytes.
struct NicTotals {
  std::set<std::string> locals;
  uint64_t ops = 0, bytes = 0;
};
using NicTotalsByDomain = std::map<const DomainWrap*, NicTotals>;

// Cells merged by their readable (local, remote) pair, then (op, size); the
// NIC totals on the way.
void by_link(const Folded& f, LinkCells* links, NicTotalsByDomain* nics) {
  for (const auto& kv : f.cells) {
    const Cell& c = kv.second;
    const std::string local = local_label(c.key.ep);
    Cell& d = (*links)[{local, remote_label(c.key.ep, c.key.peer)}]
                      [RowKey{static_cast<int>(c.key.kind), c.key.bytes, c.key.size_unknown}];
    d.key = c.key;
    merge_into(d, c);
    NicTotals& n = (*nics)[c.key.ep->domain];
    n.locals.insert(local);
    if (!op_is_recv(c.key.kind)) {
      n.ops += c.lat.count();
      n.bytes += c.ok_bytes;
    }
  }
}

OpRow op_row(const RowKey& k, const Cell& c, const Calibration& cal) {
  OpRow o;
  const OpKind kind = static_cast<OpKind>(std::get<0>(k));
  o.op = op_name(kind);
  o.bytes = std::get<1>(k);
  o.size_unknown = std::get<2>(k);
  o.recv = op_is_recv(kind);
  o.count = c.lat.count();
#define FABTRACE_OUTCOME_COPY(m, words) o.m = c.m;
  FABTRACE_OP_OUTCOMES(FABTRACE_OUTCOME_COPY)
#undef FABTRACE_OUTCOME_COPY
  o.within_50us = c.within_50us;
  if (o.count) {
    o.avg_ns = c.lat.mean() * cal.ns_per_tick;
    o.min_ns = cal.ticks_to_ns(c.lat.min());
    o.max_ns = cal.ticks_to_ns(c.lat.max());
    o.p50_ns = cal.ticks_to_ns(c.lat.percentile(0.50));
    o.p99_ns = cal.ticks_to_ns(c.lat.percentile(0.99));
    // No bandwidth from a size that is not what arrived.
    o.gbps = o.avg_ns > 0 && !o.size_unknown ? static_cast<double>(o.bytes) / o.avg_ns : 0;
  }
  return o;
}

// A NIC's time bins and busiest stretch, once every period is in them.
void nic_activity(const Calibration& cal, uint64_t start_ticks, const NicBusy& nic, NicReport* n) {
  const NicBins& b = nic.activity.bins;
  n->window_ns = cal.ticks_to_ns(b.width());
  for (uint32_t i = 0; i < b.used; ++i)
    if (b.busy[i] || b.bytes[i]) n->bins.push_back({i, cal.ticks_to_ns(b.busy[i]), b.bytes[i]});
  const NicPeak& p = nic.activity.peak;
  n->peak_limit_ns = cal.ticks_to_ns(p.span);
  if (p.best_bytes > 0 && p.best_busy > 0) {
    n->peak_bytes = static_cast<uint64_t>(p.best_bytes + 0.5);
    n->peak_busy_ns = cal.ticks_to_ns(p.best_busy);
    n->peak_span_ns = cal.ticks_to_ns(p.best_end - p.best_start);
    n->peak_gbps = p.best_bytes / n->peak_busy_ns;
    n->peak_start_s =
        p.best_start > start_ticks ? cal.ticks_to_ns(p.best_start - start_ticks) / 1e9 : 0;
  }
  n->unbinned_busy_ns = cal.ticks_to_ns(nic.unbinned_busy_ticks());
  n->unbinned_bytes = nic.unbinned_busy_bytes();
  // The periods in no bin (folded while another thread held the NIC) are
  // part of the whole-run figure: where they were faster than every bin,
  // they are the peak (not placed in time), so that peak >= achieved holds
  // with them too.
  if (n->unbinned_busy_ns > 0 && n->unbinned_bytes > 0) {
    const double rate = static_cast<double>(n->unbinned_bytes) / n->unbinned_busy_ns;
    if (rate > n->peak_gbps) {
      n->peak_gbps = rate;
      n->peak_bytes = n->unbinned_bytes;
      n->peak_busy_ns = n->unbinned_busy_ns;
      n->peak_span_ns = 0;  // not placed in time
      n->peak_start_s = 0;
    }
  }
}

NicReport nic_report(const ReportInputs& in, const DomainWrap* d, const NicTotals& t) {
  const Calibration& cal = in.cal;
  NicReport n;
  n.domain = d->name;
  n.locals.assign(t.locals.begin(), t.locals.end());
  n.ops = t.ops;
  n.bytes = t.bytes;
  n.busy_ns = cal.ticks_to_ns(d->nic.busy_ticks());
  n.gbps = n.busy_ns > 0 ? static_cast<double>(n.bytes) / n.busy_ns : 0;
  nic_activity(cal, in.start_ticks, d->nic, &n);
  return n;
}

CqReport cq_report(const ReportInputs& in, uint32_t id, const PollStats& p) {
  const Calibration& cal = in.cal;
  CqReport c;
  c.id = id;
  c.polls = p.polls;
  for (int k = 0; k < kGapClasses; ++k) c.gaps[k] = p.gaps[k];
  c.max_gap_ns = cal.ticks_to_ns(p.max_gap);
  c.max_gap_end_s =
      p.max_gap_end > in.start_ticks ? cal.ticks_to_ns(p.max_gap_end - in.start_ticks) / 1e9 : 0;
  return c;
}

void header(const ReportInputs& in, const Folded& f, ProcessReport* rep) {
  const Calibration& cal = in.cal;
  rep->host = in.host;
  rep->rank = in.rank;
  rep->pid = in.pid;
  rep->tsc = cal.tsc;
  rep->ns_per_tick = cal.ns_per_tick;
  rep->clock_residual_ns = cal.residual_ns;
  rep->clock_pairs = cal.pairs;
  rep->start_mono_ns = cal.to_mono_ns(in.start_ticks);
  rep->start_wall_ns = cal.real0_ns + (rep->start_mono_ns - cal.mono0_ns);
  rep->duration_s = cal.ticks_to_ns(in.now_ticks - in.start_ticks) / 1e9;
  rep->ring_slots = in.ring_slots;
  rep->ring_full = in.ring_full;
  rep->cells_full = f.cells_full;
  std::set<std::string> provs;
  for (const FabricWrap* fw : in.fabrics) provs.insert(fw->prov_name);
  for (const std::string& p : provs) rep->providers += (rep->providers.empty() ? "" : ",") + p;
}

}  // namespace

bool build_process_report(const ReportInputs& in, ProcessReport* rep) {
  Folded f;
  for (const Shard* s : in.shards) fold(s, &f);
  if (!any_activity(f)) return false;  // a process that did no fabric I/O writes nothing

  header(in, f, rep);
  LinkCells links;
  NicTotalsByDomain nics;
  by_link(f, &links, &nics);
  for (const auto& l : links) {
    LinkReport lr;
    lr.local = l.first.first;
    lr.remote = l.first.second;
    for (const auto& rc : l.second) lr.rows.push_back(op_row(rc.first, rc.second, in.cal));
    rep->links.push_back(std::move(lr));
  }
  // Every domain with ops: the report counts one NIC per domain.
  for (const DomainWrap* d : in.domains) {
    const auto it = nics.find(d);
    if (it != nics.end()) rep->nics.push_back(nic_report(in, d, it->second));
  }
  for (const CqWrap* q : in.cqs)
    if (q->id != kNoCq && f.polls[q->id].polls)
      rep->cqs.push_back(cq_report(in, q->id, f.polls[q->id]));
  return true;
}

}  // namespace fabtrace
