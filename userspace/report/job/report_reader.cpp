#include "userspace/report/job/report_reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <map>
#include <string_view>

#include "common/input_limits.h"
#include "common/op_kinds.h"
#include "userspace/report/job/json_fields.h"

namespace fabtrace::report {

const char* file_problem_name(FileProblem p) {
  switch (p) {
    case FileProblem::kNone:
      return "ok";
    case FileProblem::kUnreadable:
      return "unreadable";
    case FileProblem::kEmpty:
      return "empty";
    case FileProblem::kTruncated:
      return "truncated";
    case FileProblem::kCorrupt:
      return "corrupt";
    case FileProblem::kForeign:
      return "foreign";
    case FileProblem::kVersion:
      return "unsupported version";
    case FileProblem::kTooLarge:
      return "too large";
  }
  return "?";
}

namespace {

using namespace json_fields;

#define FABTRACE_NUM_FIELD(kind, m, key) kind##_field(key, &NicReport::m),
constexpr NumField<NicReport> kNicTotals[] = {FABTRACE_NIC_TOTALS(FABTRACE_NUM_FIELD)};
constexpr NumField<NicReport> kNicPeak[] = {FABTRACE_NIC_PEAK(FABTRACE_NUM_FIELD)};
#undef FABTRACE_NUM_FIELD

#define FABTRACE_OUTCOME_FIELD(m, words) count_field(#m, &OpStats::m),
constexpr NumField<OpStats> kOpCounts[] = {count_field("count", &OpStats::count),
                                           FABTRACE_OP_OUTCOMES(FABTRACE_OUTCOME_FIELD)};
#undef FABTRACE_OUTCOME_FIELD
#define FABTRACE_TIME_FIELD(m) real_field(#m, &OpStats::m),
constexpr NumField<OpStats> kOpTimes[] = {FABTRACE_OP_TIMES(FABTRACE_TIME_FIELD)};
#undef FABTRACE_TIME_FIELD

NicReport read_nic(const Node& n, const std::string& w) {
  NicReport x;
  x.domain = get_string(n, "domain", w);
  if (Node locals; get_array(n, "locals", w, &locals)) {
    for_each_element(locals, [&](const Node& a, size_t k) {
      if (!a.is_string())
        throw BadField{w + "locals[" + std::to_string(k) + "] is " + a.type_name() +
                       ", not a string"};
      x.locals.emplace_back(a.str());
    });
  } else {
    // Version 1: the addresses joined with commas.
    const std::string joined = get_string(n, "local", w);
    for (size_t at = 0; at < joined.size();) {
      size_t comma = joined.find(',', at);
      if (comma == std::string::npos) comma = joined.size();
      if (comma > at) x.locals.push_back(joined.substr(at, comma - at));
      at = comma + 1;
    }
  }
  read_numbers(n, w, kNicTotals, &x);
  if (Node wins; get_array(n, "windows", w, &wins)) {
    for_each_element(wins, [&](const Node& e, size_t k) {
      const std::string ww = w + "windows[" + std::to_string(k) + "]";
      const Node e0 = e.first(), e1 = e0.valid() ? e0.next(e) : Node(),
                 e2 = e1.valid() ? e1.next(e) : Node();
      if (!e.is_array() || e.size() != 3 || !e0.is_number() || !e1.is_number() || !e2.is_number())
        throw BadField{ww + " is not [index, busy_ns, bytes]"};
      NicTimeBin nw;
      nw.index = e0.get_u64();
      nw.busy_ns = e1.get_double();
      nw.bytes = e2.get_u64();
      x.bins.push_back(nw);
    });
  }
  read_numbers(n, w, kNicPeak, &x);
  return x;
}

CqReport read_cq(const Node& c, const std::string& w) {
  CqReport x;
  x.id = static_cast<uint32_t>(get_u64(c, "id", w));
  x.polls = get_u64(c, "polls", w);
  if (Node g; c.find("gaps", &g) && !g.is_null()) {
    const Node& gaps = as_object(g, w + "gaps");
    for (int k = 0; k < kGapClasses; ++k) x.gaps[k] = get_u64(gaps, kGapClassNames[k], w + "gaps.");
  }
  x.max_gap_ns = get_double(c, "max_gap_ns", w);
  x.max_gap_end_s = get_double(c, "max_gap_end_s", w, 0.0, limits::kMaxSeconds);
  return x;
}

OpRow read_op_row(const Node& row_object, const std::string& wo) {
  const Members o(row_object, kOpRowKeys);
  OpRow row;
  row.op = get_string(o, "op", wo, true);
  row.bytes = get_u64(o, "bytes", wo);
  row.size_unknown = get_bool(o, "size_unknown", wo);
  read_numbers(o, wo, kOpCounts, static_cast<OpStats*>(&row));
  // Version 1 called completed_within_50us "imm".
  const char* fast = o.contains("imm") ? "imm" : "completed_within_50us";
  row.recv = o.contains(fast) || op_is_recv(op_from_name(row.op.c_str()));
  row.within_50us = get_u64(o, fast, wo);
  read_numbers(o, wo, kOpTimes, static_cast<OpStats*>(&row));
  return row;
}

LinkReport read_link(const Node& l, const std::string& w) {
  LinkReport x;
  x.local = get_string(l, "local", w);
  x.remote = get_string(l, "remote", w);
  for_each_object(l, "ops", w, [&](const Node& o, const std::string& wo) {
    x.rows.push_back(read_op_row(o, wo));
  });
  return x;
}

// One field of FABTRACE_JOB_META_FIELDS (common/job_meta.h), by its type.
void read_job_field(const Node& o, const char* name, std::string* v) {
  *v = get_string(o, name, "job.");
}
void read_job_field(const Node& o, const char* name, uint64_t* v) {
  *v = get_time_ns(o, name, "job.");
}

void parse_fields(const Node& j, ProcessReport* r) {
  r->host = get_string(j, "host", "", true);
  r->rank = get_string(j, "rank", "", true);
  {
    Node it;
    if (!j.find("pid", &it)) throw BadField{"pid is missing"};
    if (!it.is_number_integer())
      throw BadField{std::string("pid is ") + it.type_name() + ", not an integer"};
    const int64_t pid = it.get_i64();
    if (pid < INT32_MIN || pid > INT32_MAX) throw BadField{"pid is out of range"};
    r->pid = static_cast<long>(pid);
  }
  r->providers = get_string(j, "providers", "");
  r->source = get_string(j, "source", "");
  // Version 3: the writer's version and the job (both absent before).
  r->fabtrace_version = get_string(j, "fabtrace_version", "");
  if (Node jb; j.find("job", &jb) && !jb.is_null()) {
    const Node& o = as_object(jb, "job");
    JobMeta& m = r->job;
#define FABTRACE_JOB_FIELD_READ(name, kind) read_job_field(o, #name, &m.name);
    FABTRACE_JOB_META_FIELDS(FABTRACE_JOB_FIELD_READ)
#undef FABTRACE_JOB_FIELD_READ
  }
  r->start_mono_ns = get_time_ns(j, "start_mono_ns", "");
  r->start_wall_ns = get_time_ns(j, "start_wall_ns", "");
  r->duration_s = get_double(j, "duration_s", "", 0.0, limits::kMaxSeconds);
  if (Node c; j.find("clock", &c) && !c.is_null()) {
    const Node& clk = as_object(c, "clock");
    r->tsc = get_string(clk, "source", "clock.") == "tsc";
    r->ns_per_tick =
        clk.contains("ns_per_tick")
            ? get_double(clk, "ns_per_tick", "clock.", limits::kMinNsPerTick, limits::kMaxNsPerTick)
            : 1.0;
    r->clock_residual_ns = get_double(clk, "residual_ns", "clock.");
    r->clock_pairs = get_u64(clk, "pairs", "clock.");
  }
  r->ring_slots = get_u64(j, "ring_slots", "");
  r->ring_full = get_u64(j, "ring_full", "");
  r->cells_full = get_u64(j, "cells_full", "");

  for_each_object(j, "nics", "",
                  [&](const Node& n, const std::string& w) { r->nics.push_back(read_nic(n, w)); });
  for_each_object(j, "cqs", "",
                  [&](const Node& c, const std::string& w) { r->cqs.push_back(read_cq(c, w)); });
  for_each_object(j, "links", "", [&](const Node& l, const std::string& w) {
    r->links.push_back(read_link(l, w));
  });
}

bool fail(std::string* why, FileProblem* problem, FileProblem p, const std::string& msg) {
  if (why) *why = msg;
  if (problem) *problem = p;
  return false;
}

}  // namespace

bool parse_process_report(const std::string& text, ProcessReport* out, std::string* why,
                          FileProblem* problem) {
  *out = ProcessReport();
  if (problem) *problem = FileProblem::kNone;
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    return fail(why, problem, FileProblem::kEmpty, "empty file");
  // One tree per parsing thread, kept between reports (see JsonTree::parse),
  // unless a report made it larger than reports of 1024 links do.
  thread_local JsonTree tree;
  struct Trim {
    ~Trim() { tree.trim(size_t{32} << 20); }
  } trim_after;
  // Depth is bounded as the tree is built: it is walked recursively
  // (dump()), so depth is what would overflow the stack.
  if (JsonError e; !tree.parse(text, &e, limits::kMaxJsonDepth)) {
    if (e.too_deep()) return fail(why, problem, FileProblem::kCorrupt, "corrupt: JSON " + e.what);
    if (!e.syntax()) return fail(why, problem, FileProblem::kCorrupt, "corrupt: " + e.what);
    // nlohmann reports the byte where it gave up; at (or past) the end of the
    // text means the document is a valid prefix that stops early.
    if (e.byte >= text.size() || e.what.find("unexpected end of input") != std::string::npos)
      return fail(why, problem, FileProblem::kTruncated,
                  "truncated JSON: cut short after " + std::to_string(text.size()) +
                      " bytes (was the process killed while writing it?)");
    const bool texty = text.find('\0') == std::string::npos;
    return fail(why, problem, FileProblem::kCorrupt,
                std::string(texty ? "corrupt" : "binary") +
                    ": not valid JSON (syntax error at byte " + std::to_string(e.byte) + ")");
  }
  const Node j = tree.root();
  if (!j.is_object())
    return fail(why, problem, FileProblem::kForeign,
                std::string("foreign: JSON ") + j.type_name() + ", not a fabtrace report");
  Node f;
  if (!j.find("format", &f))
    return fail(why, problem, FileProblem::kForeign,
                "foreign: JSON without a \"format\" field, not a fabtrace report");
  if (!f.is_string() || f.str() != kReportFormat) {
    std::string got = f.is_string() ? "\"" + std::string(f.str()) + "\"" : f.dump();
    if (got.size() > 60) got = got.substr(0, 57) + "...";
    return fail(why, problem, FileProblem::kForeign,
                "foreign: format is " + got + ", not \"" + kReportFormat + "\"");
  }
  Node v;
  if (!j.find("version", &v) || !v.is_number_integer())
    return fail(why, problem, FileProblem::kCorrupt, "corrupt: no integer \"version\"");
  if (v.get_i64() > kReportVersion || v.get_i64() < 1)
    return fail(why, problem, FileProblem::kVersion,
                "report format version " + std::to_string(v.get_i64()) +
                    "; this fabtrace reads version " + std::to_string(kReportVersion) +
                    " (use a newer fabtrace)");
  try {
    parse_fields(j, out);
  } catch (const BadField& b) {
    *out = ProcessReport();
    return fail(why, problem, FileProblem::kCorrupt, "corrupt: " + b.what);
  } catch (const std::exception& e) {
    *out = ProcessReport();
    return fail(why, problem, FileProblem::kCorrupt, std::string("corrupt: ") + e.what());
  }
  return true;
}

bool read_process_report(const std::string& path, ProcessReport* out, std::string* why,
                         FileProblem* problem) {
  *out = ProcessReport();
  // One text buffer per parsing thread, kept between reports like the tree:
  // a fresh one per report was an mmap of its size (cmd_report's
  // M_MMAP_THRESHOLD) and a page fault per 4 KiB of it.
  thread_local std::string text;
  struct Trim {
    ~Trim() {
      if (text.capacity() > (size_t{8} << 20)) std::string().swap(text);
    }
  } trim_after;
  if (!read_report_text(path, &text, why, problem)) return false;
  return parse_process_report(text, out, why, problem);
}

bool read_report_text(const std::string& path, std::string* text, std::string* why,
                      FileProblem* problem) {
  std::string err;
  if (read_bounded_file(path, limits::kMaxReportBytes, text, &err)) return true;
  struct stat st;
  const bool big =
      ::stat(path.c_str(), &st) == 0 &&
      (!S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) > limits::kMaxReportBytes);
  return fail(why, problem, big ? FileProblem::kTooLarge : FileProblem::kUnreadable, err);
}

// ---- counters ------------------------------------------------------------------

namespace {

bool gauge_by_name(const std::string& name) {
  return name.find("in_use") != std::string::npos || name.find("max_") != std::string::npos ||
         name.find("status") != std::string::npos;
}

struct ColumnStats {
  size_t col = 0;
  std::string device, name;
  bool cumulative = true;
  uint64_t changes = 0, increase = 0;
};

// The samples of a column that count: for cumulative counters a 0 after a
// non-zero value is a failed read and is skipped.
std::vector<size_t> valid_rows(const CounterSeries& cs, size_t col, bool cumulative) {
  std::vector<size_t> idx;
  idx.reserve(cs.rows.size());
  bool seen_nonzero = false;
  for (size_t i = 0; i < cs.rows.size(); ++i) {
    const uint64_t v = cs.rows[i][col];
    if (cumulative && v == 0 && seen_nonzero) continue;
    if (v) seen_nonzero = true;
    idx.push_back(i);
  }
  return idx;
}

uint64_t delta(uint64_t prev, uint64_t cur) { return cur >= prev ? cur - prev : cur; }

}  // namespace

void reduce_counter_series(const CounterSeries& cs, int64_t wall_offset_ns, size_t per_device,
                           size_t max_points, std::vector<CounterTrack>* out) {
  out->clear();
  const int tcol = cs.column(kCounterMonoColumn);
  if (tcol < 0 || cs.rows.size() < 2 || max_points == 0) return;
  const size_t tc = static_cast<size_t>(tcol);
  std::map<std::string, std::vector<ColumnStats>> by_device;
  std::vector<std::string> device_order;
  for (size_t c = 0; c < cs.columns.size(); ++c) {
    const std::string& label = cs.columns[c];
    const size_t colon = label.find(':');
    if (colon == std::string::npos) continue;  // t_mono_ns, wall_ns
    ColumnStats s;
    s.col = c;
    s.device = label.substr(0, colon);
    s.name = label.substr(colon + 1);
    if (s.name == kTelemetryWallColumn) continue;
    s.cumulative = !gauge_by_name(s.name);
    if (s.cumulative) {
      const std::vector<size_t> idx = valid_rows(cs, c, true);
      uint64_t decreases = 0;
      for (size_t k = 1; k < idx.size(); ++k)
        if (cs.rows[idx[k]][c] < cs.rows[idx[k - 1]][c]) ++decreases;
      // A reset now and then is a cumulative counter; going down often is a level.
      if (decreases > std::max<uint64_t>(1, idx.size() / 100)) s.cumulative = false;
    }
    const std::vector<size_t> idx = valid_rows(cs, c, s.cumulative);
    for (size_t k = 1; k < idx.size(); ++k) {
      const uint64_t a = cs.rows[idx[k - 1]][c], b = cs.rows[idx[k]][c];
      if (a != b) ++s.changes;
      if (s.cumulative) s.increase += delta(a, b);
    }
    if (s.changes == 0) continue;
    if (!by_device.count(s.device)) device_order.push_back(s.device);
    by_device[s.device].push_back(std::move(s));
  }
  for (const std::string& dev : device_order) {
    std::vector<ColumnStats>& cols = by_device[dev];
    std::stable_sort(cols.begin(), cols.end(), [](const ColumnStats& a, const ColumnStats& b) {
      if (a.changes != b.changes) return a.changes > b.changes;
      return a.increase > b.increase;
    });
    if (cols.size() > per_device) cols.resize(per_device);
    for (const ColumnStats& s : cols) {
      CounterTrack t;
      t.device = s.device;
      t.name = s.name;
      t.cumulative = s.cumulative;
      t.changes = s.changes;
      t.increase = s.increase;
      const std::vector<size_t> idx = valid_rows(cs, s.col, s.cumulative);
      if (idx.size() < 2) continue;
      const size_t intervals = idx.size() - 1;
      const size_t step = (intervals + max_points - 1) / max_points;
      const auto wall = [&](size_t row) {
        return static_cast<uint64_t>(static_cast<int64_t>(cs.rows[row][tc]) + wall_offset_ns);
      };
      if (!s.cumulative) {
        // Sampled values: the largest of each bucket, so spikes stay visible.
        for (size_t k = 0; k < idx.size(); k += step) {
          const size_t end = std::min(idx.size(), k + step);
          uint64_t mx = 0;
          for (size_t m = k; m < end; ++m) mx = std::max(mx, cs.rows[idx[m]][s.col]);
          t.wall_ns.push_back(wall(idx[end - 1]));
          t.values.push_back(static_cast<double>(mx));
        }
      } else {
        // Rates: the increase over each bucket divided by its length.
        size_t prev = 0;
        while (prev < intervals) {
          const size_t next = std::min(intervals, prev + step);
          uint64_t inc = 0;
          for (size_t m = prev + 1; m <= next; ++m)
            inc += delta(cs.rows[idx[m - 1]][s.col], cs.rows[idx[m]][s.col]);
          const uint64_t t0 = cs.rows[idx[prev]][tc], t1 = cs.rows[idx[next]][tc];
          const double dt_s = t1 > t0 ? static_cast<double>(t1 - t0) / 1e9 : 0.0;
          t.wall_ns.push_back(wall(idx[next]));
          t.values.push_back(dt_s > 0 ? static_cast<double>(inc) / dt_s : 0.0);
          prev = next;
        }
      }
      out->push_back(std::move(t));
    }
  }
}

}  // namespace fabtrace::report
