// fi_atomic* / fi_fetch_atomic* / fi_compare_atomic* / fi_inject_atomic. Sizes
// are in bytes (element count x datatype size), like every other op.
#include <rdma/fi_atomic.h>

#include "preload/issue.h"
#include "preload/op_tables.h"

namespace fabtrace {

namespace {

inline EpWrap* of(struct fid_ep* ep) {
  return FABTRACE_CONTAINER_OF(ep->atomic, EpWrap, atomic_ops);
}

uint64_t dt_size(enum fi_datatype dt) {
  switch (dt) {
    case FI_INT8:
    case FI_UINT8:
      return 1;
    case FI_INT16:
    case FI_UINT16:
      return 2;
    case FI_INT32:
    case FI_UINT32:
    case FI_FLOAT:
      return 4;
    case FI_INT64:
    case FI_UINT64:
    case FI_DOUBLE:
    case FI_FLOAT_COMPLEX:
      return 8;
    case FI_DOUBLE_COMPLEX:
    case FI_INT128:
    case FI_UINT128:
      return 16;
    case FI_LONG_DOUBLE:
      return sizeof(long double);
    case FI_LONG_DOUBLE_COMPLEX:
      return 2 * sizeof(long double);
    default:
      return 0;
  }
}

inline uint64_t ioc_bytes(const struct fi_ioc* ioc, size_t n, enum fi_datatype dt) {
  uint64_t c = 0;
  for (size_t i = 0; i < n; ++i) c += ioc[i].count;
  return c * dt_size(dt);
}

// The three *msg variants differ only in their trailing arguments.
template <typename Fn>
ssize_t atomic_msg(struct fid_ep* ep, const struct fi_msg_atomic* msg, uint64_t flags, OpKind kind,
                   Fn&& call_with_msg) {
  EpWrap* w = of(ep);
  return issue_msg(w, w->tx, flags, kind, msg,
                   ioc_bytes(msg->msg_iov, msg->iov_count, msg->datatype), call_with_msg);
}

ssize_t ep_atomic(struct fid_ep* ep, const void* buf, size_t count, void* desc, fi_addr_t dest,
                  uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op, void* context) {
  EpWrap* w = of(ep);
  return issue(w, w->tx, w->tx.plain_timed(), OpKind::kAtomic, context, count * dt_size(dt), dest,
               [&](void* c) {
                 return w->real_atomic->write(ep, buf, count, desc, dest, addr, key, dt, op, c);
               });
}

ssize_t ep_atomicv(struct fid_ep* ep, const struct fi_ioc* iov, void** desc, size_t count,
                   fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op,
                   void* context) {
  EpWrap* w = of(ep);
  return issue(w, w->tx, w->tx.plain_timed(), OpKind::kAtomicv, context, ioc_bytes(iov, count, dt),
               dest, [&](void* c) {
                 return w->real_atomic->writev(ep, iov, desc, count, dest, addr, key, dt, op, c);
               });
}

ssize_t ep_atomicmsg(struct fid_ep* ep, const struct fi_msg_atomic* msg, uint64_t flags) {
  EpWrap* w = of(ep);
  return atomic_msg(ep, msg, flags, OpKind::kAtomicmsg, [&](const struct fi_msg_atomic* m) {
    return w->real_atomic->writemsg(ep, m, flags);
  });
}

ssize_t ep_inject_atomic(struct fid_ep* ep, const void* buf, size_t count, fi_addr_t dest,
                         uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op) {
  EpWrap* w = of(ep);
  return issue(
      w, w->tx, false, OpKind::kInjectAtomic, nullptr, count * dt_size(dt), dest,
      [&](void*) { return w->real_atomic->inject(ep, buf, count, dest, addr, key, dt, op); });
}

ssize_t ep_fetch_atomic(struct fid_ep* ep, const void* buf, size_t count, void* desc, void* result,
                        void* result_desc, fi_addr_t dest, uint64_t addr, uint64_t key,
                        enum fi_datatype dt, enum fi_op op, void* context) {
  EpWrap* w = of(ep);
  return issue(w, w->tx, w->tx.plain_timed(), OpKind::kFetchAtomic, context, count * dt_size(dt),
               dest, [&](void* c) {
                 return w->real_atomic->readwrite(ep, buf, count, desc, result, result_desc, dest,
                                                  addr, key, dt, op, c);
               });
}

ssize_t ep_fetch_atomicv(struct fid_ep* ep, const struct fi_ioc* iov, void** desc, size_t count,
                         struct fi_ioc* resultv, void** result_desc, size_t result_count,
                         fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
                         enum fi_op op, void* context) {
  EpWrap* w = of(ep);
  return issue(w, w->tx, w->tx.plain_timed(), OpKind::kFetchAtomicv, context,
               ioc_bytes(iov, count, dt), dest, [&](void* c) {
                 return w->real_atomic->readwritev(ep, iov, desc, count, resultv, result_desc,
                                                   result_count, dest, addr, key, dt, op, c);
               });
}

ssize_t ep_fetch_atomicmsg(struct fid_ep* ep, const struct fi_msg_atomic* msg,
                           struct fi_ioc* resultv, void** result_desc, size_t result_count,
                           uint64_t flags) {
  EpWrap* w = of(ep);
  return atomic_msg(ep, msg, flags, OpKind::kFetchAtomicmsg, [&](const struct fi_msg_atomic* m) {
    return w->real_atomic->readwritemsg(ep, m, resultv, result_desc, result_count, flags);
  });
}

ssize_t ep_compare_atomic(struct fid_ep* ep, const void* buf, size_t count, void* desc,
                          const void* compare, void* compare_desc, void* result, void* result_desc,
                          fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
                          enum fi_op op, void* context) {
  EpWrap* w = of(ep);
  return issue(w, w->tx, w->tx.plain_timed(), OpKind::kCompareAtomic, context, count * dt_size(dt),
               dest, [&](void* c) {
                 return w->real_atomic->compwrite(ep, buf, count, desc, compare, compare_desc,
                                                  result, result_desc, dest, addr, key, dt, op, c);
               });
}

ssize_t ep_compare_atomicv(struct fid_ep* ep, const struct fi_ioc* iov, void** desc, size_t count,
                           const struct fi_ioc* comparev, void** compare_desc, size_t compare_count,
                           struct fi_ioc* resultv, void** result_desc, size_t result_count,
                           fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
                           enum fi_op op, void* context) {
  EpWrap* w = of(ep);
  return issue(w, w->tx, w->tx.plain_timed(), OpKind::kCompareAtomicv, context,
               ioc_bytes(iov, count, dt), dest, [&](void* c) {
                 return w->real_atomic->compwritev(ep, iov, desc, count, comparev, compare_desc,
                                                   compare_count, resultv, result_desc,
                                                   result_count, dest, addr, key, dt, op, c);
               });
}

ssize_t ep_compare_atomicmsg(struct fid_ep* ep, const struct fi_msg_atomic* msg,
                             const struct fi_ioc* comparev, void** compare_desc,
                             size_t compare_count, struct fi_ioc* resultv, void** result_desc,
                             size_t result_count, uint64_t flags) {
  EpWrap* w = of(ep);
  return atomic_msg(ep, msg, flags, OpKind::kCompareAtomicmsg, [&](const struct fi_msg_atomic* m) {
    return w->real_atomic->compwritemsg(ep, m, comparev, compare_desc, compare_count, resultv,
                                        result_desc, result_count, flags);
  });
}

}  // namespace

void install_atomic_shims(EpWrap* w) {
  const fi_ops_atomic* r = w->real_atomic;
  fi_ops_atomic& o = w->atomic_ops;
  FABTRACE_SHIM(o, r, fi_ops_atomic, write, ep_atomic);
  FABTRACE_SHIM(o, r, fi_ops_atomic, writev, ep_atomicv);
  FABTRACE_SHIM(o, r, fi_ops_atomic, writemsg, ep_atomicmsg);
  FABTRACE_SHIM(o, r, fi_ops_atomic, inject, ep_inject_atomic);
  FABTRACE_SHIM(o, r, fi_ops_atomic, readwrite, ep_fetch_atomic);
  FABTRACE_SHIM(o, r, fi_ops_atomic, readwritev, ep_fetch_atomicv);
  FABTRACE_SHIM(o, r, fi_ops_atomic, readwritemsg, ep_fetch_atomicmsg);
  FABTRACE_SHIM(o, r, fi_ops_atomic, compwrite, ep_compare_atomic);
  FABTRACE_SHIM(o, r, fi_ops_atomic, compwritev, ep_compare_atomicv);
  FABTRACE_SHIM(o, r, fi_ops_atomic, compwritemsg, ep_compare_atomicmsg);
}

}  // namespace fabtrace
