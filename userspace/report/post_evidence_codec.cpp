// The byte form of a RankTimeline (post_evidence.h), which `fabtrace report
// --mpi` gathers from the processes that read the ranks' oplogs.
#include <cstdint>
#include <string>

#include "userspace/report/byte_form.h"
#include "userspace/report/post_evidence.h"

namespace fabtrace::report {

void encode_rank_timeline(const RankTimeline& t, std::string* out) {
  byte_form::Writer w(out);
  w.num(t.rank);
  w.flag(t.read);
  w.num(t.residual_ns);
  w.num(t.records);
  w.num<uint64_t>(t.links.size());
  for (const RankTimeline::Link& l : t.links) {
    w.num(l.id);
    w.str(l.local);
    w.str(l.remote);
  }
  w.num<uint64_t>(t.ops.size());
  for (const RankTimeline::Op& o : t.ops) {
    w.num(o.link);
    w.num(o.kind);
    w.flag(o.size_unknown);
    w.num(o.start);
    w.num(o.end);
    w.num(o.bytes);
  }
}

bool decode_rank_timeline(const char* bytes, size_t size, size_t* pos, RankTimeline* t) {
  byte_form::Reader r(bytes, size, *pos);
  *t = RankTimeline();
  t->rank = r.num<uint32_t>();
  t->read = r.flag();
  t->residual_ns = r.num<double>();
  t->records = r.num<uint64_t>();
  t->links.resize(r.count(sizeof(uint32_t) + 2 * sizeof(uint64_t)));
  for (RankTimeline::Link& l : t->links) {
    l.id = r.num<uint32_t>();
    l.local = r.str();
    l.remote = r.str();
  }
  t->ops.resize(r.count(sizeof(uint32_t) + 2 + 3 * sizeof(uint64_t)));
  for (RankTimeline::Op& o : t->ops) {
    o.link = r.num<uint32_t>();
    o.kind = r.num<uint8_t>();
    o.size_unknown = r.flag();
    o.start = r.num<int64_t>();
    o.end = r.num<int64_t>();
    o.bytes = r.num<uint64_t>();
  }
  if (!r.ok()) return false;
  *pos = r.pos();
  return true;
}

}  // namespace fabtrace::report
