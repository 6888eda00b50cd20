// At exit: gather every thread's shard and the wrapped objects, build the
// process's report from them (preload/process_report.h) and write it.
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "common/clock.h"
#include "common/env.h"
#include "common/report_writer.h"
#include "preload/completion.h"
#include "preload/outputs.h"
#include "preload/process_report.h"
#include "preload/runtime.h"
#include "preload/stats.h"
#include "preload/timeline.h"

namespace fabtrace {

namespace {

// How often the exit yields to a thread updating a NIC's shared ring (each yield
// lets it finish its few inserts; a forked child's copy of a parent thread's
// lock is never released, so the wait has an end).
constexpr int kExitYields = 1000;

// Every thread's NIC busy periods go into their NICs' totals now: into the
// NIC's shared ring, or its contended totals while another thread updates it
// (no wait, nothing lost). Then each NIC's shared ring goes to its time bins, once
// the thread updating it (a few inserts) is done: it is yielded to, for a
// while, and a NIC still held after that keeps its last periods in the totals
// only, which is said.
void add_pending_nic_intervals(Shard* tail) {
  for (NicLocal& l : tail->nic) l.flush_at_exit();
  for (Shard* s = all_shards(); s; s = s->next)
    for (NicLocal& l : s->nic) l.flush_at_exit();
  std::vector<DomainWrap*> domains;
  {
    std::lock_guard<std::mutex> lk(runtime().mu);
    domains = runtime().domains;
  }
  for (DomainWrap* d : domains) {
    const auto bin = [d](BusyPeriodRing<NicBusy::kShared>& g) {
      g.bin_all();
      d->nic.activity.finish();
    };
    bool done = d->nic.with_busy_ring(bin);
    for (int tries = 0; !done && tries < kExitYields; ++tries) {
      sched_yield();
      done = d->nic.with_busy_ring(bin);
    }
    if (!done)
      log_line(
          "warning: NIC %s was being updated by another thread at exit: its last busy periods "
          "are in its totals, not in its time windows",
          d->name.c_str());
  }
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

  ReportInputs in;
  in.cal = clock_calibration();
  const uint64_t now = now_ticks();
  // Ops still in flight now will never be seen completing.
  auto tail = std::make_unique<Shard>();
  for (OpRecord* r = rt.ring.begin(); r != rt.ring.end(); ++r)
    if (r->busy.load(std::memory_order_acquire)) complete_never(tail.get(), r, now);
  add_pending_nic_intervals(tail.get());

  in.start_ticks = rt.start_ticks;
  in.now_ticks = now;
  in.host = output_host();
  in.rank = rt.rank.text;
  in.pid = getpid();
  in.ring_slots = rt.ring.size();
  in.ring_full = rt.ring.full.load(std::memory_order_relaxed);
  for (const Shard* s = all_shards(); s; s = s->next) in.shards.push_back(s);
  in.shards.push_back(tail.get());
  {
    std::lock_guard<std::mutex> lk(rt.mu);
    in.fabrics.assign(rt.fabrics.begin(), rt.fabrics.end());
    in.domains.assign(rt.domains.begin(), rt.domains.end());
    in.cqs.assign(rt.cqs.begin(), rt.cqs.end());
  }
  ProcessReport rep;
  if (!build_process_report(in, &rep)) return;  // no fabric I/O: nothing written
  rep.job = rt.job;

  std::FILE* txt = nullptr;
  std::FILE* json = nullptr;
  std::string txt_path;
  open_outputs(rt, &txt, &json, &txt_path);
  write_report_text(txt, rep);
  write_counters(rt, rep);
  if (txt != stderr) {
    std::string why;
    if (close_output(txt, &why)) {
      log_line("%s rank %s -> %s", rep.host.c_str(), rep.rank.c_str(), txt_path.c_str());
    } else {
      // Never a path to a cut file as a success: said, and the text on stderr.
      log_line("warning: writing %s failed (%s): the report follows on stderr", txt_path.c_str(),
               why.c_str());
      write_report_text(stderr, rep);
    }
  }
  std::fflush(stderr);
  if (json) {
    write_report_json(json, rep);
    std::string why;
    if (!close_output(json, &why))
      log_line("warning: writing %s failed (%s): the JSON report is incomplete",
               runtime_output_path(OutputKind::kReportJson).c_str(), why.c_str());
  }
}

}  // namespace fabtrace
