#include "preload/completion.h"

#include "preload/runtime.h"
#include "preload/timeline.h"

namespace fabtrace {

namespace {
inline Cell* cell_for(Shard* s, const OpRecord* rec, fi_addr_t peer, uint64_t bytes) {
  return s ? s->cell(CellKey{rec->ep, peer, bytes, rec->kind}) : nullptr;
}
}  // namespace

bool complete_ok(Shard* s, OpRecord* rec, uint64_t now, uint64_t len, fi_addr_t src,
                 const DomainWrap* batch_nic) {
  bool batched = false;
  const bool recv = op_is_recv(rec->kind);
  fi_addr_t peer = rec->peer;
  uint64_t bytes = rec->bytes;
  const uint64_t dur = now > rec->start ? now - rec->start : 0;
  if (recv) {
    // A receive is filed under the bytes that arrived and, when the poll told
    // us, the peer that sent them.
    if (len) bytes = len;
    if (peer == FI_ADDR_UNSPEC && src != FI_ADDR_NOTAVAIL) peer = src;
  } else if (rec->ep->domain == batch_nic) {
    batched = true;
  } else {
    rec->ep->domain->nic.complete(now);
  }
  Cell* c = cell_for(s, rec, peer, bytes);
  if (c) {
    c->lat.record(dur);
    c->ok_bytes += bytes;
    if (recv && dur < runtime().imm_ticks) ++c->imm;
  }
  if (runtime().timeline_on) timeline().append(s, c, rec, now, bytes, false);
  return batched;
}

void complete_err(Shard* s, OpRecord* rec, uint64_t now) {
  if (!op_is_recv(rec->kind)) rec->ep->domain->nic.complete(now);
  Cell* c = cell_for(s, rec, rec->peer, rec->bytes);
  if (c) ++c->errors;
  if (runtime().timeline_on) timeline().append(s, c, rec, now, rec->bytes, true);
}

void complete_never(Shard* s, OpRecord* rec, uint64_t now) {
  if (!op_is_recv(rec->kind)) rec->ep->domain->nic.complete(now);
  if (Cell* c = cell_for(s, rec, rec->peer, rec->bytes)) ++c->unfinished;
}

}  // namespace fabtrace
