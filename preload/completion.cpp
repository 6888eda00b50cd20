#include "preload/completion.h"

namespace fabtrace {

namespace {
void nic_interval(Shard* s, const OpRecord* rec, uint64_t now) {
  // Busy, but nothing completed: no bytes.
  if (!op_is_recv(rec->kind)) nic_interval(s, rec->ep->domain, rec->start, now, 0);
}
}  // namespace

void complete_err(Shard* s, OpRecord* rec, uint64_t now) {
  nic_interval(s, rec, now);
  Cell* c = cell_for(s, rec, rec->peer, rec->bytes);
  if (c) ++c->errors;
  if (runtime().timeline_on) timeline().append(s, c, rec, now, rec->bytes, true);
}

void complete_never(Shard* s, OpRecord* rec, uint64_t now) {
  nic_interval(s, rec, now);
  if (Cell* c = cell_for(s, rec, rec->peer, rec->bytes)) ++c->unfinished;
}

}  // namespace fabtrace
