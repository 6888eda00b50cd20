#include "preload/issue.h"

namespace fabtrace {

void count_untimed(EpWrap* w, OpKind kind, uint64_t bytes, fi_addr_t peer, Untimed why) {
  if (Shard* s = my_shard()) {
    if (Cell* c = s->cell(w, peer, bytes, kind, false)) {
      if (why == Untimed::kRingFull)
        ++c->ring_full;
      else
        ++c->untimed;
    }
  }
}

void count_refusal(EpWrap* w, OpKind kind, uint64_t bytes, fi_addr_t peer, ssize_t ret) {
  if (Shard* s = my_shard()) {
    if (Cell* c = s->cell(w, peer, bytes, kind, false)) {
      if (ret == -FI_EAGAIN)
        ++c->eagain;
      else
        ++c->refused;
    }
  }
}

}  // namespace fabtrace
