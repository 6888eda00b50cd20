#include "preload/completion.h"

namespace fabtrace {

namespace {
// An op that failed or never finished kept its NIC busy from its start to now,
// but moved no bytes: its busy interval, without bytes (receives do not count).
void nic_busy_without_bytes(Shard* s, const OpRecord* rec, uint64_t now) {
  if (!op_is_recv(rec->kind)) nic_interval(s, rec->ep->domain, rec->start, now, 0);
}
}  // namespace

void complete_err(Shard* s, OpRecord* rec, uint64_t now) {
  nic_busy_without_bytes(s, rec, now);
  Cell* c = cell_for(s, rec, rec->peer, rec->bytes);
  if (c) ++c->errors;
  if (runtime().timeline_on) timeline().append(s, c, rec, now, rec->bytes, true);
}

void complete_never(Shard* s, OpRecord* rec, uint64_t now) {
  nic_busy_without_bytes(s, rec, now);
  if (Cell* c = cell_for(s, rec, rec->peer, rec->bytes)) ++c->unfinished;
}

}  // namespace fabtrace
