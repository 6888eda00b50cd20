// The byte form of a ParsedReport (parsed_report.h): fixed-width little-endian
// integers, doubles as their bits, strings and lists prefixed by their length.
// Only processes of one `mpirun` exchange it (same binary, same machine type),
// so it has no version: it is not a file format.
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "userspace/report/byte_form.h"
#include "userspace/report/parsed_report.h"

namespace fabtrace::report {

namespace {

using byte_form::Reader;
using byte_form::Writer;

// An OpStats after its op's name (the byte form of an OpRow, whether the
// name is its own or a link row's).
void put(Writer& w, const OpStats& o) {
  w.num(o.bytes);
  w.flag(o.size_unknown);
  for (uint64_t v : {o.count, o.errors, o.untimed, o.ring_full, o.unfinished, o.eagain, o.refused,
                     o.within_50us})
    w.num(v);
  for (double v : {o.avg_ns, o.min_ns, o.max_ns, o.p50_ns, o.p99_ns, o.gbps}) w.num(v);
  w.flag(o.recv);
}

void get(Reader& r, OpStats* o) {
  o->bytes = r.num<uint64_t>();
  o->size_unknown = r.flag();
  for (uint64_t* v : {&o->count, &o->errors, &o->untimed, &o->ring_full, &o->unfinished, &o->eagain,
                      &o->refused, &o->within_50us})
    *v = r.num<uint64_t>();
  for (double* v : {&o->avg_ns, &o->min_ns, &o->max_ns, &o->p50_ns, &o->p99_ns, &o->gbps})
    *v = r.num<double>();
  o->recv = r.flag();
}

void put(Writer& w, const OpRow& o) {
  w.str(o.op);
  put(w, static_cast<const OpStats&>(o));
}

void get(Reader& r, OpRow* o) {
  o->op = r.str();
  get(r, static_cast<OpStats*>(o));
}

void put(Writer& w, const NicReport& n) {
  w.str(n.domain);
  w.num<uint64_t>(n.locals.size());
  for (const std::string& l : n.locals) w.str(l);
  w.num(n.ops);
  w.num(n.bytes);
  w.num(n.busy_ns);
  w.num(n.gbps);
  w.num(n.window_ns);
  w.num<uint64_t>(n.windows.size());
  for (const NicWindow& win : n.windows) {
    w.num(win.index);
    w.num(win.busy_ns);
    w.num(win.bytes);
  }
  for (double v : {n.peak_limit_ns, n.peak_gbps, n.peak_start_s, n.peak_span_ns, n.peak_busy_ns})
    w.num(v);
  w.num(n.peak_bytes);
  w.num(n.unbinned_busy_ns);
  w.num(n.unbinned_bytes);
}

void get(Reader& r, NicReport* n) {
  n->domain = r.str();
  n->locals.resize(r.count(sizeof(uint64_t)));
  for (std::string& l : n->locals) l = r.str();
  n->ops = r.num<uint64_t>();
  n->bytes = r.num<uint64_t>();
  n->busy_ns = r.num<double>();
  n->gbps = r.num<double>();
  n->window_ns = r.num<double>();
  n->windows.resize(r.count(3 * sizeof(uint64_t)));
  for (NicWindow& win : n->windows) {
    win.index = r.num<uint64_t>();
    win.busy_ns = r.num<double>();
    win.bytes = r.num<uint64_t>();
  }
  for (double* v :
       {&n->peak_limit_ns, &n->peak_gbps, &n->peak_start_s, &n->peak_span_ns, &n->peak_busy_ns})
    *v = r.num<double>();
  n->peak_bytes = r.num<uint64_t>();
  n->unbinned_busy_ns = r.num<double>();
  n->unbinned_bytes = r.num<uint64_t>();
}

void put(Writer& w, const CqReport& c) {
  w.num(c.id);
  w.num(c.polls);
  for (uint64_t g : c.gaps) w.num(g);
  w.num(c.max_gap_ns);
  w.num(c.max_gap_end_s);
}

void get(Reader& r, CqReport* c) {
  c->id = r.num<uint32_t>();
  c->polls = r.num<uint64_t>();
  for (uint64_t& g : c->gaps) g = r.num<uint64_t>();
  c->max_gap_ns = r.num<double>();
  c->max_gap_end_s = r.num<double>();
}

// One field of FABTRACE_JOB_META_FIELDS (common/job_meta.h), by its type.
void put_field(Writer& w, const std::string& v) { w.str(v); }
void put_field(Writer& w, uint64_t v) { w.num(v); }
void get_field(Reader& r, std::string* v) { *v = r.str(); }
void get_field(Reader& r, uint64_t* v) { *v = r.num<uint64_t>(); }

void put(Writer& w, const ProcessReport& p) {
  for (const std::string* s : {&p.host, &p.rank, &p.providers, &p.source, &p.fabtrace_version})
    w.str(*s);
#define FABTRACE_JOB_FIELD_PUT(name, kind) put_field(w, p.job.name);
  FABTRACE_JOB_META_FIELDS(FABTRACE_JOB_FIELD_PUT)
#undef FABTRACE_JOB_FIELD_PUT
  w.num<int64_t>(p.pid);
  w.num(p.start_mono_ns);
  w.num(p.start_wall_ns);
  w.num(p.duration_s);
  w.flag(p.tsc);
  w.num(p.ns_per_tick);
  w.num(p.clock_residual_ns);
  for (uint64_t v : {p.clock_pairs, p.ring_slots, p.ring_full, p.cells_full}) w.num(v);
  w.num<uint64_t>(p.nics.size());
  for (const NicReport& n : p.nics) put(w, n);
  w.num<uint64_t>(p.cqs.size());
  for (const CqReport& c : p.cqs) put(w, c);
  // Links: what is left of them (parse_reports moves their rows into ParsedReport::rows).
  w.num<uint64_t>(p.links.size());
  for (const LinkReport& l : p.links) {
    w.str(l.local);
    w.str(l.remote);
    w.num<uint64_t>(l.rows.size());
    for (const OpRow& o : l.rows) put(w, o);
  }
}

void get(Reader& r, ProcessReport* p) {
  for (std::string* s : {&p->host, &p->rank, &p->providers, &p->source, &p->fabtrace_version})
    *s = r.str();
#define FABTRACE_JOB_FIELD_GET(name, kind) get_field(r, &p->job.name);
  FABTRACE_JOB_META_FIELDS(FABTRACE_JOB_FIELD_GET)
#undef FABTRACE_JOB_FIELD_GET
  p->pid = static_cast<long>(r.num<int64_t>());
  p->start_mono_ns = r.num<uint64_t>();
  p->start_wall_ns = r.num<uint64_t>();
  p->duration_s = r.num<double>();
  p->tsc = r.flag();
  p->ns_per_tick = r.num<double>();
  p->clock_residual_ns = r.num<double>();
  for (uint64_t* v : {&p->clock_pairs, &p->ring_slots, &p->ring_full, &p->cells_full})
    *v = r.num<uint64_t>();
  p->nics.resize(r.count(sizeof(uint64_t)));
  for (NicReport& n : p->nics) get(r, &n);
  p->cqs.resize(r.count(sizeof(uint64_t)));
  for (CqReport& c : p->cqs) get(r, &c);
  p->links.resize(r.count(3 * sizeof(uint64_t)));
  for (LinkReport& l : p->links) {
    l.local = r.str();
    l.remote = r.str();
    l.rows.resize(r.count(sizeof(uint64_t)));
    for (OpRow& o : l.rows) get(r, &o);
  }
}

void put(Writer& w, const LinkRow& l) {
  for (const std::string* s : {&l.host(), &l.rank(), &l.local(), &l.remote()}) w.str(*s);
  w.num<int64_t>(l.pid());
  w.str(l.op());
  put(w, l.row);
  w.num(l.outlier_ratio);
  w.flag(l.kernel_logged());
  w.num(l.retrans());
  w.num(l.drops());
  const PostEvidence& p = l.posted();
  w.num(p.logged);
  w.num(p.matched);
  w.num(p.late);
  w.num(p.late_median_ns);
  w.str(p.unknown());
}

// The names of the previous row decoded: a report's rows repeat them, and
// interning (a lock and a hash) is skipped when they do.
struct RowNames {
  Interned host, rank, local, remote, op, unknown;
  const RowOwner* owner = &no_owner();
  static void take(Interned* held, std::string s) {
    if (held->str() != s) *held = intern(s);
  }
};

// +0.0 exactly (not -0.0): a row without evidence.
bool is_zero_bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b == 0;
}

void get(Reader& r, LinkRow* l, RowNames* n) {
  for (Interned* s : {&n->host, &n->rank, &n->local, &n->remote}) RowNames::take(s, r.str());
  const long pid = static_cast<long>(r.num<int64_t>());
  if (n->owner->host != n->host.str() || n->owner->rank != n->rank.str() || n->owner->pid != pid)
    n->owner = &intern_owner(n->host.str(), n->rank.str(), pid);
  l->set_owner(*n->owner);
  l->set_link(n->local, n->remote);
  RowNames::take(&n->op, r.str());
  l->set_op(n->op);
  get(r, &l->row);
  l->outlier_ratio = r.num<double>();
  const bool logged = r.flag();
  const uint64_t retrans = r.num<uint64_t>();
  const uint64_t drops = r.num<uint64_t>();
  l->set_kernel(logged, retrans, drops);
  PostEvidence p;
  p.logged = r.num<uint64_t>();
  p.matched = r.num<uint64_t>();
  p.late = r.num<uint64_t>();
  p.late_median_ns = r.num<double>();
  RowNames::take(&n->unknown, r.str());
  p.set_unknown(n->unknown);
  // Held apart only when it says more than a reason.
  if (p.logged || p.matched || p.late || !is_zero_bits(p.late_median_ns))
    l->posted_mut() = p;
  else if (!p.unknown().empty())
    l->set_posted_unknown(p.unknown());
}

}  // namespace

void encode_parsed_report(const ParsedReport& p, std::string* out) {
  Writer w(out);
  w.flag(p.ok);
  w.str(p.why);
  put(w, p.report);
  w.num<uint64_t>(p.rows.size());
  for (const LinkRow& l : p.rows) put(w, l);
  w.num<uint64_t>(p.link_count);
  w.num<uint64_t>(p.unlisted_locals);
}

bool decode_parsed_report(const char* bytes, size_t size, size_t* pos, ParsedReport* p) {
  if (*pos > size) return false;
  Reader r(bytes, size, *pos);
  *p = ParsedReport();
  p->ok = r.flag();
  p->why = r.str();
  get(r, &p->report);
  // A row is at least its four string lengths, pid and op length.
  p->rows.resize(r.count(6 * sizeof(uint64_t)));
  RowNames names;
  for (LinkRow& l : p->rows) get(r, &l, &names);
  p->link_count = static_cast<size_t>(r.num<uint64_t>());
  p->unlisted_locals = static_cast<size_t>(r.num<uint64_t>());
  if (!r.ok()) return false;
  *pos = r.pos();
  return true;
}

}  // namespace fabtrace::report
