// At exit: merge every thread's shard into one ProcessReport and write it.
#include <unistd.h>

#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "common/clock.h"
#include "common/env.h"
#include "common/report_writer.h"
#include "preload/completion.h"
#include "preload/names.h"
#include "preload/outputs.h"
#include "preload/runtime.h"
#include "preload/stats.h"
#include "preload/timeline.h"

namespace fabtrace {

namespace {

using CellMapKey = std::tuple<const EpWrap*, fi_addr_t, int, uint64_t, bool>;

// Every thread's NIC busy periods go into their NICs' windows now; an interval
// that could not be added is named, never lost silently.
void add_pending_nic_intervals(Shard* tail) {
  uint64_t lost = 0;
  auto flush = [&lost](Shard* s) {
    lost += s->nic_lost;
    for (NicLocal& l : s->nic) {
      bool done = l.flush();
      for (int tries = 0; !done && tries < 100000; ++tries) done = l.flush();
      if (!done) lost += l.w.n;
    }
  };
  flush(tail);
  for (Shard* s = all_shards(); s; s = s->next) flush(s);
  // The periods still in each NIC's window go to its time windows now.
  std::vector<DomainWrap*> domains;
  {
    std::lock_guard<std::mutex> lk(runtime().mu);
    domains = runtime().domains;
  }
  for (DomainWrap* d : domains) {
    bool done = false;
    const auto bin = [d](PeriodWindow<NicBusy::kShared>& g) {
      g.bin_all();
      d->nic.activity.peak.finish();
    };
    for (int tries = 0; !done && tries < 100000; ++tries) done = d->nic.with_window(bin);
    if (!done) lost += d->nic.window.n;
  }
  if (lost)
    log_line(
        "warning: %llu NIC busy intervals not counted (their NIC was being updated by "
        "another thread); NIC bandwidth is an upper bound",
        static_cast<unsigned long long>(lost));
}

// A NIC's time windows and busiest stretch, once every period is in them.
void nic_activity(const Calibration& cal, const Runtime& rt, const NicBusy& nic, NicReport* n) {
  const NicBins& b = nic.activity.bins;
  n->window_ns = cal.ticks_to_ns(b.width());
  for (uint32_t i = 0; i < b.used; ++i)
    if (b.busy[i] || b.bytes[i]) n->windows.push_back({i, cal.ticks_to_ns(b.busy[i]), b.bytes[i]});
  const NicPeak& p = nic.activity.peak;
  n->peak_limit_ns = cal.ticks_to_ns(p.span);
  if (p.best_bytes > 0 && p.best_end > p.best_start) {
    n->peak_bytes = p.best_bytes;
    n->peak_span_ns = cal.ticks_to_ns(p.best_end - p.best_start);
    n->peak_gbps = static_cast<double>(p.best_bytes) / n->peak_span_ns;
    n->peak_start_s =
        p.best_start > rt.start_ticks ? cal.ticks_to_ns(p.best_start - rt.start_ticks) / 1e9 : 0;
  }
  n->unbinned_busy_ns = cal.ticks_to_ns(nic.unbinned_ticks);
  n->unbinned_bytes = nic.unbinned_bytes;
}

void merge_into(Cell& dst, const Cell& src) {
  dst.errors += src.errors;
  dst.eagain += src.eagain;
  dst.refused += src.refused;
  dst.untimed += src.untimed;
  dst.ring_full += src.ring_full;
  dst.unfinished += src.unfinished;
  dst.within_50us += src.within_50us;
  dst.ok_bytes += src.ok_bytes;
  dst.lat.merge(src.lat);
}

// The text report goes to its file, or to stderr when there is none; the JSON
// beside it. A file that cannot be created is one line, and never stops the
// rest (preload/outputs.h: a bad FABTRACE_DIR was already said once).
void open_outputs(const Runtime& rt, std::FILE** txt, std::FILE** json, std::string* txt_path) {
  *txt = stderr;
  *json = nullptr;
  const std::string base = runtime_output_path(OutputKind::kReportText);
  if (base.empty()) return;
  *txt_path = base;
  *txt = create_output(base, "the report goes to stderr");
  if (!*txt) {
    *txt = stderr;
    txt_path->clear();
  }
  if (rt.cfg.json)
    *json = create_output(runtime_output_path(OutputKind::kReportJson), "no JSON report");
}

// The Cassini counter series beside the report: same clock, same anchors.
void write_counters(const Runtime& rt, const ProcessReport& rep) {
  if (!rt.nic_sampler) return;
  rt.nic_sampler->stop();
  if (!rt.nic_sampler->samples()) return;
  const std::string path = runtime_output_path(OutputKind::kNicCounters);
  if (path.empty()) return;  // no files: said at the start (FABTRACE_DIR)
  if (rt.nic_sampler->write_csv(path, rep.host, rep.rank, rep.pid))
    log_line("%s rank %s NIC counters -> %s (%llu samples x %zu counters)", rep.host.c_str(),
             rep.rank.c_str(), path.c_str(),
             static_cast<unsigned long long>(rt.nic_sampler->samples()),
             rt.nic_sampler->labels().size());
  if (rt.nic_sampler->dropped())
    log_line("WARNING: %llu NIC counter samples dropped (memory cap); raise FABTRACE_NIC_MAX_MB",
             static_cast<unsigned long long>(rt.nic_sampler->dropped()));
}

}  // namespace

void write_report() {
  static std::atomic<bool> done{false};
  if (done.exchange(true)) return;
  Runtime& rt = runtime();
  if (!rt.pid || rt.pid != getpid()) return;
  if (rt.timeline_on) timeline().finish();
  // The counter series ends before the report's end: a sample taken while the
  // report is being folded and written would lie outside the run it describes.
  if (rt.nic_sampler) rt.nic_sampler->stop();

  const Calibration cal = clock_calibration();
  const uint64_t now = now_ticks();

  // Ops still in flight now will never be seen completing.
  auto tail = std::make_unique<Shard>();
  for (OpRecord* r = rt.ring.begin(); r != rt.ring.end(); ++r)
    if (r->busy.load(std::memory_order_acquire)) complete_never(tail.get(), r, now);
  add_pending_nic_intervals(tail.get());

  std::map<CellMapKey, Cell> cells;
  uint64_t cells_full = 0;
  std::vector<PollStats> polls(kMaxCqs);
  auto fold = [&](const Shard* s) {
    cells_full += s->cells_full;
    for (uint64_t i = 0; i < s->cap; ++i) {
      const Cell* c = s->slots[i];
      if (!c) continue;
      Cell& d = cells[CellMapKey{c->key.ep, c->key.peer, static_cast<int>(c->key.kind),
                                 c->key.bytes, c->key.size_unknown}];
      d.key = c->key;
      merge_into(d, *c);
    }
    for (uint32_t q = 0; q < kMaxCqs; ++q) {
      const PollStats& p = s->cq[q];
      PollStats& d = polls[q];
      d.polls += p.polls;
      for (int k = 0; k < PollStats::kClasses; ++k) d.gaps[k] += p.gaps[k];
      if (p.max_gap > d.max_gap) d.max_gap = p.max_gap, d.max_gap_end = p.max_gap_end;
    }
  };
  for (const Shard* s = all_shards(); s; s = s->next) fold(s);
  fold(tail.get());

  uint64_t activity = 0;
  for (auto& kv : cells) {
    const Cell& c = kv.second;
    activity +=
        c.lat.count() + c.errors + c.untimed + c.ring_full + c.unfinished + c.eagain + c.refused;
  }
  if (!activity) return;  // a process that did no fabric I/O writes nothing

  ProcessReport rep;
  rep.host = output_host();
  rep.rank = rt.rank.text;
  rep.pid = getpid();
  rep.tsc = cal.tsc;
  rep.ns_per_tick = cal.ns_per_tick;
  rep.clock_residual_ns = cal.residual_ns;
  rep.clock_pairs = cal.pairs;
  rep.start_mono_ns = cal.to_mono_ns(rt.start_ticks);
  rep.start_wall_ns = cal.real0_ns + (rep.start_mono_ns - cal.mono0_ns);
  rep.duration_s = cal.ticks_to_ns(now - rt.start_ticks) / 1e9;
  rep.ring_slots = rt.ring.size();
  rep.ring_full = rt.ring.full.load(std::memory_order_relaxed);
  rep.cells_full = cells_full;

  std::vector<FabricWrap*> fabrics;
  std::vector<DomainWrap*> domains;
  std::vector<CqWrap*> cqs;
  {
    std::lock_guard<std::mutex> lk(rt.mu);
    fabrics = rt.fabrics;
    domains = rt.domains;
    cqs = rt.cqs;
  }
  std::set<std::string> provs;
  for (const FabricWrap* f : fabrics) provs.insert(f->prov_name);
  for (const std::string& p : provs) rep.providers += (rep.providers.empty() ? "" : ",") + p;

  // Links: merge cells by their readable (local, remote) pair, then (op, size).
  using RowKey = std::tuple<int, uint64_t, bool>;  // op, bytes, size unknown
  std::map<std::pair<std::string, std::string>, std::map<RowKey, Cell>> links;
  std::map<const DomainWrap*, std::pair<std::set<std::string>, std::pair<uint64_t, uint64_t>>> nic;
  for (auto& kv : cells) {
    const Cell& c = kv.second;
    const std::string local = local_label(c.key.ep);
    Cell& d = links[{local, remote_label(c.key.ep, c.key.peer)}]
                   [RowKey{static_cast<int>(c.key.kind), c.key.bytes, c.key.size_unknown}];
    d.key = c.key;
    merge_into(d, c);
    auto& n = nic[c.key.ep->domain];
    n.first.insert(local);
    if (!op_is_recv(c.key.kind)) {
      n.second.first += c.lat.count();
      n.second.second += c.ok_bytes;
    }
  }
  for (auto& l : links) {
    LinkReport lr;
    lr.local = l.first.first;
    lr.remote = l.first.second;
    for (auto& rc : l.second) {
      const Cell& c = rc.second;
      OpRow o;
      const OpKind kind = static_cast<OpKind>(std::get<0>(rc.first));
      o.op = op_name(kind);
      o.bytes = std::get<1>(rc.first);
      o.size_unknown = std::get<2>(rc.first);
      o.recv = op_is_recv(kind);
      o.count = c.lat.count();
      o.errors = c.errors;
      o.untimed = c.untimed;
      o.ring_full = c.ring_full;
      o.unfinished = c.unfinished;
      o.eagain = c.eagain;
      o.refused = c.refused;
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
      lr.rows.push_back(o);
    }
    rep.links.push_back(std::move(lr));
  }
  for (const DomainWrap* d : domains) {
    auto it = nic.find(d);
    if (it == nic.end()) continue;
    NicReport n;
    n.domain = d->name;
    n.locals.assign(it->second.first.begin(), it->second.first.end());
    n.ops = it->second.second.first;
    n.bytes = it->second.second.second;
    n.busy_ns = cal.ticks_to_ns(d->nic.busy_ticks());
    n.gbps = n.busy_ns > 0 ? static_cast<double>(n.bytes) / n.busy_ns : 0;
    nic_activity(cal, rt, d->nic, &n);
    rep.nics.push_back(n);  // every domain with ops: the report counts one NIC per domain
  }
  for (const CqWrap* q : cqs) {
    if (q->id == kNoCq || !polls[q->id].polls) continue;
    const PollStats& p = polls[q->id];
    CqReport c;
    c.id = q->id;
    c.polls = p.polls;
    for (int k = 0; k < kGapClasses; ++k) c.gaps[k] = p.gaps[k];
    c.max_gap_ns = cal.ticks_to_ns(p.max_gap);
    c.max_gap_end_s =
        p.max_gap_end > rt.start_ticks ? cal.ticks_to_ns(p.max_gap_end - rt.start_ticks) / 1e9 : 0;
    rep.cqs.push_back(c);
  }

  std::FILE* txt = nullptr;
  std::FILE* json = nullptr;
  std::string txt_path;
  open_outputs(rt, &txt, &json, &txt_path);
  write_report_text(txt, rep);
  write_counters(rt, rep);
  if (txt != stderr) {
    std::fclose(txt);
    log_line("%s rank %s -> %s", rep.host.c_str(), rep.rank.c_str(), txt_path.c_str());
  } else {
    std::fflush(stderr);
  }
  if (json) {
    write_report_json(json, rep);
    std::fclose(json);
  }
}

}  // namespace fabtrace
