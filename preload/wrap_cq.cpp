// Completion queues: every poll is timestamped once; every completion whose
// context is one of our records is timed, given back its application context
// and its record released. Other completions pass through untouched.
//
// One application poll is one pass through these shims. libfabric's utility
// CQ implements fi_cq_read and fi_cq_sread by calling fi_cq_readfrom through
// the CQ's op table, which is ours: such a call, made from inside one of our
// shims on the same thread, goes straight to the provider (t_in_cq), so the
// poll is stamped, counted and paid for once.
//
// Receives are filed under the size that arrived, which only entries with a
// length tell: an application that asks for fi_cq_entry gets its CQ opened in
// FI_CQ_FORMAT_MSG and its entries copied out in its own format (cq_format.h).
#include <rdma/fi_errno.h>

#include <new>

#include "common/clock.h"
#include "preload/completion.h"
#include "preload/cq_format.h"
#include "preload/op_tables.h"
#include "preload/poll_runs.h"
#include "preload/probes.h"
#include "preload/provider_call.h"
#include "preload/runtime.h"

namespace fabtrace {

namespace {

// Set while this thread is inside a provider's CQ read called by one of our shims.
thread_local bool t_in_cq __attribute__((tls_model("initial-exec"))) = false;

CqWrap* cq_of(struct fid_cq* cq) { return FABTRACE_CONTAINER_OF(cq->ops, CqWrap, ops); }

// The gap since the previous poll of this CQ by any thread, into this thread's
// histogram. Concurrent pollers may both measure against the same previous
// poll; that only shortens gaps, it never invents one.
__attribute__((noinline)) void poll_gap_slow(const Runtime& rt, PollStats& p, uint32_t cq,
                                             uint64_t prev, uint64_t now) {
  if (!prev || now <= prev) return;
  const uint64_t gap = now - prev;
  const uint64_t* e = rt.gap_edges;
  const int cls = gap < e[0]   ? 0
                  : gap < e[1] ? 1
                  : gap < e[2] ? 2
                  : gap < e[3] ? 3
                  : gap < e[4] ? 4
                               : 5;
  ++p.gaps[cls];
  if (gap > p.max_gap) {
    p.max_gap = gap;
    p.max_gap_end = now;
  }
  // The live snapshot's interval maximum (preload/live.h).
  const uint32_t epoch = g_live_epoch.load(std::memory_order_relaxed);
  if (p.win_epoch != epoch) {
    p.win_epoch = epoch;
    p.win_max = 0;
  }
  if (gap > p.win_max) p.win_max = gap;
  // A stall for a session to explain: the thread that ends it asks the kernel
  // what it went through since `prev`.
  if (__builtin_expect(gap >= rt.stall_ticks, 0) && probes::cq_stall_on())
    probes::fire_cq_stall(cq, prev, now);
}

// Inline: a busy poller's every poll. The common case, a gap in the first
// class that is neither a stall nor the longest yet (rt.gap_fast is the lower
// of the first class's bound and the stall threshold), is one compare chain
// and one increment; anything else takes poll_gap_slow's full path.
__attribute__((always_inline)) inline void poll_mark(const Runtime& rt, CqWrap* w, Shard* s,
                                                     uint64_t now) {
  if (w->id == kNoCq || !s) return;
  const uint64_t prev = w->last_poll.load(std::memory_order_relaxed);
  w->last_poll.store(now, std::memory_order_relaxed);
  PollStats& p = s->cq[w->id];
  ++p.polls;
  const uint64_t gap = now - prev;
  if (__builtin_expect(prev != 0 && now > prev && gap < rt.gap_fast && gap <= p.max_gap, 1)) {
    ++p.gaps[0];
    return;
  }
  poll_gap_slow(rt, p, w->id, prev, now);
}

inline void consume(const Runtime& rt, CqWrap* w, Shard* s, void* buf, ssize_t n, uint64_t now,
                    const fi_addr_t* src) {
  Timeline* tl = rt.timeline_on ? &timeline() : nullptr;
  // This CQ's NIC: its ops completed by this poll are one busy interval
  // [earliest issue, now], added once with their bytes.
  uint64_t nic_start = UINT64_MAX, nic_bytes = 0;
  char* e = static_cast<char*>(buf);
  for (ssize_t i = 0; i < n; ++i, e += w->prov_entry_size) {
    // op_context is the first field of every CQ entry format.
    void** ctx = reinterpret_cast<void**>(e);
    OpRecord* rec = rt.ring.owned(*ctx);
    if (!rec) continue;
    const uint64_t len =
        w->has_len ? reinterpret_cast<struct fi_cq_msg_entry*>(e)->len : kLenUnknown;
    if (complete_ok(s, rec, now, len, src ? src[i] : FI_ADDR_NOTAVAIL, w->domain, tl)) {
      if (rec->start < nic_start) nic_start = rec->start;
      nic_bytes += rec->bytes;
    }
    *ctx = rec->user_ctx;
    InflightRing::release(rec);
  }
  if (nic_start != UINT64_MAX) nic_interval(s, w->domain, nic_start, now, nic_bytes);
}

// --polls: every poll's span and result, folded into its thread's runs
// (poll_runs.h), which reach the kernel in batches: a load and a branch at
// each end while no session asks for them.
struct PollProbe {
  explicit PollProbe(const CqWrap* w) : on(probes::polls_on()), cq(w->id) {
    if (on) start = now_ticks();
  }
  // The poll's end (ticks), which the caller's clock read then reuses; 0
  // while no session asks for polls.
  uint64_t exit(ssize_t n) const {
    if (!on) return 0;
    const uint64_t end = now_ticks();
    poll_runs::poll_ended(cq, n, start, end);
    return end;
  }
  const bool on;
  const uint32_t cq;
  uint64_t start = 0;
};

// One application poll. `read(pbuf, n)` is the provider's read of up to n
// entries into pbuf: the application's buffer `buf`, or our own buffer when
// the provider writes a longer format than the application asked for
// (cq_format.h: poll_translated); the caller then copies the entries out in
// the application's format. kBlocking (fi_cq_sread*): the thread services the
// CQ from the call on, so the poll is stamped when it starts, and its end is
// the CQ's latest poll. Inline into each shim, so that a poll is one call
// frame: the provider's read is the only call on its way.
template <bool kBlocking, typename Read>
__attribute__((always_inline)) inline ssize_t poll_into(CqWrap* w, void* buf, void* pbuf,
                                                        size_t count, const fi_addr_t* src,
                                                        Read&& read) {
  const Runtime& rt = runtime();
  const bool gap = rt.cfg.cqgap;
  Shard* s = nullptr;
  if (kBlocking) {
    s = my_shard();
    if (gap) poll_mark(rt, w, s, now_ticks());
  }
  const PollProbe probe(w);
  t_in_cq = true;  // the provider is C: nothing unwinds past the clear
  const ssize_t n = read(pbuf, count);
  t_in_cq = false;
  const uint64_t end = probe.exit(n);
  // An empty poll with the gap statistics off has nothing to time or stamp,
  // blocking or not: no clock read. One clock read serves the gap and every
  // completion of the poll (--polls' own, when it took one).
  if (n <= 0 && !gap) return n;
  const uint64_t now = end ? end : now_ticks();
  if (!kBlocking) {
    s = my_shard();
    if (gap) poll_mark(rt, w, s, now);
  } else if (gap) {
    w->last_poll.store(now, std::memory_order_relaxed);
  }
  if (n > 0 && buf) consume(rt, w, s, pbuf, n, now, src);
  return n;
}

// A poll whose provider entries are longer than the application's: read into
// our stack, then copied out (out of line: the common poll's frame stays small).
template <bool kBlocking, typename Read>
__attribute__((noinline)) ssize_t poll_translated(CqWrap* w, void* buf, size_t count,
                                                  const fi_addr_t* src, Read read) {
  struct fi_cq_msg_entry own[kCqChunk];
  if (count > kCqChunk) count = kCqChunk;
  const ssize_t n = poll_into<kBlocking>(w, buf, own, count, src, read);
  if (n > 0) cq_entries_to_app(buf, w->entry_size, own, w->prov_entry_size, static_cast<size_t>(n));
  return n;
}

template <bool kBlocking, typename Read>
__attribute__((always_inline)) inline ssize_t poll(CqWrap* w, void* buf, size_t count,
                                                   const fi_addr_t* src, Read read) {
  // A read made from inside one of our shims on this thread (libfabric's
  // utility CQ reading through the op table) is part of the poll already made.
  if (t_in_cq) return read(buf, count);
  if (__builtin_expect(w->translate && buf, 0))
    return poll_translated<kBlocking>(w, buf, count, src, read);
  return poll_into<kBlocking>(w, buf, buf, count, src, read);
}

// The four reads differ only in the provider call and whether they block.
ssize_t cq_read(struct fid_cq* cq, void* buf, size_t count) {
  CqWrap* w = cq_of(cq);
  return poll<false>(w, buf, count, nullptr,
                     [w, cq](void* b, size_t n) { return w->real_ops->read(cq, b, n); });
}

ssize_t cq_readfrom(struct fid_cq* cq, void* buf, size_t count, fi_addr_t* src_addr) {
  CqWrap* w = cq_of(cq);
  return poll<false>(w, buf, count, src_addr, [w, cq, src_addr](void* b, size_t n) {
    return w->real_ops->readfrom(cq, b, n, src_addr);
  });
}

ssize_t cq_sread(struct fid_cq* cq, void* buf, size_t count, const void* cond, int timeout) {
  CqWrap* w = cq_of(cq);
  return poll<true>(w, buf, count, nullptr, [w, cq, cond, timeout](void* b, size_t n) {
    return w->real_ops->sread(cq, b, n, cond, timeout);
  });
}

ssize_t cq_sreadfrom(struct fid_cq* cq, void* buf, size_t count, fi_addr_t* src_addr,
                     const void* cond, int timeout) {
  CqWrap* w = cq_of(cq);
  return poll<true>(w, buf, count, src_addr, [w, cq, src_addr, cond, timeout](void* b, size_t n) {
    return w->real_ops->sreadfrom(cq, b, n, src_addr, cond, timeout);
  });
}

ssize_t cq_readerr(struct fid_cq* cq, struct fi_cq_err_entry* buf, uint64_t flags) {
  CqWrap* w = cq_of(cq);
  if (t_in_cq) return w->real_ops->readerr(cq, buf, flags);
  t_in_cq = true;
  const ssize_t n = w->real_ops->readerr(cq, buf, flags);
  t_in_cq = false;
  if (n <= 0 || !buf) return n;
  if (OpRecord* rec = runtime().ring.owned(buf->op_context)) {
    const uint64_t now = now_ticks();
    if (probes::op_error_on()) probes::fire_op_error(rec, now, buf->err);
    complete_err(my_shard(), rec, now);
    buf->op_context = rec->user_ctx;
    InflightRing::release(rec);
  }
  return n;
}

int cq_close(struct fid* fid) {
  CqWrap* w = FABTRACE_CONTAINER_OF(fid->ops, CqWrap, fid_ops);
  // The closing thread's runs of polls, the last of this CQ's among them.
  if (probes::polls_on()) poll_runs::flush_thread();
  const int ret = call_nested([&] { return w->real_fid->close(fid); });
  if (ret == 0) {
    release_records_of_cq(w);
    w->closed.store(true, std::memory_order_relaxed);
  }
  return ret;
}

}  // namespace

void release_records_of_cq(CqWrap* cq) {
  Runtime& rt = runtime();
  Shard* s = my_shard();
  const uint64_t now = now_ticks();
  for (OpRecord* r = rt.ring.begin(); r != rt.ring.end(); ++r) {
    if (!r->busy.load(std::memory_order_acquire) || r->cq != cq) continue;
    complete_never(s, r, now);
    InflightRing::release(r);
  }
}

int open_cq(DomainWrap* d, struct fi_cq_attr* attr, struct fid_cq** cq, void* context) {
  const enum fi_cq_format app = attr ? attr->format : FI_CQ_FORMAT_UNSPEC;
  // The layout of the application's entries: UNSPEC is the provider's own
  // default, known for the providers cq_unspec_layout names.
  enum fi_cq_format layout =
      app == FI_CQ_FORMAT_UNSPEC ? cq_unspec_layout(d->fabric->prov_name) : app;
  if (attr && layout == FI_CQ_FORMAT_CONTEXT && !(attr->flags & FI_PEER)) {
    // fi_cq_entry carries no length: ask for fi_cq_msg_entry and translate.
    struct fi_cq_attr mine = *attr;
    mine.format = FI_CQ_FORMAT_MSG;
    const int ret =
        call_nested([&] { return d->real_ops->cq_open(d->domain, &mine, cq, context); });
    if (ret == 0) {
      // The application sees what the provider wrote back, in its own format.
      const enum fi_cq_format prov = mine.format;
      mine.format = attr->format;
      *attr = mine;
      if (cq && *cq && !wrap_cq(*cq, d, layout, prov)) return refuse_unwrapped(cq);
      return ret;
    }
    // Refused: open what the application asked for; lengths stay unknown.
  }
  return open_wrapped(
      cq, [&] { return d->real_ops->cq_open(d->domain, attr, cq, context); },
      [&](struct fid_cq* c) {
        // A provider we do not know writes the format it chose for UNSPEC
        // back, or keeps UNSPEC, which everywhere we know of means fi_cq_entry.
        if (layout == FI_CQ_FORMAT_UNSPEC) layout = attr ? attr->format : FI_CQ_FORMAT_UNSPEC;
        if (layout == FI_CQ_FORMAT_UNSPEC) layout = FI_CQ_FORMAT_CONTEXT;
        return wrap_cq(c, d, layout, layout) != nullptr;
      });
}

CqWrap* wrap_cq(struct fid_cq* cq, DomainWrap* domain, enum fi_cq_format app_format,
                enum fi_cq_format prov_format) {
  auto* w = new (std::nothrow) CqWrap();
  if (!w) return nullptr;
  w->cq = cq;
  w->domain = domain;
  w->format = app_format;
  w->entry_size = cq_entry_size(app_format);
  w->prov_format = prov_format;
  w->prov_entry_size = cq_entry_size(prov_format);
  w->has_len = cq_format_has_len(prov_format);
  w->translate = w->prov_entry_size != w->entry_size;
  Runtime& rt = runtime();
  const uint32_t id = rt.ncq_ids.fetch_add(1, std::memory_order_relaxed);
  w->id = id < kMaxCqs ? id : kNoCq;

  w->real_fid = cq->fid.ops;
  copy_table(&w->fid_ops, cq->fid.ops);
  FABTRACE_SHIM(w->fid_ops, w->real_fid, fi_ops, close, cq_close);
  w->real_ops = cq->ops;
  copy_table(&w->ops, cq->ops);
  FABTRACE_SHIM(w->ops, w->real_ops, fi_ops_cq, read, cq_read);
  FABTRACE_SHIM(w->ops, w->real_ops, fi_ops_cq, readfrom, cq_readfrom);
  FABTRACE_SHIM(w->ops, w->real_ops, fi_ops_cq, readerr, cq_readerr);
  FABTRACE_SHIM(w->ops, w->real_ops, fi_ops_cq, sread, cq_sread);
  FABTRACE_SHIM(w->ops, w->real_ops, fi_ops_cq, sreadfrom, cq_sreadfrom);
  cq->fid.ops = &w->fid_ops;
  cq->ops = &w->ops;
  std::lock_guard<std::mutex> lk(rt.mu);
  rt.cqs.push_back(w);
  return w;
}

CqWrap* cq_wrap_of(struct fid* fid) {
  if (!fid || fid->fclass != FI_CLASS_CQ || !fid->ops || fid->ops->close != cq_close)
    return nullptr;
  return FABTRACE_CONTAINER_OF(fid->ops, CqWrap, fid_ops);
}

}  // namespace fabtrace
