#include "userspace/report/text/summary.h"
#include "userspace/report/analysis/kernel_join.h"
#include "userspace/report/text/formats.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <ctime>
#include <map>
#include <set>

#include "common/printable.h"
#include "common/report_writer.h"
#include "common/version.h"
#include "userspace/report/analysis/slowest_ops.h"
#include "userspace/report/job/identity.h"
#include "userspace/report/text/waits_text.h"

namespace fabtrace::report {

namespace {

std::string plural(uint64_t n, const char* one, const char* many) {
  return fmt_count(n) + " " + (n == 1 ? one : many);
}

// "node1 r0 10.0.0.1:5 -> 10.0.0.2:7 fi_tsend 4 KiB"
std::string row_name(const LinkRow& l) {
  return who(l.host(), l.rank(), l.pid()) + "  " + short_addr(l.local()) +
         (l.row.recv ? " <- " : " -> ") + short_addr(l.remote()) + "  " + printable(l.op()) + " " +
         fmt_row_size(l.row);
}

// Appends words to lines no wider than `width`, each continuation indented.
class Wrapper {
 public:
  Wrapper(std::string* out, std::string first, size_t width, const char* sep = "  ")
      : out_(out), line_(std::move(first)), indent_(line_.size()), width_(width), sep_(sep) {}
  void add(const std::string& word) {
    if (line_.size() > indent_ && line_.size() + sep_.size() + word.size() > width_) {
      *out_ += line_ + "\n";
      line_.assign(indent_, ' ');
    }
    if (line_.size() > indent_) line_ += sep_;
    line_ += word;
  }
  void done() { *out_ += line_ + "\n"; }

 private:
  std::string* out_;
  std::string line_;
  size_t indent_, width_;
  std::string sep_;
};

// The rows with a count that top_rows lists, in the job's order.
std::vector<const LinkRow*> problem_rows(const Job& job) {
  std::vector<const LinkRow*> rows;
  for (const LinkRow& l : job.links)
    if (l.row.untimed || l.row.errors || l.row.eagain || l.row.refused || l.row.unfinished)
      rows.push_back(&l);
  return rows;
}

// The rows with the largest value of a field, as "name xN" words; `from`:
// the job's rows with any of the problem counts, in the job's order.
template <typename Field>
void top_rows(const std::vector<const LinkRow*>& from, Field field, size_t n, Wrapper* w) {
  std::vector<const LinkRow*> rows;
  for (const LinkRow* l : from)
    if (field(l->row) > 0) rows.push_back(l);
  std::stable_sort(rows.begin(), rows.end(), [&](const LinkRow* a, const LinkRow* b) {
    return field(a->row) > field(b->row);
  });
  for (size_t i = 0; i < rows.size() && i < n; ++i)
    w->add(who(rows[i]->host(), rows[i]->rank(), rows[i]->pid()) + " " + printable(rows[i]->op()) +
           " " + fmt_row_size(rows[i]->row) + " x" + fmt_count(field(rows[i]->row)));
  if (rows.size() > n) w->add("(+" + std::to_string(rows.size() - n) + " more rows)");
}

}  // namespace

// ---- selections ---------------------------------------------------------------------

std::vector<const LinkRow*> slowest_links(const Job& job, size_t n) {
  // The first n only, kept in a heap as the rows go by (a million rows sorted
  // whole took longer than the rest of the summary; a list of them all was
  // 8 bytes a row); equals in the job's order, which is the rows' address
  // order, as a stable sort keeps them.
  const auto before = [](const LinkRow* a, const LinkRow* b) {
    if (a->row.p99_ns != b->row.p99_ns) return a->row.p99_ns > b->row.p99_ns;
    if (a->outlier_ratio != b->outlier_ratio) return a->outlier_ratio > b->outlier_ratio;
    return a < b;
  };
  std::vector<const LinkRow*> rows;  // a heap whose top is the last of the n kept
  if (n == 0) return rows;
  rows.reserve(n + 1);
  for (const LinkRow& l : job.links) {
    if (l.row.recv || l.row.count == 0) continue;
    if (rows.size() == n && !before(&l, rows.front())) continue;
    rows.push_back(&l);
    std::push_heap(rows.begin(), rows.end(), before);
    if (rows.size() > n) {
      std::pop_heap(rows.begin(), rows.end(), before);
      rows.pop_back();
    }
  }
  std::sort_heap(rows.begin(), rows.end(), before);
  return rows;
}

std::vector<const LinkRow*> outlier_links(const Job& job) {
  std::vector<const LinkRow*> rows;
  for (const LinkRow& l : job.links)
    if (!l.row.recv && l.row.count > 0 && l.outlier_ratio >= kOutlierRatio) rows.push_back(&l);
  std::stable_sort(rows.begin(), rows.end(), [](const LinkRow* a, const LinkRow* b) {
    return a->outlier_ratio > b->outlier_ratio;
  });
  return rows;
}

std::vector<const LinkRow*> posted_late_rows(const Job& job) {
  std::vector<const LinkRow*> out;
  for (const LinkRow& l : job.links)
    if (l.row.recv && l.posted().late > 0) out.push_back(&l);
  std::stable_sort(out.begin(), out.end(), [](const LinkRow* a, const LinkRow* b) {
    const double sa =
        static_cast<double>(a->posted().late) / static_cast<double>(a->posted().matched);
    const double sb =
        static_cast<double>(b->posted().late) / static_cast<double>(b->posted().matched);
    if (sa != sb) return sa > sb;
    return a->posted().late > b->posted().late;
  });
  return out;
}

double outlier_median_ns(const LinkRow& row) {
  return row.outlier_ratio > 0 ? row.row.p99_ns / row.outlier_ratio : 0.0;
}

// ---- the summary ------------------------------------------------------------------

namespace {

// What the job was, from the ranks' own records: the launcher's job, the
// command, the first start, the libfabric and providers, and a line when the
// ranks were written by different fabtrace versions.
std::string identity_lines(const Job& job, size_t width) {
  const JobIdentity id = job_identity(job);
  const size_t n = job.ranks.size();
  std::string s;
  const auto line = [&](const char* label, const std::string& text) {
    if (text.empty()) return;
    Wrapper w(&s, label, width, " ");
    for (size_t a = 0; a < text.size();) {
      size_t b = text.find(' ', a);
      if (b == std::string::npos) b = text.size();
      if (b > a) w.add(text.substr(a, b - a));
      a = b + 1;
    }
    w.done();
  };
  line("launcher  ", tally_text(id.jobs, n));
  line("command   ", tally_text(id.commands, n, 2));
  if (id.first_start_wall_ns)
    line("started   ", utc_time_text(id.first_start_wall_ns) + " (the first process)");
  std::string fi = tally_text(id.libfabrics, n);
  const std::string prov = tally_text(id.providers, n);
  if (!prov.empty()) fi += (fi.empty() ? "" : "; ") + std::string("providers ") + prov;
  line("libfabric ", fi);
  // One line, however long: a script greps for it.
  if (const std::string note = versions_note(id, n); !note.empty()) s += "versions  " + note + "\n";
  return s;
}

}  // namespace

std::string summary_text(const Job& job, const SummaryOptions& opt) {
  std::string s;
  constexpr size_t kWidth = 110;
  s += "fabtrace report" + (opt.dir.empty() ? std::string() : " of " + printable(opt.dir)) +
       ", by fabtrace " + version() + "\n";
  s += identity_lines(job, kWidth);

  // Job shape.
  const std::vector<std::string> hosts = job.hosts();
  std::set<std::pair<std::string, std::string>> devices;
  for (const NicRow& n : job.nics) devices.insert({n.host, n.nic.domain});
  {
    Wrapper w(&s, "job       ", kWidth, " ");
    std::string h = plural(hosts.size(), "node", "nodes");
    if (!hosts.empty() && hosts.size() <= 4) {
      h += " (";
      for (size_t i = 0; i < hosts.size(); ++i) h += (i ? ", " : "") + printable(hosts[i]);
      h += ")";
    }
    w.add(h + ",");
    w.add(plural(job.ranks.size(), "rank", "ranks") + ",");
    w.add(plural(job.nic_count(), "NIC", "NICs") + " (" +
          plural(devices.size(), "device", "devices") + "),");
    w.add(plural(job.distinct_links(), "link", "links"));
    w.done();
  }
  s += "          " + fmt_count(job.ops) + " ops (" + fmt_count(job.completed) + " completed), " +
       fmt_bytes(job.bytes) + " moved by sends, writes, reads and atomics\n";
  if (job.first_wall_ns) {
    s += "          " + printf_str("%.3f s", (job.last_wall_ns - job.first_wall_ns) / 1e9) +
         " on the wall clock: " + fmt_wall(job.first_wall_ns, true) + " .. " +
         fmt_wall(job.last_wall_ns, false) + "\n";
    if (hosts.size() > 1)
      s += "          (ranks of different nodes aligned by their monotonic/wall clock anchors)\n";
  }
  {
    std::map<std::string, uint64_t> by_op;
    {
      // Summed by the op name's number (a string compare per row was most of
      // this), then by name: names differ exactly when their numbers do.
      std::vector<uint64_t> by_id(interned_count(), 0);
      std::vector<const LinkRow*> first(by_id.size(), nullptr);
      for (const LinkRow& l : job.links) {
        by_id[l.op_id()] += l.row.issued();
        if (!first[l.op_id()]) first[l.op_id()] = &l;
      }
      for (size_t i = 0; i < by_id.size(); ++i)
        if (first[i]) by_op[first[i]->op()] = by_id[i];
    }
    std::vector<std::pair<std::string, uint64_t>> v(by_op.begin(), by_op.end());
    std::stable_sort(v.begin(), v.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    Wrapper w(&s, "ops       ", kWidth);
    for (const auto& kv : v) w.add(printable(kv.first) + " " + fmt_count(kv.second));
    if (v.empty()) w.add("(no data-path ops)");
    w.done();
  }
  if (job.untimed) {
    // Not a problem: these ops have no completion to time, or keep their context.
    Wrapper w(
        &s,
        "untimed   " + fmt_count(job.untimed) + " ops by design (no completion, or context kept): ",
        kWidth);
    top_rows(
        problem_rows(job), [](const OpStats& o) { return o.untimed; }, 3, &w);
    w.done();
  }

  // Slowest and outlier links.
  const auto slow = slowest_links(job, opt.top);
  if (!slow.empty()) {
    s += "slowest links by p99 (receives left out: their time includes waiting for the sender)\n";
    for (const LinkRow* l : slow) {
      s += "  " + row_name(*l) + "  p50 " + fmt_ns(l->row.p50_ns) + "  p99 " +
           fmt_ns(l->row.p99_ns) + "  " + plural(l->row.count, "op", "ops");
      if (l->outlier_ratio >= kOutlierRatio) s += printf_str("  [outlier x%.1f]", l->outlier_ratio);
      s += "\n";
    }
  }
  const auto outl = outlier_links(job);
  s += printf_str("outlier links (p99 >= %.0fx the median p99 of the same op and size): ",
                  kOutlierRatio);
  if (outl.empty()) {
    s += "none\n";
  } else {
    s += fmt_count(outl.size()) + "\n";
    for (size_t i = 0; i < outl.size() && i < opt.top; ++i)
      s += "  " + row_name(*outl[i]) + "  p99 " + fmt_ns(outl[i]->row.p99_ns) +
           printf_str(" = x%.1f", outl[i]->outlier_ratio) + " the median " +
           fmt_ns(outlier_median_ns(*outl[i])) + "\n";
    if (outl.size() > opt.top)
      s += "  (+" + std::to_string(outl.size() - opt.top) + " more in " + opt.links_table + ")\n";
  }

  // NIC bandwidth.
  std::vector<const NicRow*> nics;
  for (const NicRow& n : job.nics)
    if (n.nic.ops > 0) nics.push_back(&n);  // NICs that only received have no send bandwidth
  if (!nics.empty()) {
    s += "NIC bandwidth (receives left out): achieved = bytes / time with an op in flight over "
         "the run;\n"
         "  peak = the same over the fastest window of <= 10 ms (so peak >= achieved)\n";
    std::vector<const NicRow*> shown = nics;
    const size_t max_rows = std::max<size_t>(opt.top * 2, 4);
    if (nics.size() > max_rows) {
      // Many NICs: the fastest and the slowest ones.
      std::stable_sort(nics.begin(), nics.end(),
                       [](const NicRow* a, const NicRow* b) { return a->nic.gbps > b->nic.gbps; });
      shown.assign(nics.begin(), nics.begin() + static_cast<long>(max_rows / 2));
      shown.insert(shown.end(), nics.end() - static_cast<long>(max_rows / 2), nics.end());
    }
    for (size_t i = 0; i < shown.size(); ++i) {
      const NicRow* n = shown[i];
      if (nics.size() > max_rows && i == max_rows / 2)
        s += "  ... " + std::to_string(nics.size() - max_rows) + " more in nics.csv ...\n";
      s += "  " + who(n->host, n->rank, n->pid) + "  " + printable(n->nic.domain) + " " +
           short_addrs(n->nic.locals) + "  " + fmt_gbps(n->nic.gbps) + "  (" +
           plural(n->nic.ops, "op", "ops") + ", " + fmt_bytes(n->nic.bytes) + ", busy " +
           fmt_ns(n->nic.busy_ns) + ")";
      if (n->nic.peak_gbps > 0)
        s += "  peak " + fmt_gbps(n->nic.peak_gbps) + " (" + fmt_bytes(n->nic.peak_bytes) + ", " +
             fmt_ns(n->nic.peak_busy_ns) + " busy" +
             (n->nic.peak_span_ns > 0 ? " in " + fmt_ns(n->nic.peak_span_ns) +
                                            printf_str(" at t+%.3f s)", n->nic.peak_start_s)
                                      : std::string(" in no window)"));
      s += "\n";
    }
  }

  // CQ poll gaps.
  const WaitAnalysis waits = analyze_waits(job);
  if (!job.stalls.empty()) {
    s += "longest CQ poll gaps (a progress thread not polling: descheduled, blocked, or the app "
         "idle)\n";
    for (size_t i = 0; i < job.stalls.size() && i < opt.top; ++i) {
      const Stall& st = job.stalls[i];
      uint64_t long_gaps = 0;
      for (int k = kFirstLongGapClass; k < kGapClasses; ++k) long_gaps += st.cq.gaps[k];
      s += "  " + who(st.host, st.rank, st.pid) + " CQ#" + std::to_string(st.cq.id) + "  " +
           fmt_ns(st.cq.max_gap_ns) + "  ended " + fmt_wall(st.end_wall_ns, false) +
           printf_str(" (t+%.3f s)", st.end_job_s) + "  " + fmt_count(long_gaps) + " of " +
           plural(st.cq.polls, "poll", "polls") + " after a gap >= 1 ms\n";
      const std::string why = stall_why(st);
      if (!why.empty()) s += "      why: " + why + "\n";
      s += stall_wait_text(job, waits, i);
    }
  }
  s += root_causes_text(job, waits, opt.top);

  if (opt.slowest) s += slowest_ops_text(*opt.slowest, opt.top);

  // Receives posted late: a verdict only where both ranks' timelines pair
  // the receive with its send; otherwise "unknown", never "late".
  {
    const auto late = posted_late_rows(job);
    uint64_t matched = 0, rows_matched = 0, no_verdict_rows = 0, no_verdict = 0;
    for (const LinkRow& l : job.links) {
      if (!l.row.recv || l.row.count == 0) continue;
      matched += l.posted().matched;
      if (l.posted().matched) ++rows_matched;
      if (l.posted().matched < l.row.count) {
        ++no_verdict_rows;
        no_verdict += l.row.count - l.posted().matched;
      }
    }
    s += "receives posted late (after their send was issued, by both ranks' per-op timelines)";
    s += late.empty() ? (matched ? ": none of " + fmt_count(matched) + " matched receives\n"
                                 : ": unknown (no receive matched to its send)\n")
                      : "\n";
    for (size_t i = 0; i < late.size() && i < opt.top; ++i) {
      const LinkRow* l = late[i];
      s += "  " + row_name(*l) + "  " + fmt_count(l->posted().late) + " of " +
           fmt_count(l->posted().matched) + " matched posted late, median " +
           fmt_ns(l->posted().late_median_ns) + " after the send\n";
    }
    if (late.size() > opt.top)
      s += "  (+" + std::to_string(late.size() - opt.top) + " more rows)\n";
    if (no_verdict_rows) {
      std::string why;
      for (const LinkRow& l : job.links)
        if (l.row.recv && l.row.count && l.posted().matched < l.row.count && why.empty())
          why = l.posted().unknown();
      s += "  unknown for " + plural(no_verdict, "receive", "receives") + " in " +
           plural(no_verdict_rows, "row", "rows") + ", e.g.: " + why + "\n";
      s += "  (the evidence: FABTRACE_OPS_RANKS=all FABTRACE_OPS_MIN_BYTES=0 on every rank)\n";
    }
  }

  s += kernel_summary(job, opt.top, opt.links_table);

  // Problems.
  s += "problems\n";
  bool any = false;
  std::vector<const LinkRow*> with_problems;  // one pass over the rows for the lines below
  if (job.errors || job.eagain || job.refused || job.unfinished) with_problems = problem_rows(job);
  const auto line = [&](uint64_t n, const char* what, auto field) {
    if (!n) return;
    any = true;
    Wrapper w(&s, "  " + fmt_count(n) + " " + what + ": ", kWidth);
    top_rows(with_problems, field, 3, &w);
    w.done();
  };
  line(job.errors, "completions in error", [](const OpStats& o) { return o.errors; });
  line(job.eagain, "EAGAIN refusals (back-pressure)", [](const OpStats& o) { return o.eagain; });
  line(job.refused, "other refusals at issue", [](const OpStats& o) { return o.refused; });
  line(job.unfinished, "unfinished ops (never completed)",
       [](const OpStats& o) { return o.unfinished; });
  const auto per_rank = [&](uint64_t total, const char* what, auto field, const char* fix) {
    if (!total) return;
    any = true;
    Wrapper w(&s, "  " + fmt_count(total) + " " + what + ": ", kWidth);
    for (const Rank& r : job.ranks)
      if (field(r)) w.add(who(r.host(), r.rank(), r.pid()) + " x" + fmt_count(field(r)));
    w.add(fix);
    w.done();
  };
  per_rank(
      job.ring_full, "ops not timed, in-flight ring full",
      [](const Rank& r) { return r.report.ring_full; }, "(raise FABTRACE_INFLIGHT)");
  per_rank(
      job.cells_full, "ops not aggregated, row table full",
      [](const Rank& r) { return r.report.cells_full; }, "(raise FABTRACE_MAX_CELLS)");
  per_rank(
      job.ops_dropped, "per-op timeline records dropped",
      [](const Rank& r) { return r.oplog_dropped; },
      "(the timeline writer fell behind; raise FABTRACE_OPS_MB)");
  for (const Skipped& p : job.partial) {
    any = true;
    s += "  " + printable(p.path) + ": " + printable(p.why) + "\n";
  }
  if (!any) s += "  none: no errors, refusals, unfinished, ring-full or dropped ops\n";
  if (!job.skipped.empty())
    s += "skipped   " + plural(job.skipped.size(), "file", "files") +
         (opt.skipped_on_stderr ? " (named on stderr)" : "") + "\n";
  if (!opt.outputs.empty()) {
    Wrapper w(&s, "outputs   ", kWidth);
    for (const std::string& o : opt.outputs) w.add(printable(o));
    w.done();
  }
  return s;
}

bool write_summary(std::FILE* out, const Job& job, const SummaryOptions& opt) {
  const std::string s = summary_text(job, opt);
  const bool wrote = std::fwrite(s.data(), 1, s.size(), out) == s.size();
  return std::fflush(out) == 0 && wrote && !std::ferror(out);
}

}  // namespace fabtrace::report
