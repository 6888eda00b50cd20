// The collector's --uprobes part: the session's paired ops and CQ polls into
// the kernel log (whole at the end, the rows that changed every few seconds),
// and a per-rank report for each process without the preload.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include "bpf/uprobe_ops.h"
#include "common/clock.h"
#include "common/output_names.h"
#include "common/report_writer.h"
#include "userspace/record/collector.h"
#include "userspace/record/uprobes/uprobe_report.h"
#include "userspace/record/uprobes/uprobe_symbols.h"

namespace fabtrace {

// --uprobes: one FT_EV_UPROBE_OPS record per (process, op kind, endpoint,
// peer), one FT_EV_UPROBE_CQ per polled CQ, and every site with its hits as a symbol of class
// "uprobe_site" (addr = the file offset).
void Collector::write_uprobes() {
  uprobe_rows_ = session_.uprobes().rows();
  uprobe_cqs_ = session_.uprobes().cqs();
  uprobe_names_ = session_.uprobes().names();
  uprobe_lost_ = session_.uprobes().lost_counts();
  uprobe_hits_ = session_.uprobes().site_hits();
  const uint64_t now = mono_ns();
  for (const UprobeRow& r : uprobe_rows_) {
    const ft_uprobe_ops rec = r.record(now);
    on_record(&rec, sizeof(rec));
  }
  for (const UprobeCq& q : uprobe_cqs_) {
    const ft_uprobe_cq rec = q.record(now);
    on_record(&rec, sizeof(rec));
  }
  std::vector<KernelSymbol> syms;
  const std::vector<OpSite>& sites = session_.uprobes().sites();
  for (size_t i = 0; i < sites.size(); ++i) {
    const OpSite& s = sites[i];
    syms.push_back({s.offset,
                    s.what() + " " + s.path +
                        " hits=" + std::to_string(i < uprobe_hits_.size() ? uprobe_hits_[i] : 0),
                    kernel_log::kUprobeSiteClass});
  }
  log_.write_symbols(syms);
  write_uprobe_reports();
}

// --uprobes: each process without the preload that issued ops gets the
// per-rank report the preload would have written (uprobe_report.h), in the
// session's directory, so that `fabtrace report DIR` reads it.
void Collector::write_uprobe_reports() {
  UprobeReportContext ctx;
  ctx.host = host_name();
  const uint64_t now = mono_ns();
  ctx.start_mono_ns = start_ns_;
  ctx.start_wall_ns = real_ns() - (now - start_ns_);
  ctx.duration_s = static_cast<double>(now - start_ns_) / 1e9;
  std::set<uint32_t> pids;
  for (const UprobeRow& r : uprobe_rows_)
    if (r.op != FT_UP_OP_POLLS) pids.insert(r.pid);
  for (const uint32_t pid : pids) {
    // A process with the preload writes its own (found by a scan while the
    // session ran, or now if it still runs).
    if (preloaded_.count(static_cast<pid_t>(pid))) continue;
    ScannedProcess p;
    const bool seen = watch_.scanner().inspect(static_cast<pid_t>(pid), &p);
    if (seen && p.preload) continue;
    // Its rank as read when a scan first found it (sanitised: proc_scan.h).
    const auto first = ranks_.find(static_cast<pid_t>(pid));
    ctx.rank = first != ranks_.end() ? first->second : seen ? p.rank : "";
    const ProcessReport rep =
        uprobe_process_report(pid, uprobe_rows_, uprobe_names_, ctx, uprobe_cqs_);
    std::string err, name, note;
    std::FILE* f = dir_.create_stream(
        output_file_name(OutputKind::kReportJson, ctx.host, rep.rank, pid), &name, &note, &err);
    if (!note.empty()) std::fprintf(stderr, "fabtrace record: %s\n", note.c_str());
    if (f) {
      write_report_json(f, rep);
      const bool ok = std::fflush(f) == 0 && !std::ferror(f);
      const int e = errno;
      if (std::fclose(f) == 0 && ok) continue;
      err = "writing " + dir_.path_of(name) + " failed: " + std::strerror(ok ? errno : e);
    }
    ++outputs_lost_;
    write_error("uprobes report of pid " + std::to_string(pid) + ": " + err);
  }
}

void Collector::snapshot_uprobes() {
  const uint64_t now = mono_ns();
  std::vector<ft_uprobe_ops> changed;
  for (const UprobeRow& r : session_.uprobes().rows()) {
    const ft_uprobe_ops rec = r.record(now);
    auto& last = uprobe_snap_[{r.pid, r.op, r.ep, r.peer, r.size_class, r.posted}];
    if (last.h.kind && last.pending == rec.pending &&
        std::memcmp(&last.s, &rec.s, sizeof(rec.s)) == 0)
      continue;
    last = rec;
    changed.push_back(rec);
  }
  if (!changed.empty() &&
      !log_.write_uprobe_rows(changed.data(), changed.size(), sizeof(ft_uprobe_ops)))
    write_error(log_.error());
}

}  // namespace fabtrace
