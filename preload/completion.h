// What happens to an op's record when its completion is seen (or never will be).
#pragma once

#include "preload/inflight.h"
#include "preload/stats.h"

namespace fabtrace {

// A successful completion of `rec` observed at `now`. `len` is the length the
// CQ entry reports (0 when the format has none); `src` the source address from
// fi_cq_readfrom (FI_ADDR_NOTAVAIL when unknown). An op of `batch_nic` leaves
// its NIC busy-time update to the caller, who applies one for the whole poll:
// returns true when it did.
bool complete_ok(Shard* s, OpRecord* rec, uint64_t now, uint64_t len, fi_addr_t src,
                 const DomainWrap* batch_nic);
// A completion in error (fi_cq_readerr).
void complete_err(Shard* s, OpRecord* rec, uint64_t now);
// An op that will never complete (its CQ was closed, or the process is exiting).
void complete_never(Shard* s, OpRecord* rec, uint64_t now);

}  // namespace fabtrace
