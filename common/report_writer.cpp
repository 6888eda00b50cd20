#include "common/report_writer.h"

#include <ctime>
#include <string>

#include "common/json_writer.h"
#include "common/printable.h"
#include "common/version.h"

namespace fabtrace {

const char* const kGapClassNames[kGapClasses] = {"<10us", "<100us", "<1ms",
                                                 "<10ms", "<100ms", ">=100ms"};

namespace {
constexpr const char* kP = "[fabtrace]";

void text_row(std::FILE* out, const OpRow& o) {
  if (o.size_unknown)
    std::fprintf(out, "%s   %-20s size unknown, posted %llu B %9llu ops", kP, o.op.c_str(),
                 static_cast<unsigned long long>(o.bytes),
                 static_cast<unsigned long long>(o.count));
  else
    std::fprintf(out, "%s   %-20s %10llu B %9llu ops", kP, o.op.c_str(),
                 static_cast<unsigned long long>(o.bytes),
                 static_cast<unsigned long long>(o.count));
  if (o.count)
    std::fprintf(out, "  avg %9.3f  p50 %9.3f  p99 %9.3f  min %9.3f  max %9.3f us", o.avg_ns / 1e3,
                 o.p50_ns / 1e3, o.p99_ns / 1e3, o.min_ns / 1e3, o.max_ns / 1e3);
  if (o.count && !o.size_unknown) std::fprintf(out, "  ~%7.3f GB/s", o.gbps);
  if (o.recv && o.count)
    std::fprintf(out, "  [<50us of post %llu = %.1f%%]",
                 static_cast<unsigned long long>(o.within_50us),
                 100.0 * static_cast<double>(o.within_50us) / static_cast<double>(o.count));
#define FABTRACE_OUTCOME_TEXT(m, words) \
  if (o.m) std::fprintf(out, "  [%llu %s]", static_cast<unsigned long long>(o.m), words);
  FABTRACE_OP_OUTCOMES(FABTRACE_OUTCOME_TEXT)
#undef FABTRACE_OUTCOME_TEXT
  std::fputc('\n', out);
}

// One field of FABTRACE_JOB_META_FIELDS (common/job_meta.h), by its kind.
void job_field_json(JsonWriter& j, const char* name, const std::string& v, job_field::always) {
  j.field(name, v);
}
void job_field_json(JsonWriter& j, const char* name, const std::string& v, job_field::if_set) {
  if (!v.empty()) j.field(name, v);
}
void job_field_json(JsonWriter& j, const char* name, uint64_t v, job_field::wall_ns) {
  j.field(name, v);
}
}  // namespace

std::string job_line(const ProcessReport& r) {
  std::string t = "fabtrace " + (r.fabtrace_version.empty() ? std::string(version())
                                                            : printable(r.fabtrace_version));
  t += ", libfabric " + (r.job.libfabric.empty() ? std::string("?") : printable(r.job.libfabric));
  const std::string job = job_text(r.job);
  if (!job.empty()) t += ", " + job;
  if (r.job.start_wall_ns) t += ", started " + utc_time_text(r.job.start_wall_ns);
  if (!r.job.run_id.empty()) t += ", " + run_id_text(r.job.run_id);
  return t;
}

std::string run_id_text(const std::string& id) { return "fabtrace run " + printable(id); }

std::string utc_time_text(uint64_t wall_ns) {
  const time_t s = static_cast<time_t>(wall_ns / 1000000000ULL);
  struct tm tm {};
  char buf[64];
  if (!gmtime_r(&s, &tm) || !std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm))
    return "?";
  return buf;
}

void write_report_text(std::FILE* out, const ProcessReport& r) {
  std::fprintf(out,
               "%s host=%s rank=%s pid=%ld providers=%s duration=%.3f s clock=%s (%.6f ns/tick, "
               "fit residual %.0f ns over %llu pairs)\n",
               kP, r.host.c_str(), r.rank.c_str(), r.pid, r.providers.c_str(), r.duration_s,
               r.tsc ? "tsc" : "clock_gettime", r.ns_per_tick, r.clock_residual_ns,
               static_cast<unsigned long long>(r.clock_pairs));
  std::fprintf(out, "%s %s\n", kP, job_line(r).c_str());
  std::fprintf(out, "%s command: %s\n", kP, r.job.command.empty() ? "?" : r.job.command.c_str());
  for (const NicReport& n : r.nics) {
    std::string locals;
    for (const std::string& a : n.locals) locals += (locals.empty() ? "" : " ") + a;
    std::fprintf(out,
                 "%s NIC %-12s %-26s %10llu ops %16llu bytes  busy %12.3f ms  achieved %8.3f GB/s",
                 kP, n.domain.c_str(), locals.c_str(), static_cast<unsigned long long>(n.ops),
                 static_cast<unsigned long long>(n.bytes), n.busy_ns / 1e6, n.gbps);
    if (n.peak_gbps > 0)
      std::fprintf(out, "  peak %8.3f GB/s (%llu bytes, %.3f ms busy in %.3f ms at t+%.3f s)",
                   n.peak_gbps, static_cast<unsigned long long>(n.peak_bytes), n.peak_busy_ns / 1e6,
                   n.peak_span_ns / 1e6, n.peak_start_s);
    if (n.unbinned_bytes || n.unbinned_busy_ns > 0)
      std::fprintf(out, "  [%.3f ms busy, %llu bytes in no window]", n.unbinned_busy_ns / 1e6,
                   static_cast<unsigned long long>(n.unbinned_bytes));
    std::fputc('\n', out);
  }
  for (const CqReport& c : r.cqs) {
    std::fprintf(out, "%s CQ#%u polls %llu  gaps:", kP, c.id,
                 static_cast<unsigned long long>(c.polls));
    for (int i = 0; i < kGapClasses; ++i)
      std::fprintf(out, "  %s %llu", kGapClassNames[i], static_cast<unsigned long long>(c.gaps[i]));
    std::fprintf(out, "  max %.3f ms at t+%.3f s\n", c.max_gap_ns / 1e6, c.max_gap_end_s);
  }
  for (const LinkReport& l : r.links) {
    std::fprintf(out, "%s === %s -> %s ===\n", kP, l.local.c_str(), l.remote.c_str());
    for (const OpRow& o : l.rows) text_row(out, o);
  }
  if (r.ring_full)
    std::fprintf(
        out, "%s %llu ops not timed: in-flight ring full (%llu records; raise FABTRACE_INFLIGHT)\n",
        kP, static_cast<unsigned long long>(r.ring_full),
        static_cast<unsigned long long>(r.ring_slots));
  if (r.cells_full)
    std::fprintf(out, "%s %llu ops not aggregated: row table full (raise FABTRACE_MAX_CELLS)\n", kP,
                 static_cast<unsigned long long>(r.cells_full));
}

void write_report_json(std::FILE* out, const ProcessReport& r) {
  JsonWriter j(out);
  j.begin_object();
  j.field("format", kReportFormatName).field("version", kReportFormatVersion);
  j.field("fabtrace_version", r.fabtrace_version.empty() ? version() : r.fabtrace_version);
  j.key("job").begin_object();
#define FABTRACE_JOB_FIELD_JSON(name, kind) job_field_json(j, #name, r.job.name, job_field::kind{});
  FABTRACE_JOB_META_FIELDS(FABTRACE_JOB_FIELD_JSON)
#undef FABTRACE_JOB_FIELD_JSON
  j.end_object();
  j.field("host", r.host).field("rank", r.rank).field("pid", static_cast<int64_t>(r.pid));
  j.field("providers", r.providers);
  if (!r.source.empty()) j.field("source", r.source);
  j.field("start_mono_ns", r.start_mono_ns).field("start_wall_ns", r.start_wall_ns);
  j.field("duration_s", r.duration_s);
  j.key("clock").begin_object();
  j.field("source", r.tsc ? "tsc" : "clock_gettime").field("ns_per_tick", r.ns_per_tick);
  j.field("residual_ns", r.clock_residual_ns).field("pairs", r.clock_pairs);
  j.end_object();
  j.field("ring_slots", r.ring_slots).field("ring_full", r.ring_full);
  j.field("cells_full", r.cells_full);
  j.key("nics").begin_array();
  for (const NicReport& n : r.nics) {
    j.begin_object();
    j.field("domain", n.domain);
    j.key("locals").begin_array();
    for (const std::string& a : n.locals) j.value(a);
    j.end_array();
#define FABTRACE_NIC_JSON(kind, m, key) j.field(key, n.m);
    FABTRACE_NIC_TOTALS(FABTRACE_NIC_JSON)
    j.key("windows").begin_array();  // [index, busy_ns, bytes], windows with activity only
    for (const NicTimeBin& w : n.bins) {
      j.begin_array();
      j.value(w.index).value(w.busy_ns).value(w.bytes);
      j.end_array();
    }
    j.end_array();
    FABTRACE_NIC_PEAK(FABTRACE_NIC_JSON)
#undef FABTRACE_NIC_JSON
    j.end_object();
  }
  j.end_array();
  j.key("cqs").begin_array();
  for (const CqReport& c : r.cqs) {
    j.begin_object();
    j.field("id", static_cast<uint64_t>(c.id)).field("polls", c.polls);
    j.key("gaps").begin_object();
    for (int i = 0; i < kGapClasses; ++i) j.field(kGapClassNames[i], c.gaps[i]);
    j.end_object();
    j.field("max_gap_ns", c.max_gap_ns).field("max_gap_end_s", c.max_gap_end_s);
    j.end_object();
  }
  j.end_array();
  j.key("links").begin_array();
  for (const LinkReport& l : r.links) {
    j.begin_object();
    j.field("local", l.local).field("remote", l.remote);
    j.key("ops").begin_array();
    for (const OpRow& o : l.rows) {
      j.begin_object();
      j.field("op", o.op).field("bytes", o.bytes).field("count", o.count);
      if (o.size_unknown) j.field("size_unknown", true);
#define FABTRACE_OUTCOME_JSON(m, words) j.field(#m, o.m);
      FABTRACE_OP_OUTCOMES(FABTRACE_OUTCOME_JSON)
#undef FABTRACE_OUTCOME_JSON
      if (o.recv) j.field("completed_within_50us", o.within_50us);
#define FABTRACE_TIME_JSON(m) j.field(#m, o.m);
      FABTRACE_OP_TIMES(FABTRACE_TIME_JSON)
#undef FABTRACE_TIME_JSON
      j.end_object();
    }
    j.end_array();
    j.end_object();
  }
  j.end_array();
  j.end_object();
  std::fputc('\n', out);
}

}  // namespace fabtrace
