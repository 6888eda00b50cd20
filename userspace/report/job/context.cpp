// The byte form of a job's context (job/context.h). A rank's report goes in
// the parsed-report form (parsed_report.h), its links already moved out.
#include "userspace/report/job/context.h"

#include <cstdint>
#include <string>
#include <utility>

#include "userspace/report/job/byte_form.h"
#include "userspace/report/job/parsed_report.h"

namespace fabtrace::report {

namespace {

using byte_form::Reader;
using byte_form::Writer;

void put(Writer& w, const Rank& r) {
  // Who and when travel in the report's own bytes, at the end.
  for (const std::string* s : {&r.report_path, &r.oplog_path, &r.counters_path}) w.str(*s);
  for (uint64_t v : {uint64_t{r.link_count}, uint64_t{r.unlisted_locals}, r.oplog_ops,
                     r.oplog_dropped, r.counter_samples})
    w.num(v);
  w.flag(r.oplog_truncated);
  w.flag(r.oplog_ended);
  w.num<uint64_t>(r.counter_devices.size());
  for (const std::string& d : r.counter_devices) w.str(d);
  ParsedReport p;
  p.ok = true;
  p.report = r.report;  // without links (build_job_tables moved them)
  std::string bytes;
  encode_parsed_report(p, &bytes);
  w.str(bytes);
}

bool get(Reader& rd, Rank* r) {
  for (std::string* s : {&r->report_path, &r->oplog_path, &r->counters_path}) *s = rd.str();
  r->link_count = static_cast<size_t>(rd.num<uint64_t>());
  r->unlisted_locals = static_cast<size_t>(rd.num<uint64_t>());
  r->oplog_ops = rd.num<uint64_t>();
  r->oplog_dropped = rd.num<uint64_t>();
  r->counter_samples = rd.num<uint64_t>();
  r->oplog_truncated = rd.flag();
  r->oplog_ended = rd.flag();
  r->counter_devices.resize(rd.count(sizeof(uint64_t)));
  for (std::string& d : r->counter_devices) d = rd.str();
  const std::string bytes = rd.str();
  if (!rd.ok()) return false;
  ParsedReport p;
  size_t pos = 0;
  if (!decode_parsed_report(bytes.data(), bytes.size(), &pos, &p) || pos != bytes.size())
    return false;
  r->report = std::move(p.report);
  return true;
}

void put(Writer& w, const Stall& s) {
  w.str(s.host);
  w.str(s.rank);
  w.num<int64_t>(s.pid);
  w.num(s.cq.id);
  w.num(s.cq.polls);
  for (uint64_t g : s.cq.gaps) w.num(g);
  w.num(s.cq.max_gap_ns);
  w.num(s.cq.max_gap_end_s);
  w.num(s.end_mono_ns);
  w.num(s.end_wall_ns);
  w.num(s.end_job_s);
  w.flag(s.kernel_logged);
  w.flag(s.has_cause);
  w.str(s.cause.verdict);
}

void get(Reader& r, Stall* s) {
  s->host = r.str();
  s->rank = r.str();
  s->pid = static_cast<long>(r.num<int64_t>());
  s->cq.id = r.num<uint32_t>();
  s->cq.polls = r.num<uint64_t>();
  for (uint64_t& g : s->cq.gaps) g = r.num<uint64_t>();
  s->cq.max_gap_ns = r.num<double>();
  s->cq.max_gap_end_s = r.num<double>();
  s->end_mono_ns = r.num<uint64_t>();
  s->end_wall_ns = r.num<uint64_t>();
  s->end_job_s = r.num<double>();
  s->kernel_logged = r.flag();
  s->has_cause = r.flag();
  s->cause.verdict = r.str();
}

}  // namespace

void encode_job_context(const Job& job, std::string* out) {
  Writer w(out);
  w.num(job.first_wall_ns);
  w.num(job.last_wall_ns);
  w.num<uint64_t>(job.ranks.size());
  for (const Rank& r : job.ranks) put(w, r);
  w.num<uint64_t>(job.stalls.size());
  for (const Stall& s : job.stalls) put(w, s);
}

bool decode_job_context(const char* bytes, size_t size, Job* job) {
  Reader r(bytes, size, 0);
  job->first_wall_ns = r.num<uint64_t>();
  job->last_wall_ns = r.num<uint64_t>();
  job->ranks.resize(r.count(6 * sizeof(uint64_t)));
  for (Rank& rk : job->ranks)
    if (!get(r, &rk)) return false;
  job->stalls.resize(r.count(2 * sizeof(uint64_t)));
  for (Stall& s : job->stalls) get(r, &s);
  return r.ok() && r.pos() == size;
}

}  // namespace fabtrace::report
