// The byte form of a SlowestPart (slowest_ops.h), which `fabtrace report
// --mpi` gathers from every process: every field, doubles bit for bit.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "userspace/report/analysis/slowest_ops.h"
#include "userspace/report/job/byte_form.h"

namespace fabtrace::report {

namespace {

using byte_form::Reader;
using byte_form::Writer;

template <typename IO, typename S>
void slow_op(IO& io, S& o) {
  io(o.host, o.rank, o.local, o.remote, o.op, o.pid, o.tid, o.bytes, o.size_unknown, o.error);
  io(o.start_mono_ns, o.start_wall_ns, o.start_job_s, o.dur_ns, o.row_p50_ns, o.ratio);
}

template <typename IO, typename S>
void cover(IO& io, S& c) {
  io(c.host, c.rank, c.spec, c.signal, c.pid);
  io.list(c.spans, 2 * sizeof(int64_t), [&](auto& s) { io(s.from, s.to); });
  io(c.whole, c.ops, c.marks, c.outside);
}

// The smallest byte form of a SlowOp / TimelineCover / warning: its length prefixes.
constexpr size_t kMinOp = 5 * sizeof(uint64_t), kMinCover = 4 * sizeof(uint64_t);

template <typename IO, typename S>
void slowest_part(IO& io, S& p) {
  io.list(p.ops, kMinOp, [&](auto& o) { slow_op(io, o); });
  io.list(p.recvs, kMinOp, [&](auto& o) { slow_op(io, o); });
  io.list(p.covers, kMinCover, [&](auto& rc) {
    io(rc.first);
    cover(io, rc.second);
  });
  io.list(p.warnings, sizeof(uint64_t), [&](auto& rw) { io(rw.first, rw.second); });
  io(p.ops_seen);
}

}  // namespace

void encode_slowest_part(const SlowestPart& p, std::string* out) {
  Writer w(out);
  slowest_part(w, p);
}

bool decode_slowest_part(const char* bytes, size_t size, size_t* pos, SlowestPart* p) {
  Reader r(bytes, size, *pos);
  *p = SlowestPart();
  slowest_part(r, *p);
  if (!r.ok()) return false;
  *pos = r.pos();
  return true;
}

}  // namespace fabtrace::report
