// What happens to an op's record when its completion is seen (or never will be).
#pragma once

#include "preload/inflight.h"
#include "preload/probes.h"
#include "preload/runtime.h"
#include "preload/stats.h"
#include "preload/timeline.h"

namespace fabtrace {

inline Cell* cell_for(Shard* s, const OpRecord* rec, fi_addr_t peer, uint64_t bytes,
                      bool size_unknown = false) {
  return s ? s->cell(rec->ep, peer, bytes, rec->kind, size_unknown) : nullptr;
}

// The `len` of a completion whose CQ entry has no length field.
constexpr uint64_t kLenUnknown = UINT64_MAX;

// A successful completion of `rec` observed at `now`. `len` is the length the
// CQ entry reports (kLenUnknown when the format has none); `src` the source address from
// fi_cq_readfrom (FI_ADDR_NOTAVAIL when unknown). An op of `batch_nic` leaves
// its NIC busy-time update to the caller, who applies one for the whole poll:
// returns true when it did (the caller then needs rec->start and rec->bytes). `tl` is the
// per-op timeline, when it is on.
// Inline (forced: the compiler kept it out of line): it runs once per
// completion, inside the CQ shim's loop.
__attribute__((always_inline)) inline bool complete_ok(Shard* s, OpRecord* rec, uint64_t now,
                                                       uint64_t len, fi_addr_t src,
                                                       const DomainWrap* batch_nic, Timeline* tl) {
  const Runtime& rt = runtime();
  bool batched = false;
  const bool recv = op_is_recv(rec->kind);
  fi_addr_t peer = rec->peer;
  uint64_t bytes = rec->bytes;
  bool size_unknown = false;
  const uint64_t dur = now > rec->start ? now - rec->start : 0;
  if (recv) {
    // A receive is filed under the bytes that arrived (0 is a size too) and,
    // when the poll told us, the peer that sent them. Without a length it
    // stays under the posted size, marked as such.
    if (len != kLenUnknown)
      bytes = len;
    else
      size_unknown = true;
    if (peer == FI_ADDR_UNSPEC && src != FI_ADDR_NOTAVAIL) peer = src;
  } else if (rec->ep->domain == batch_nic) {
    batched = true;
  } else {
    nic_interval(s, rec->ep->domain, rec->start, now, bytes);
  }
  Cell* c = cell_for(s, rec, peer, bytes, size_unknown);
  if (c) {
    c->lat.record(dur);
    c->ok_bytes += bytes;
    if (recv && dur < rt.within_50us_ticks) ++c->within_50us;
  }
  if (tl) tl->append(s, c, rec, now, bytes, false, size_unknown ? oplog::kOpSizeUnknown : 0);
  // A slow op for a session to explain (receives wait for their sender by
  // design: only the ops this thread drives).
  if (__builtin_expect(dur >= rt.slow_ticks, 0) && !recv && probes::slow_op_on())
    probes::fire_slow_op(rec, bytes, now);
  return batched;
}

// A completion in error (fi_cq_readerr).
void complete_err(Shard* s, OpRecord* rec, uint64_t now);
// An op that will never complete (its CQ was closed, or the process is exiting).
void complete_never(Shard* s, OpRecord* rec, uint64_t now);

}  // namespace fabtrace
