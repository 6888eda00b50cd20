#include "userspace/report/tables.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "common/csv.h"
#include "common/kernel_explain.h"
#include "common/safe_output.h"
#include "userspace/report/kernel_rows.h"

namespace fabtrace::report {

namespace {

using nlohmann::ordered_json;

// A number JSON can hold: NaN and the infinities become 0.
double num(double v) { return std::isfinite(v) ? v : 0.0; }

// A row's first fields: the process it is of.
ordered_json process_row(const std::string& host, const std::string& rank, long pid) {
  ordered_json j;
  j["host"] = host;
  j["rank"] = rank;
  j["pid"] = static_cast<int64_t>(pid);
  return j;
}

ordered_json link_json(const LinkRow& l) {
  const OpRow& o = l.row;
  ordered_json j = process_row(l.host, l.rank, l.pid);
  j["local"] = l.local;
  j["remote"] = l.remote;
  j["op"] = o.op;
  j["bytes"] = o.bytes;
  j["count"] = o.count;
  j["errors"] = o.errors;
  j["untimed"] = o.untimed;
  j["unfinished"] = o.unfinished;
  j["eagain"] = o.eagain;
  j["refused"] = o.refused;
  j["completed_within_50us"] = o.within_50us;
  j["avg_ns"] = num(o.avg_ns);
  j["min_ns"] = num(o.min_ns);
  j["max_ns"] = num(o.max_ns);
  j["p50_ns"] = num(o.p50_ns);
  j["p99_ns"] = num(o.p99_ns);
  j["gbps"] = num(o.gbps);
  j["outlier_ratio"] = num(l.outlier_ratio);
  j["size_unknown"] = o.size_unknown;  // a receive row: bytes is the posted size
  j["ring_full"] = o.ring_full;
  // Receive rows: matched to their send by the per-op timelines, and of those
  // posted after it (post_evidence.h); why not, for the rest.
  j["posted_matched"] = l.posted.matched;
  j["posted_late"] = l.posted.late;
  j["posted_late_median_ns"] = num(l.posted.late_median_ns);
  j["posted_unknown"] = l.posted.unknown;
  // The link's TCP retransmits and drops from its node's kernel log (the same
  // on every row of the link; 0 and kernel_logged=false without a session).
  j["kernel_logged"] = l.kernel_logged;
  j["retransmits"] = l.retrans;
  j["drops"] = l.drops;
  return j;
}

ordered_json stall_json(const Stall& st) {
  ordered_json j = process_row(st.host, st.rank, st.pid);
  j["cq"] = st.cq.id;
  j["polls"] = st.cq.polls;
  j["gap_ns"] = num(st.cq.max_gap_ns);
  j["end_wall_ns"] = st.end_wall_ns;
  j["end_job_s"] = num(st.end_job_s);
  j["kernel_logged"] = st.kernel_logged;
  j["explained"] = st.has_cause;
  const ft_window& w = st.cause.w;  // zeros when not explained
  j["tid"] = st.has_cause ? st.cause.tid : 0;
  j["why"] = st.has_cause ? st.cause.verdict : std::string();
  for (const WindowPart& p : window_parts(w)) j[std::string(p.name) + "_ns"] = p.ns;
  j["faults"] = w.faults;
  j["migrations"] = w.migrations;
  j["offcpu_intervals"] = w.offcpu_count;
  for (int i = 0; i < 2; ++i) {
    const std::string k = "ran_instead_" + std::to_string(i + 1);
    j[k] = w.top[i].pid
               ? record_str(w.top[i].comm, FT_COMM_LEN) + "[" + std::to_string(w.top[i].pid) + "]"
               : std::string();
    j[k + "_ns"] = w.top[i].ns;
  }
  j["history_partial"] = (w.flags & (FT_WIN_PARTIAL_OFF | FT_WIN_PARTIAL_IRQ |
                                     FT_WIN_PARTIAL_FAULT | FT_WIN_UNKNOWN_THREAD)) != 0;
  return j;
}

ordered_json nic_json(const NicRow& n) {
  ordered_json j = process_row(n.host, n.rank, n.pid);
  j["domain"] = n.nic.domain;
  std::string locals;  // space separated: an address holds no space
  for (const std::string& a : n.nic.locals) locals += (locals.empty() ? "" : " ") + a;
  j["locals"] = locals;
  j["ops"] = n.nic.ops;
  j["bytes"] = n.nic.bytes;
  j["busy_ns"] = num(n.nic.busy_ns);
  j["gbps"] = num(n.nic.gbps);
  j["window_ns"] = num(n.nic.window_ns);
  j["peak_gbps"] = num(n.nic.peak_gbps);
  j["peak_start_s"] = num(n.nic.peak_start_s);
  j["peak_span_ns"] = num(n.nic.peak_span_ns);
  j["peak_bytes"] = n.nic.peak_bytes;
  return j;
}

// One CSV line from a row object whose keys are the columns, in order.
std::string csv_line(const ordered_json& j) {
  std::string line;
  bool first = true;
  for (const auto& kv : j.items()) {
    if (!first) line += ',';
    first = false;
    const ordered_json& v = kv.value();
    if (v.is_string())
      line += csv_quote(v.get<std::string>());
    else if (v.is_number_float())
      line += number_text(v.get<double>());
    else
      line += v.dump();
  }
  line += '\n';
  return line;
}

std::string header_line(const std::vector<std::string>& cols) {
  std::string h;
  for (size_t i = 0; i < cols.size(); ++i) h += (i ? "," : "") + cols[i];
  return h + "\n";
}

bool put(std::FILE* out, const std::string& s) {
  return std::fwrite(s.data(), 1, s.size(), out) == s.size();
}

template <typename Rows, typename ToJson>
bool write_csv(const Rows& rows, const std::vector<std::string>& cols, ToJson to_json,
               std::FILE* out) {
  bool ok = put(out, header_line(cols));
  for (const auto& r : rows) ok = ok && put(out, csv_line(to_json(r)));
  return ok && std::fflush(out) == 0 && !std::ferror(out);
}

template <typename Rows, typename ToJson>
bool write_json(const Rows& rows, ToJson to_json, std::FILE* out) {
  bool ok = put(out, "[");
  bool first = true;
  for (const auto& r : rows) {
    ok = ok && put(out, (first ? "\n" : ",\n") + to_json(r).dump());
    first = false;
  }
  ok = ok && put(out, "\n]\n");
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
      "host",    "rank", "pid",       "domain",    "locals",       "ops",          "bytes",
      "busy_ns", "gbps", "window_ns", "peak_gbps", "peak_start_s", "peak_span_ns", "peak_bytes"};
  return cols;
}

const std::vector<std::string>& stall_columns() {
  static const std::vector<std::string> cols = [] {
    std::vector<std::string> c = {"host",          "rank",      "pid",         "cq",
                                  "polls",         "gap_ns",    "end_wall_ns", "end_job_s",
                                  "kernel_logged", "explained", "tid",         "why"};
    for (const WindowPart& p : window_parts(ft_window{})) c.push_back(std::string(p.name) + "_ns");
    for (const char* k :
         {"faults", "migrations", "offcpu_intervals", "ran_instead_1", "ran_instead_1_ns",
          "ran_instead_2", "ran_instead_2_ns", "history_partial"})
      c.push_back(k);
    return c;
  }();
  return cols;
}

std::string number_text(double v) {
  if (!std::isfinite(v)) return "0";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return r.ec == std::errc() ? std::string(buf, r.ptr) : std::string("0");
}

bool write_links_csv(const Job& job, std::FILE* out) {
  return write_csv(job.links, link_columns(), link_json, out);
}
bool write_links_json(const Job& job, std::FILE* out) {
  return write_json(job.links, link_json, out);
}
bool write_nics_csv(const Job& job, std::FILE* out) {
  return write_csv(job.nics, nic_columns(), nic_json, out);
}
bool write_nics_json(const Job& job, std::FILE* out) { return write_json(job.nics, nic_json, out); }
bool write_stalls_csv(const Job& job, std::FILE* out) {
  return write_csv(job.stalls, stall_columns(), stall_json, out);
}
bool write_stalls_json(const Job& job, std::FILE* out) {
  return write_json(job.stalls, stall_json, out);
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

bool write_tables(const Job& job, const std::string& out_dir, std::vector<std::string>* files,
                  std::string* error, bool kernel_events) {
  const struct {
    const char* name;
    bool (*fn)(const Job&, std::FILE*);
  } outs[] = {{"links.csv", write_links_csv},
              {"links.json", write_links_json},
              {"nics.csv", write_nics_csv},
              {"nics.json", write_nics_json},
              {"stalls.csv", write_stalls_csv},
              {"stalls.json", write_stalls_json},
              {"kernel_events.csv", write_kernel_events_csv}};
  for (const auto& o : outs) {
    if (o.fn == write_kernel_events_csv && (!kernel_events || job.kernel.empty())) continue;
    const std::string path = out_dir + "/" + o.name;
    ReplacingFile f;
    if (!f.open(path, error)) return false;
    std::FILE* stream = f.stream();
    if (!stream || !o.fn(job, stream)) {
      if (error) *error = "writing " + path + " failed: " + std::strerror(errno);
      return false;
    }
    if (!f.commit(error)) return false;
    if (files) files->push_back(path);
  }
  return true;
}

}  // namespace fabtrace::report
