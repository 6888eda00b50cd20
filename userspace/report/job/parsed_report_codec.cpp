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

#include "userspace/report/job/byte_form.h"
#include "userspace/report/job/parsed_report.h"

namespace fabtrace::report {

namespace {

using byte_form::Reader;
using byte_form::Writer;

// An OpStats after its op's name (the byte form of an OpRow, whether the
// name is its own or a link row's).
template <typename IO, typename S>
void op_stats(IO& io, S& o) {
  io(o.bytes, o.size_unknown, o.count);
#define FABTRACE_OUTCOME_IO(m, words) io(o.m);
  FABTRACE_OP_OUTCOMES(FABTRACE_OUTCOME_IO)
#undef FABTRACE_OUTCOME_IO
  io(o.within_50us);
#define FABTRACE_TIME_IO(m) io(o.m);
  FABTRACE_OP_TIMES(FABTRACE_TIME_IO)
#undef FABTRACE_TIME_IO
  io(o.recv);
}

template <typename IO, typename S>
void nic(IO& io, S& n) {
  io(n.domain);
  io.list(n.locals, sizeof(uint64_t), [&](auto& l) { io(l); });
#define FABTRACE_NIC_IO(kind, m, key) io(n.m);
  FABTRACE_NIC_TOTALS(FABTRACE_NIC_IO)
  io.list(n.bins, 3 * sizeof(uint64_t), [&](auto& w) { io(w.index, w.busy_ns, w.bytes); });
  FABTRACE_NIC_PEAK(FABTRACE_NIC_IO)
#undef FABTRACE_NIC_IO
}

template <typename IO, typename S>
void process_report(IO& io, S& p) {
  io(p.host, p.rank, p.providers, p.source, p.fabtrace_version);
#define FABTRACE_JOB_FIELD_IO(name, kind) io(p.job.name);
  FABTRACE_JOB_META_FIELDS(FABTRACE_JOB_FIELD_IO)
#undef FABTRACE_JOB_FIELD_IO
  io(p.pid, p.start_mono_ns, p.start_wall_ns, p.duration_s, p.tsc, p.ns_per_tick);
  io(p.clock_residual_ns, p.clock_pairs, p.ring_slots, p.ring_full, p.cells_full);
  io.list(p.nics, sizeof(uint64_t), [&](auto& n) { nic(io, n); });
  io.list(p.cqs, sizeof(uint64_t),
          [&](auto& c) { io(c.id, c.polls, c.gaps, c.max_gap_ns, c.max_gap_end_s); });
  // Links: what is left of them (parse_reports moves their rows into ParsedReport::rows).
  io.list(p.links, 3 * sizeof(uint64_t), [&](auto& l) {
    io(l.local, l.remote);
    io.list(l.rows, sizeof(uint64_t), [&](auto& o) {
      io(o.op);
      op_stats(io, o);
    });
  });
}

void put(Writer& w, const LinkRow& l) {
  for (const std::string* s : {&l.host(), &l.rank(), &l.local(), &l.remote()}) w.str(*s);
  w.num<int64_t>(l.pid());
  w.str(l.op());
  op_stats(w, l.row);
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
  op_stats(r, l->row);
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
  process_report(w, p.report);
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
  process_report(r, p->report);
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
