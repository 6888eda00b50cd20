// The issue side shared by every data-path shim: decide whether the op will
// produce a completion we can time, claim a record, stamp it, and forward the
// op with the record as its context.
#pragma once

#include <rdma/fi_errno.h>
#include <sys/uio.h>

#include "common/clock.h"
#include "preload/inflight.h"
#include "preload/runtime.h"
#include "preload/stats.h"
#include "preload/thread_id.h"

namespace fabtrace {

// Why an op is forwarded with the application's own context: by design (no
// completion will come, or its context must reach the provider unchanged), or
// because every probed record of the in-flight ring was busy.
enum class Untimed { kByDesign, kRingFull };

void count_untimed(EpWrap* w, OpKind kind, uint64_t bytes, fi_addr_t peer, Untimed why);
void count_refusal(EpWrap* w, OpKind kind, uint64_t bytes, fi_addr_t peer, ssize_t ret);

// Forwards an op. `call(ctx)` performs it with the given context. `completes`
// says whether the provider will report a completion for it.
template <typename Call>
inline ssize_t issue(EpWrap* w, const Direction& d, bool completes, OpKind kind, void* ctx,
                     uint64_t bytes, fi_addr_t peer, Call&& call) {
  Runtime& rt = runtime();
  OpRecord* rec = completes ? rt.ring.claim() : nullptr;
  if (!rec) {
    const ssize_t ret = call(ctx);
    if (ret == 0)
      count_untimed(w, kind, bytes, peer, completes ? Untimed::kRingFull : Untimed::kByDesign);
    else
      count_refusal(w, kind, bytes, peer, ret);
    return ret;
  }
  rec->kind = kind;
  rec->user_ctx = ctx;
  rec->ep = w;
  rec->cq = d.cq;
  rec->peer = peer;
  rec->bytes = bytes;
  if (rt.timeline_on) rec->tid = my_tid();
  rec->start = now_ticks();
  // The completion may be polled by another thread before call() returns: the
  // record is not touched after a successful call.
  const ssize_t ret = call(static_cast<void*>(rec));
  if (__builtin_expect(ret != 0, 0)) {
    InflightRing::release(rec);
    count_refusal(w, kind, bytes, peer, ret);
  }
  return ret;
}

// Whether an op with explicit flags (the *msg calls) will complete.
inline bool flagged_completes(const Direction& d, uint64_t flags) {
  if (!d.cq) return false;
  if (flags & FI_INJECT) return (flags & FI_COMPLETION) != 0;
  return !d.selective || (flags & FI_COMPLETION);
}

// Ops whose context must reach the provider unchanged: FI_PEEK / FI_CLAIM, for
// one, keep the application's context, as a peek's context carries the claim
// state that the later FI_CLAIM receive hands back to the provider.
constexpr uint64_t kKeepContextFlags = FI_TRIGGER | FI_PEEK | FI_CLAIM | FI_MULTI_RECV;

// Forwards a *msg call (fi_sendmsg, fi_trecvmsg, fi_writemsg, fi_atomicmsg...):
// the context travels inside the message, so a timed op's record goes in a
// copy of it. `call(m)` performs the op with message m.
template <typename Msg, typename Call>
inline ssize_t issue_msg(EpWrap* w, const Direction& d, uint64_t flags, OpKind kind, const Msg* msg,
                         uint64_t bytes, Call&& call) {
  const bool timed = flagged_completes(d, flags) && !(flags & kKeepContextFlags);
  return issue(w, d, timed, kind, msg->context, bytes, msg->addr, [&](void* c) {
    if (c == msg->context) return call(msg);
    Msg copy = *msg;
    copy.context = c;
    return call(&copy);
  });
}

inline uint64_t iov_bytes(const struct iovec* iov, size_t n) {
  uint64_t b = 0;
  for (size_t i = 0; i < n; ++i) b += iov[i].iov_len;
  return b;
}

}  // namespace fabtrace
