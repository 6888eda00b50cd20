// The byte form of a SlowestPart (slowest_ops.h), which `fabtrace report
// --mpi` gathers from every process: every field, doubles bit for bit.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "userspace/report/byte_form.h"
#include "userspace/report/slowest_ops.h"

namespace fabtrace::report {

namespace {

using byte_form::Reader;
using byte_form::Writer;

void put(Writer& w, const SlowOp& o) {
  for (const std::string* s : {&o.host, &o.rank, &o.local, &o.remote, &o.op}) w.str(*s);
  w.num<int64_t>(o.pid);
  w.num(o.tid);
  w.num(o.bytes);
  w.flag(o.size_unknown);
  w.flag(o.error);
  w.num(o.start_mono_ns);
  w.num(o.start_wall_ns);
  for (double v : {o.start_job_s, o.dur_ns, o.row_p50_ns, o.ratio}) w.num(v);
}

void get(Reader& r, SlowOp* o) {
  for (std::string* s : {&o->host, &o->rank, &o->local, &o->remote, &o->op}) *s = r.str();
  o->pid = static_cast<long>(r.num<int64_t>());
  o->tid = r.num<uint32_t>();
  o->bytes = r.num<uint64_t>();
  o->size_unknown = r.flag();
  o->error = r.flag();
  o->start_mono_ns = r.num<int64_t>();
  o->start_wall_ns = r.num<int64_t>();
  for (double* v : {&o->start_job_s, &o->dur_ns, &o->row_p50_ns, &o->ratio}) *v = r.num<double>();
}

void put(Writer& w, const TimelineCover& c) {
  for (const std::string* s : {&c.host, &c.rank, &c.spec, &c.signal}) w.str(*s);
  w.num<int64_t>(c.pid);
  w.num<uint64_t>(c.spans.size());
  for (const TimelineCover::Span& s : c.spans) {
    w.num(s.from);
    w.num(s.to);
  }
  w.flag(c.whole);
  for (uint64_t v : {c.ops, c.marks, c.outside}) w.num(v);
}

void get(Reader& r, TimelineCover* c) {
  for (std::string* s : {&c->host, &c->rank, &c->spec, &c->signal}) *s = r.str();
  c->pid = static_cast<long>(r.num<int64_t>());
  c->spans.resize(r.count(2 * sizeof(int64_t)));
  for (TimelineCover::Span& s : c->spans) {
    s.from = r.num<int64_t>();
    s.to = r.num<int64_t>();
  }
  c->whole = r.flag();
  for (uint64_t* v : {&c->ops, &c->marks, &c->outside}) *v = r.num<uint64_t>();
}

// The smallest byte form of a SlowOp / TimelineCover / warning: its length prefixes.
constexpr size_t kMinOp = 5 * sizeof(uint64_t), kMinCover = 4 * sizeof(uint64_t);

}  // namespace

void encode_slowest_part(const SlowestPart& p, std::string* out) {
  Writer w(out);
  for (const std::vector<SlowOp>* v : {&p.ops, &p.recvs}) {
    w.num<uint64_t>(v->size());
    for (const SlowOp& o : *v) put(w, o);
  }
  w.num<uint64_t>(p.covers.size());
  for (const auto& [rank, c] : p.covers) {
    w.num(rank);
    put(w, c);
  }
  w.num<uint64_t>(p.warnings.size());
  for (const auto& [rank, s] : p.warnings) {
    w.num(rank);
    w.str(s);
  }
  w.num(p.ops_seen);
}

bool decode_slowest_part(const char* bytes, size_t size, size_t* pos, SlowestPart* p) {
  Reader r(bytes, size, *pos);
  *p = SlowestPart();
  for (std::vector<SlowOp>* v : {&p->ops, &p->recvs}) {
    v->resize(r.count(kMinOp));
    for (SlowOp& o : *v) get(r, &o);
  }
  p->covers.resize(r.count(kMinCover));
  for (auto& [rank, c] : p->covers) {
    rank = r.num<uint32_t>();
    get(r, &c);
  }
  p->warnings.resize(r.count(sizeof(uint64_t)));
  for (auto& [rank, s] : p->warnings) {
    rank = r.num<uint32_t>();
    s = r.str();
  }
  p->ops_seen = r.num<uint64_t>();
  if (!r.ok()) return false;
  *pos = r.pos();
  return true;
}

}  // namespace fabtrace::report
