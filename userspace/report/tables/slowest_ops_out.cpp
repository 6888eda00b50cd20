// The slowest ops and the timelines' coverage in the summary, the HTML report
// and slowest_ops.csv.
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "common/csv.h"
#include "common/safe_output.h"
#include "userspace/report/analysis/slowest_ops.h"
#include "userspace/report/html/svg.h"
#include "userspace/report/tables/tables.h"
#include "userspace/report/text/formats.h"
#include "userspace/report/text/summary.h"

namespace fabtrace::report {

namespace {

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

std::string ratio_text(const SlowOp& o) {
  return o.row_p50_ns > 0 ? fixed(o.ratio, 1) + "x p50" : "no p50";
}

std::string op_line(const SlowOp& o) {
  std::string s =
      "  " + who(o.host, o.rank, o.pid) + " tid " + std::to_string(o.tid) + "  " +
      short_addr(o.local) + " -> " + short_addr(o.remote) + "  " + o.op + " " +
      (o.size_unknown ? "size unknown (posted " + fmt_size(o.bytes) + ")" : fmt_size(o.bytes)) +
      "  " + fmt_ns(o.dur_ns) + " (" + ratio_text(o) + ")  at " +
      fmt_wall(static_cast<uint64_t>(std::max<int64_t>(o.start_wall_ns, 0)), false) + " (t+" +
      fixed(o.start_job_s, 3) + " s)\n";
  return s;
}

std::string span_text(const TimelineCover::Span& sp, uint64_t first_wall_ns) {
  const auto t = [&](int64_t w) {
    return first_wall_ns
               ? "t+" + fixed(static_cast<double>(w - static_cast<int64_t>(first_wall_ns)) / 1e9, 3)
               : fmt_wall(static_cast<uint64_t>(std::max<int64_t>(w, 0)), false);
  };
  return t(sp.from) + " .. " + (sp.to ? t(sp.to) : std::string("end"));
}

std::string cover_text(const TimelineCover& c, uint64_t first_wall_ns) {
  std::string s =
      who(c.host, c.rank, c.pid) + ": " +
      (c.spec.empty() ? "toggled by " + (c.signal.empty() ? std::string("a signal") : c.signal)
                      : "window " + c.spec) +
      ", ";
  if (c.spans.empty()) {
    s += "nothing captured";
  } else {
    s += "captured ";
    for (size_t i = 0; i < c.spans.size() && i < 4; ++i)
      s += (i ? ", " : "") + span_text(c.spans[i], first_wall_ns);
    if (c.spans.size() > 4) s += " (+" + std::to_string(c.spans.size() - 4) + " more)";
    if (first_wall_ns) s += " s";
  }
  s += "; " + fmt_count(c.ops) + " ops, " + fmt_count(c.outside) + " outside, " +
       fmt_count(c.marks) + " marks";
  return s;
}

}  // namespace

std::string perfetto_link(int64_t start_wall_ns, double dur_ns) {
  // ui.perfetto.dev's deep-link parameters, applied to the trace opened in
  // that tab: visStart/visEnd set the visible span (ns on the trace's boot
  // clock, which the trace states equal to the wall clock: perfetto_trace.h),
  // ts/dur select the op's slice. A margin of the op's length (at least 1 us)
  // on each side.
  const int64_t d = static_cast<int64_t>(dur_ns);
  const int64_t margin = std::max<int64_t>(d, 1000);
  return "https://ui.perfetto.dev/?visStart=" + std::to_string(start_wall_ns - margin) +
         "&visEnd=" + std::to_string(start_wall_ns + d + margin) +
         "&ts=" + std::to_string(start_wall_ns) + "&dur=" + std::to_string(d);
}

std::string slowest_ops_text(const SlowestOps& s, size_t top_cover) {
  if (s.covers.empty()) return "";
  std::string out = "slowest ops (per-op timelines; receives apart: their time includes waiting)\n";
  if (s.ops.empty()) out += "  none in the timelines\n";
  for (const SlowOp& o : s.ops) out += op_line(o);
  if (!s.recvs.empty()) {
    out += "slowest receives\n";
    for (const SlowOp& o : s.recvs) out += op_line(o);
  }
  // What the timelines cover: the ranks with the whole run on one line.
  size_t whole = 0, listed = 0;
  uint64_t whole_ops = 0, marks = 0;
  for (const TimelineCover& c : s.covers) {
    marks += c.marks;
    if (c.whole) {
      ++whole;
      whole_ops += c.ops;
    }
  }
  out += "timeline  ";
  if (whole)
    out += std::to_string(whole) + (whole == 1 ? " rank" : " ranks") + " the whole run (" +
           fmt_count(whole_ops) + " ops)";
  if (marks) out += std::string(whole ? ", " : "") + fmt_count(marks) + " marks";
  if (whole || marks) out += "\n";
  for (const TimelineCover& c : s.covers) {
    if (c.whole) continue;
    if (listed++ >= top_cover) {
      out += "          (+ more ranks with a capture window)\n";
      break;
    }
    out += "          " + cover_text(c, s.first_wall_ns) + "\n";
  }
  return out;
}

std::string slowest_ops_html(const SlowestOps& s) {
  using svg::escape;
  std::string h = "<h2 id=\"slowest\">Slowest ops</h2>\n";
  if (s.covers.empty()) {
    return h +
           "<p class=\"note\">No rank has a per-op timeline (FABTRACE_OPS_RANKS or "
           "FABTRACE_OPS_NIC).</p>\n";
  }
  h += "<p class=\"note\">The " + std::to_string(s.n) +
       " longest ops of the per-op timelines, with the ratio to the p50 of their row (rank, link, "
       "op, size). Receives are listed apart: their time includes waiting for the sender. Each "
       "time links to that span of the Perfetto trace in ui.perfetto.dev (open trace.pftrace "
       "there first; the trace's clock is the wall clock, in ns).</p>\n";
  for (int cls = 0; cls < 2; ++cls) {
    const std::vector<SlowOp>& v = cls ? s.recvs : s.ops;
    if (cls && v.empty()) continue;
    if (cls) h += "<h3>Slowest receives</h3>\n";
    h += std::string("<table id=\"") + (cls ? "slowest-recvs" : "slowest-ops") +
         "\"><thead><tr><th>host</th><th>rank</th><th class=\"n\">tid</th><th>local</th>"
         "<th>remote</th><th>op</th><th class=\"n\">size</th><th class=\"n\">duration</th>"
         "<th class=\"n\">x row p50</th><th>start (UTC)</th><th class=\"n\">t+ s</th>"
         "<th>trace</th></tr></thead><tbody>\n";
    for (const SlowOp& o : v) {
      const std::string link = perfetto_link(o.start_wall_ns, o.dur_ns);
      h += "<tr><td>" + escape(o.host) + "</td><td>" + escape(o.rank) + "</td><td class=\"n\">" +
           std::to_string(o.tid) + "</td><td class=\"addr\" title=\"" + escape(o.local) + "\">" +
           escape(short_addr(o.local)) + "</td><td class=\"addr\" title=\"" + escape(o.remote) +
           "\">" + escape(short_addr(o.remote)) + "</td><td>" + escape(o.op) +
           "</td><td class=\"n\">" +
           escape(o.size_unknown ? "? (" + fmt_size(o.bytes) + ")" : fmt_size(o.bytes)) +
           "</td><td class=\"n\">" + escape(fmt_ns(o.dur_ns)) + "</td><td class=\"n\">" +
           (o.row_p50_ns > 0 ? fixed(o.ratio, 1) : "-") + "</td><td>" +
           escape(fmt_wall(static_cast<uint64_t>(std::max<int64_t>(o.start_wall_ns, 0)), true)) +
           "</td><td class=\"n\">" + fixed(o.start_job_s, 6) + "</td><td><a href=\"" +
           escape(link) + "\" data-ts=\"" + std::to_string(o.start_wall_ns) + "\">ts " +
           std::to_string(o.start_wall_ns) + "</a></td></tr>\n";
    }
    h += "</tbody></table>\n";
  }
  h += "<p class=\"note\">What each rank's timeline covers: ";
  bool first = true;
  for (const TimelineCover& c : s.covers) {
    h += (first ? "" : "; ") + escape(c.whole ? who(c.host, c.rank, c.pid) + ": the whole run"
                                              : cover_text(c, s.first_wall_ns));
    first = false;
  }
  h += ".</p>\n";
  return h;
}

bool write_slowest_ops_csv(const SlowestOps& s, const std::string& path, std::string* error) {
  ReplacingFile f;
  if (!f.open(path, error)) return false;
  std::FILE* out = f.stream();
  bool ok = out != nullptr;
  if (ok)
    ok = std::fprintf(out,
                      "class,host,rank,pid,tid,local,remote,op,bytes,size_known,start_wall_ns,"
                      "start_job_s,start_mono_ns,dur_ns,row_p50_ns,ratio_to_p50\n") > 0;
  for (int cls = 0; ok && cls < 2; ++cls) {
    for (const SlowOp& o : cls ? s.recvs : s.ops) {
      ok = std::fprintf(out,
                        "%s,%s,%s,%ld,%u,%s,%s,%s,%" PRIu64 ",%d,%" PRId64 ",%.9f,%" PRId64
                        ",%.0f,%.0f,%.3f\n",
                        cls ? "recv" : "op", csv_quote(o.host).c_str(), csv_quote(o.rank).c_str(),
                        o.pid, o.tid, csv_quote(o.local).c_str(), csv_quote(o.remote).c_str(),
                        csv_quote(o.op).c_str(), o.bytes, o.size_unknown ? 0 : 1, o.start_wall_ns,
                        o.start_job_s, o.start_mono_ns, o.dur_ns, o.row_p50_ns, o.ratio) > 0;
      if (!ok) break;
    }
  }
  if (!ok) {
    if (error) *error = "writing " + path + " failed: " + std::strerror(errno);
    return false;
  }
  return f.commit(error);
}

}  // namespace fabtrace::report
