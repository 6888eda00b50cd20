// The byte form of a RankTimeline (post_evidence.h), which `fabtrace report
// --mpi` gathers from the processes that read the ranks' oplogs.
#include <cstdint>
#include <string>

#include "userspace/report/analysis/post_evidence.h"
#include "userspace/report/job/byte_form.h"

namespace fabtrace::report {

namespace {

template <typename IO, typename S>
void rank_timeline(IO& io, S& t) {
  io(t.rank, t.read, t.residual_ns, t.records);
  io.list(t.links, sizeof(uint32_t) + 2 * sizeof(uint64_t),
          [&](auto& l) { io(l.id, l.local, l.remote); });
  io.list(t.ops, sizeof(uint32_t) + 2 + 3 * sizeof(uint64_t),
          [&](auto& o) { io(o.link, o.kind, o.size_unknown, o.start, o.end, o.bytes); });
}

}  // namespace

void encode_rank_timeline(const RankTimeline& t, std::string* out) {
  byte_form::Writer w(out);
  rank_timeline(w, t);
}

bool decode_rank_timeline(const char* bytes, size_t size, size_t* pos, RankTimeline* t) {
  byte_form::Reader r(bytes, size, *pos);
  *t = RankTimeline();
  rank_timeline(r, *t);
  if (!r.ok()) return false;
  *pos = r.pos();
  return true;
}

}  // namespace fabtrace::report
