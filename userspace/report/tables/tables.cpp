#include "userspace/report/tables/tables.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>

#include "common/csv.h"
#include "common/kernel_explain.h"
#include "common/safe_output.h"
#include "userspace/report/job/kernel_rows.h"
#include "userspace/report/tables/table_row.h"
#include "userspace/report/tables/zstd_stream.h"

namespace fabtrace::report {

namespace {

// A table's fields: f(key, value) per column, in column order (the columns
// lists below name the same keys). One definition for the CSV and the JSON.
template <typename F>
void link_fields(const LinkRow& l, F& f) {
  const auto num = [](double v) { return std::isfinite(v) ? v : 0.0; };
  const OpStats& o = l.row;
  f("host", l.host());
  f("rank", l.rank());
  f("pid", static_cast<int64_t>(l.pid()));
  f("local", l.local());
  f("remote", l.remote());
  f("op", l.op());
  f("bytes", o.bytes);
  f("count", o.count);
  f("errors", o.errors);
  f("untimed", o.untimed);
  f("unfinished", o.unfinished);
  f("eagain", o.eagain);
  f("refused", o.refused);
  f("completed_within_50us", o.within_50us);
  f("avg_ns", num(o.avg_ns));
  f("min_ns", num(o.min_ns));
  f("max_ns", num(o.max_ns));
  f("p50_ns", num(o.p50_ns));
  f("p99_ns", num(o.p99_ns));
  f("gbps", num(o.gbps));
  f("outlier_ratio", num(l.outlier_ratio));
  f("size_unknown", o.size_unknown);  // a receive row: bytes is the posted size
  f("ring_full", o.ring_full);
  // Receive rows: matched to their send by the per-op timelines, and of those
  // posted after it (post_evidence.h); why not, for the rest.
  f("posted_matched", l.posted().matched);
  f("posted_late", l.posted().late);
  f("posted_late_median_ns", num(l.posted().late_median_ns));
  f("posted_unknown", l.posted().unknown());
  // The link's TCP retransmits and drops from its node's kernel log (the same
  // on every row of the link; 0 and kernel_logged=false without a session).
  f("kernel_logged", l.kernel_logged());
  f("retransmits", l.retrans());
  f("drops", l.drops());
}

template <typename F>
void stall_fields(const Stall& st, F& f) {
  const auto num = [](double v) { return std::isfinite(v) ? v : 0.0; };
  f("host", st.host);
  f("rank", st.rank);
  f("pid", static_cast<int64_t>(st.pid));
  f("cq", st.cq.id);
  f("polls", st.cq.polls);
  f("gap_ns", num(st.cq.max_gap_ns));
  f("end_wall_ns", st.end_wall_ns);
  f("end_job_s", num(st.end_job_s));
  f("kernel_logged", st.kernel_logged);
  f("explained", st.has_cause);
  const ft_breakdown& w = st.cause.w;  // zeros when not explained
  f("tid", st.has_cause ? st.cause.tid : 0);
  f("why", st.has_cause ? st.cause.verdict : std::string());
  for (const BreakdownPart& p : breakdown_parts(w)) f((std::string(p.name) + "_ns").c_str(), p.ns);
  f("faults", w.faults);
  f("faults_bound", st.has_cause ? std::string(faults_bound(w)) : std::string());
  f("migrations", w.migrations);
  f("offcpu_intervals", w.offcpu_count);
  for (int i = 0; i < 2; ++i) {
    const std::string k = "ran_instead_" + std::to_string(i + 1);
    f(k.c_str(), w.top[i].pid ? record_str(w.top[i].comm, FT_COMM_LEN) + "[" +
                                    std::to_string(w.top[i].pid) + "]"
                              : std::string());
    f((k + "_ns").c_str(), w.top[i].ns);
  }
  f("history_partial", (w.flags & (FT_WIN_PARTIAL_OFF | FT_WIN_PARTIAL_IRQ | FT_WIN_PARTIAL_FAULT |
                                   FT_WIN_UNKNOWN_THREAD)) != 0);
}

template <typename F>
void nic_fields(const NicRow& n, F& f) {
  const auto num = [](double v) { return std::isfinite(v) ? v : 0.0; };
  f("host", n.host);
  f("rank", n.rank);
  f("pid", static_cast<int64_t>(n.pid));
  f("domain", n.nic.domain);
  std::string locals;  // space separated: an address holds no space
  for (const std::string& a : n.nic.locals) locals += (locals.empty() ? "" : " ") + a;
  f("locals", locals);
  f("ops", n.nic.ops);
  f("bytes", n.nic.bytes);
  f("busy_ns", num(n.nic.busy_ns));
  f("gbps", num(n.nic.gbps));
  f("window_ns", num(n.nic.window_ns));
  f("peak_gbps", num(n.nic.peak_gbps));
  f("peak_start_s", num(n.nic.peak_start_s));
  f("peak_span_ns", num(n.nic.peak_span_ns));
  f("peak_bytes", n.nic.peak_bytes);
  f("peak_busy_ns", num(n.nic.peak_busy_ns));
}

std::string header_line(const std::vector<std::string>& cols) {
  std::string h;
  for (size_t i = 0; i < cols.size(); ++i) h += (i ? "," : "") + cols[i];
  return h + "\n";
}

bool put(std::FILE* out, const std::string& s) {
  return std::fwrite(s.data(), 1, s.size(), out) == s.size();
}

// Rows are formatted into one buffer, written when it passes kFlushBytes.
constexpr size_t kFlushBytes = size_t{1} << 20;

void flush_when_full(std::FILE* out, std::string* buf, bool* ok) {
  if (buf->size() < kFlushBytes) return;
  *ok = *ok && put(out, *buf);
  buf->clear();
}

template <typename Rows, typename Fields>
bool write_csv(const Rows& rows, const std::vector<std::string>& cols, Fields fields,
               std::FILE* out) {
  std::string buf = header_line(cols);
  bool ok = true;
  for (const auto& r : rows) {
    CsvRow line(&buf);
    fields(r, line);
    line.end();
    flush_when_full(out, &buf, &ok);
  }
  ok = ok && put(out, buf);
  return ok && std::fflush(out) == 0 && !std::ferror(out);
}

template <typename Rows, typename Fields>
bool write_json(const Rows& rows, Fields fields, std::FILE* out) {
  std::string buf = "[";
  bool ok = true;
  bool first = true;
  for (const auto& r : rows) {
    buf += first ? "\n" : ",\n";
    first = false;
    JsonRow obj(&buf);
    fields(r, obj);
    obj.end();
    flush_when_full(out, &buf, &ok);
  }
  buf += "\n]\n";
  ok = ok && put(out, buf);
  return ok && std::fflush(out) == 0 && !std::ferror(out);
}

}  // namespace

const std::vector<std::string>& link_columns() {
  static const std::vector<std::string> cols = {"host",
                                                "rank",
                                                "pid",
                                                "local",
                                                "remote",
                                                "op",
                                                "bytes",
                                                "count",
                                                "errors",
                                                "untimed",
                                                "unfinished",
                                                "eagain",
                                                "refused",
                                                "completed_within_50us",
                                                "avg_ns",
                                                "min_ns",
                                                "max_ns",
                                                "p50_ns",
                                                "p99_ns",
                                                "gbps",
                                                "outlier_ratio",
                                                "size_unknown",
                                                "ring_full",
                                                "posted_matched",
                                                "posted_late",
                                                "posted_late_median_ns",
                                                "posted_unknown",
                                                "kernel_logged",
                                                "retransmits",
                                                "drops"};
  return cols;
}

const std::vector<std::string>& nic_columns() {
  static const std::vector<std::string> cols = {
      "host",      "rank",         "pid",          "domain",     "locals",
      "ops",       "bytes",        "busy_ns",      "gbps",       "window_ns",
      "peak_gbps", "peak_start_s", "peak_span_ns", "peak_bytes", "peak_busy_ns"};
  return cols;
}

const std::vector<std::string>& stall_columns() {
  static const std::vector<std::string> cols = [] {
    std::vector<std::string> c = {"host",          "rank",      "pid",         "cq",
                                  "polls",         "gap_ns",    "end_wall_ns", "end_job_s",
                                  "kernel_logged", "explained", "tid",         "why"};
    for (const BreakdownPart& p : breakdown_parts(ft_breakdown{}))
      c.push_back(std::string(p.name) + "_ns");
    for (const char* k :
         {"faults", "faults_bound", "migrations", "offcpu_intervals", "ran_instead_1",
          "ran_instead_1_ns", "ran_instead_2", "ran_instead_2_ns", "history_partial"})
      c.push_back(k);
    return c;
  }();
  return cols;
}

bool write_links_csv(const Job& job, std::FILE* out) {
  return write_csv(
      job.links, link_columns(), [](const auto& r, auto& sink) { link_fields(r, sink); }, out);
}
bool write_links_json(const Job& job, std::FILE* out) {
  return write_json(
      job.links, [](const auto& r, auto& sink) { link_fields(r, sink); }, out);
}
bool write_nics_csv(const Job& job, std::FILE* out) {
  return write_csv(
      job.nics, nic_columns(), [](const auto& r, auto& sink) { nic_fields(r, sink); }, out);
}
bool write_nics_json(const Job& job, std::FILE* out) {
  return write_json(
      job.nics, [](const auto& r, auto& sink) { nic_fields(r, sink); }, out);
}
bool write_stalls_csv(const Job& job, std::FILE* out) {
  return write_csv(
      job.stalls, stall_columns(), [](const auto& r, auto& sink) { stall_fields(r, sink); }, out);
}
bool write_stalls_json(const Job& job, std::FILE* out) {
  return write_json(
      job.stalls, [](const auto& r, auto& sink) { stall_fields(r, sink); }, out);
}

bool write_kernel_events_csv(const Job& job, std::FILE* out) {
  bool ok =
      put(out, "host,ts_ns,kind,cpu,pid,tid,start_ns,dur_ns,cause,other_pid,other_comm,detail\n");
  for (const KernelNode& n : job.kernel) {
    KernelLogReader r;
    std::string err;
    if (!r.open(n.path, &err) || !r.read_all([](const ft_hdr&, const uint8_t*) {}, &err)) continue;
    const KernelNames names = KernelNames::from(r);
    const std::string host = csv_quote(n.host) + ",";
    r.read_all(
        [&](const ft_hdr& h, const uint8_t* rec) {
          const KernelRow k = kernel_row(h, rec, names);
          ok = ok && put(out, host + std::to_string(k.ts_ns) + "," + k.kind + "," +
                                  std::to_string(k.cpu) + "," + std::to_string(k.pid) + "," +
                                  std::to_string(k.tid) + "," + std::to_string(k.start_ns) + "," +
                                  std::to_string(k.dur_ns) + "," + csv_quote(k.cause) + "," +
                                  std::to_string(k.other_pid) + "," + csv_quote(k.other_comm) +
                                  "," + csv_quote(k.detail) + "\n");
        },
        &err);
  }
  return ok && std::fflush(out) == 0 && !std::ferror(out);
}

const char* links_table_name(const Job& job, size_t zstd_above) {
  return job.links.size() > zstd_above ? "links.csv.zst" : "links.csv";
}

bool write_tables(const Job& job, const std::string& out_dir, std::vector<std::string>* files,
                  std::string* error, bool kernel_events, size_t zstd_links_above) {
  const bool zst = job.links.size() > zstd_links_above;
  // Which form of the links table a file is: one of the two is written, the
  // other's file removed.
  enum Form { kOther, kLinksPlain, kLinksZst };
  const struct {
    const char* name;
    bool (*fn)(const Job&, std::FILE*);
    Form form;
  } outs[] = {{"links.csv.zst", write_links_csv, kLinksZst},
              {"links.csv", write_links_csv, kLinksPlain},
              {"links.json", write_links_json, kLinksPlain},
              {"nics.csv", write_nics_csv, kOther},
              {"nics.json", write_nics_json, kOther},
              {"stalls.csv", write_stalls_csv, kOther},
              {"stalls.json", write_stalls_json, kOther},
              {"kernel_events.csv", write_kernel_events_csv, kOther}};
  for (const auto& o : outs) {
    if (o.fn == write_kernel_events_csv && (!kernel_events || job.kernel.empty())) continue;
    const std::string path = out_dir + "/" + o.name;
    if (o.form != kOther && zst != (o.form == kLinksZst)) {
      // The other form's file, from an earlier report into this directory
      // (ours: cmd_report checked it), would be read as this job's.
      if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
        if (error) *error = "cannot remove the earlier " + path + ": " + std::strerror(errno);
        return false;
      }
      continue;
    }
    ReplacingFile f;
    if (!f.open(path, error)) return false;
    std::FILE* stream = nullptr;
    if (o.form == kLinksZst) {
      // The frame's tail is written by fclose: checked with the rest.
      std::string why;
      stream = open_zstd_stream(f.fd(), kZstdLevel, &why);
      if (!stream) {
        if (error) *error = "writing " + path + " failed: " + why;
        return false;
      }
      const bool ok = o.fn(job, stream);
      const int err = errno;
      if (std::fclose(stream) != 0 || !ok) {
        if (error) *error = "writing " + path + " failed: " + std::strerror(ok ? errno : err);
        return false;
      }
    } else {
      stream = f.stream();
      if (!stream || !o.fn(job, stream)) {
        if (error) *error = "writing " + path + " failed: " + std::strerror(errno);
        return false;
      }
    }
    if (!f.commit(error)) return false;
    if (files) files->push_back(path);
  }
  return true;
}

}  // namespace fabtrace::report
