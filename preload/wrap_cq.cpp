// Completion queues: every poll is timestamped once; every completion whose
// context is one of our records is timed, given back its application context
// and its record released. Other completions pass through untouched.
//
// One application poll is one pass through these shims. libfabric's utility
// CQ implements fi_cq_read and fi_cq_sread by calling fi_cq_readfrom through
// the CQ's op table, which is ours: such a call, made from inside one of our
// shims on the same thread, goes straight to the provider (t_in_cq), so the
// poll is stamped, counted and paid for once.
#include <rdma/fi_errno.h>

#include "common/clock.h"
#include "preload/completion.h"
#include "preload/runtime.h"
#include "preload/tables.h"

namespace fabtrace {

namespace {

// Set while this thread is inside a provider's CQ read called by one of our shims.
thread_local bool t_in_cq __attribute__((tls_model("initial-exec"))) = false;

// Calls the provider with t_in_cq set. The provider is C: nothing unwinds
// through it, so a plain set and clear suffice.
template <typename Call>
inline ssize_t provider_read(Call&& call) {
  t_in_cq = true;
  const ssize_t n = call();
  t_in_cq = false;
  return n;
}

CqWrap* cq_of(struct fid_cq* cq) { return FABTRACE_CONTAINER_OF(cq->ops, CqWrap, ops); }

// The gap since the previous poll of this CQ by any thread, into this thread's
// histogram. Concurrent pollers may both measure against the same previous
// poll; that only shortens gaps, it never invents one.
inline void poll_mark(CqWrap* w, Shard* s, uint64_t now) {
  if (w->id == kNoCq || !s) return;
  const uint64_t prev = w->last_poll.load(std::memory_order_relaxed);
  w->last_poll.store(now, std::memory_order_relaxed);
  PollStats& p = s->cq[w->id];
  ++p.polls;
  if (!prev || now <= prev) return;
  const uint64_t gap = now - prev;
  const uint64_t* e = runtime().gap_edges;
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
}

inline void consume(CqWrap* w, Shard* s, void* buf, ssize_t n, uint64_t now, const fi_addr_t* src) {
  Runtime& rt = runtime();
  Timeline* tl = rt.timeline_on ? &timeline() : nullptr;
  // This CQ's NIC: its ops completed by this poll are one busy interval
  // [earliest issue, now], added once.
  uint64_t nic_start = UINT64_MAX;
  char* e = static_cast<char*>(buf);
  for (ssize_t i = 0; i < n; ++i, e += w->entry_size) {
    // op_context is the first field of every CQ entry format.
    void** ctx = reinterpret_cast<void**>(e);
    OpRecord* rec = rt.ring.owned(*ctx);
    if (!rec) continue;
    const uint64_t len = w->has_len ? reinterpret_cast<struct fi_cq_msg_entry*>(e)->len : 0;
    if (complete_ok(s, rec, now, len, src ? src[i] : FI_ADDR_NOTAVAIL, w->domain, tl) &&
        rec->start < nic_start)
      nic_start = rec->start;
    *ctx = rec->user_ctx;
    InflightRing::release(rec);
  }
  if (nic_start != UINT64_MAX) nic_interval(s, w->domain, nic_start, now);
}

ssize_t cq_read(struct fid_cq* cq, void* buf, size_t count) {
  CqWrap* w = cq_of(cq);
  if (t_in_cq) return w->real_ops->read(cq, buf, count);
  const ssize_t n = provider_read([&] { return w->real_ops->read(cq, buf, count); });
  if (n <= 0 && !runtime().cfg.cqgap) return n;  // nothing to time, nothing to stamp
  const uint64_t now = now_ticks();
  Shard* s = my_shard();
  if (runtime().cfg.cqgap) poll_mark(w, s, now);
  if (n > 0 && buf) consume(w, s, buf, n, now, nullptr);
  return n;
}

ssize_t cq_readfrom(struct fid_cq* cq, void* buf, size_t count, fi_addr_t* src_addr) {
  CqWrap* w = cq_of(cq);
  if (t_in_cq) return w->real_ops->readfrom(cq, buf, count, src_addr);
  const ssize_t n = provider_read([&] { return w->real_ops->readfrom(cq, buf, count, src_addr); });
  const uint64_t now = now_ticks();
  Shard* s = my_shard();
  if (runtime().cfg.cqgap) poll_mark(w, s, now);
  if (n > 0 && buf) consume(w, s, buf, n, now, src_addr);
  return n;
}

// A blocking read is a poll when it starts (the thread is servicing the CQ
// from then on) and when it returns.
ssize_t cq_sread(struct fid_cq* cq, void* buf, size_t count, const void* cond, int timeout) {
  CqWrap* w = cq_of(cq);
  if (t_in_cq) return w->real_ops->sread(cq, buf, count, cond, timeout);
  Shard* s = my_shard();
  const bool gap = runtime().cfg.cqgap;
  if (gap) poll_mark(w, s, now_ticks());
  const ssize_t n =
      provider_read([&] { return w->real_ops->sread(cq, buf, count, cond, timeout); });
  const uint64_t now = now_ticks();
  if (gap) w->last_poll.store(now, std::memory_order_relaxed);
  if (n > 0 && buf) consume(w, s, buf, n, now, nullptr);
  return n;
}

ssize_t cq_sreadfrom(struct fid_cq* cq, void* buf, size_t count, fi_addr_t* src_addr,
                     const void* cond, int timeout) {
  CqWrap* w = cq_of(cq);
  if (t_in_cq) return w->real_ops->sreadfrom(cq, buf, count, src_addr, cond, timeout);
  Shard* s = my_shard();
  const bool gap = runtime().cfg.cqgap;
  if (gap) poll_mark(w, s, now_ticks());
  const ssize_t n = provider_read(
      [&] { return w->real_ops->sreadfrom(cq, buf, count, src_addr, cond, timeout); });
  const uint64_t now = now_ticks();
  if (gap) w->last_poll.store(now, std::memory_order_relaxed);
  if (n > 0 && buf) consume(w, s, buf, n, now, src_addr);
  return n;
}

ssize_t cq_readerr(struct fid_cq* cq, struct fi_cq_err_entry* buf, uint64_t flags) {
  CqWrap* w = cq_of(cq);
  if (t_in_cq) return w->real_ops->readerr(cq, buf, flags);
  const ssize_t n = provider_read([&] { return w->real_ops->readerr(cq, buf, flags); });
  if (n <= 0 || !buf) return n;
  if (OpRecord* rec = runtime().ring.owned(buf->op_context)) {
    complete_err(my_shard(), rec, now_ticks());
    buf->op_context = rec->user_ctx;
    InflightRing::release(rec);
  }
  return n;
}

int cq_close(struct fid* fid) {
  CqWrap* w = FABTRACE_CONTAINER_OF(fid->ops, CqWrap, fid_ops);
  int ret;
  {
    NestGuard g;
    ret = w->real_fid->close(fid);
  }
  if (ret == 0) {
    w->closed.store(true, std::memory_order_relaxed);
    release_records_of_cq(w);
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

CqWrap* wrap_cq(struct fid_cq* cq, DomainWrap* domain, const struct fi_cq_attr* attr) {
  auto* w = new CqWrap();
  w->cq = cq;
  w->domain = domain;
  // FI_CQ_FORMAT_UNSPEC is the provider's default, fi_cq_entry in libfabric's
  // util CQ and every provider here; only op_context is touched either way.
  w->format = attr ? attr->format : FI_CQ_FORMAT_CONTEXT;
  switch (w->format) {
    case FI_CQ_FORMAT_MSG:
      w->entry_size = sizeof(struct fi_cq_msg_entry);
      w->has_len = true;
      break;
    case FI_CQ_FORMAT_DATA:
      w->entry_size = sizeof(struct fi_cq_data_entry);
      w->has_len = true;
      break;
    case FI_CQ_FORMAT_TAGGED:
      w->entry_size = sizeof(struct fi_cq_tagged_entry);
      w->has_len = true;
      break;
    default:
      w->entry_size = sizeof(struct fi_cq_entry);
      break;
  }
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
