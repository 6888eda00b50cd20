// fi_read* / fi_write* / fi_inject_write*: the RMA shims. RMA initiator
// completions arrive on the transmit CQ.
#include <rdma/fi_rma.h>

#include "preload/issue.h"
#include "preload/op_tables.h"

namespace fabtrace {

namespace {

inline EpWrap* of(struct fid_ep* ep) { return FABTRACE_CONTAINER_OF(ep->rma, EpWrap, rma_ops); }

inline uint64_t rma_bytes(const struct fi_msg_rma* msg) {
  uint64_t b = 0;
  for (size_t i = 0; i < msg->rma_iov_count; ++i) b += msg->rma_iov[i].len;
  return b;
}

// fi_readmsg and fi_writemsg differ only in the provider's function.
template <typename Fn>
ssize_t rma_msg(struct fid_ep* ep, const struct fi_msg_rma* msg, uint64_t flags, OpKind kind,
                Fn real) {
  EpWrap* w = of(ep);
  return issue_msg(w, w->tx, flags, kind, msg, rma_bytes(msg),
                   [&](const struct fi_msg_rma* m) { return real(ep, m, flags); });
}

ssize_t ep_read(struct fid_ep* ep, void* buf, size_t len, void* desc, fi_addr_t src, uint64_t addr,
                uint64_t key, void* context) {
  EpWrap* w = of(ep);
  return issue(w, w->tx, w->tx.plain_timed(), OpKind::kRead, context, len, src,
               [&](void* c) { return w->real_rma->read(ep, buf, len, desc, src, addr, key, c); });
}

ssize_t ep_readv(struct fid_ep* ep, const struct iovec* iov, void** desc, size_t count,
                 fi_addr_t src, uint64_t addr, uint64_t key, void* context) {
  EpWrap* w = of(ep);
  return issue(
      w, w->tx, w->tx.plain_timed(), OpKind::kReadv, context, iov_bytes(iov, count), src,
      [&](void* c) { return w->real_rma->readv(ep, iov, desc, count, src, addr, key, c); });
}

ssize_t ep_readmsg(struct fid_ep* ep, const struct fi_msg_rma* msg, uint64_t flags) {
  return rma_msg(ep, msg, flags, OpKind::kReadmsg, of(ep)->real_rma->readmsg);
}

ssize_t ep_write(struct fid_ep* ep, const void* buf, size_t len, void* desc, fi_addr_t dest,
                 uint64_t addr, uint64_t key, void* context) {
  EpWrap* w = of(ep);
  return issue(w, w->tx, w->tx.plain_timed(), OpKind::kWrite, context, len, dest,
               [&](void* c) { return w->real_rma->write(ep, buf, len, desc, dest, addr, key, c); });
}

ssize_t ep_writev(struct fid_ep* ep, const struct iovec* iov, void** desc, size_t count,
                  fi_addr_t dest, uint64_t addr, uint64_t key, void* context) {
  EpWrap* w = of(ep);
  return issue(
      w, w->tx, w->tx.plain_timed(), OpKind::kWritev, context, iov_bytes(iov, count), dest,
      [&](void* c) { return w->real_rma->writev(ep, iov, desc, count, dest, addr, key, c); });
}

ssize_t ep_writemsg(struct fid_ep* ep, const struct fi_msg_rma* msg, uint64_t flags) {
  return rma_msg(ep, msg, flags, OpKind::kWritemsg, of(ep)->real_rma->writemsg);
}

ssize_t ep_writedata(struct fid_ep* ep, const void* buf, size_t len, void* desc, uint64_t data,
                     fi_addr_t dest, uint64_t addr, uint64_t key, void* context) {
  EpWrap* w = of(ep);
  return issue(w, w->tx, w->tx.plain_timed(), OpKind::kWritedata, context, len, dest, [&](void* c) {
    return w->real_rma->writedata(ep, buf, len, desc, data, dest, addr, key, c);
  });
}

ssize_t ep_inject_write(struct fid_ep* ep, const void* buf, size_t len, fi_addr_t dest,
                        uint64_t addr, uint64_t key) {
  EpWrap* w = of(ep);
  return issue(w, w->tx, false, OpKind::kInjectWrite, nullptr, len, dest,
               [&](void*) { return w->real_rma->inject(ep, buf, len, dest, addr, key); });
}

ssize_t ep_inject_writedata(struct fid_ep* ep, const void* buf, size_t len, uint64_t data,
                            fi_addr_t dest, uint64_t addr, uint64_t key) {
  EpWrap* w = of(ep);
  return issue(w, w->tx, false, OpKind::kInjectWritedata, nullptr, len, dest,
               [&](void*) { return w->real_rma->injectdata(ep, buf, len, data, dest, addr, key); });
}

}  // namespace

void install_rma_shims(EpWrap* w) {
  const fi_ops_rma* r = w->real_rma;
  fi_ops_rma& o = w->rma_ops;
  FABTRACE_SHIM(o, r, fi_ops_rma, read, ep_read);
  FABTRACE_SHIM(o, r, fi_ops_rma, readv, ep_readv);
  FABTRACE_SHIM(o, r, fi_ops_rma, readmsg, ep_readmsg);
  FABTRACE_SHIM(o, r, fi_ops_rma, write, ep_write);
  FABTRACE_SHIM(o, r, fi_ops_rma, writev, ep_writev);
  FABTRACE_SHIM(o, r, fi_ops_rma, writemsg, ep_writemsg);
  FABTRACE_SHIM(o, r, fi_ops_rma, writedata, ep_writedata);
  FABTRACE_SHIM(o, r, fi_ops_rma, inject, ep_inject_write);
  FABTRACE_SHIM(o, r, fi_ops_rma, injectdata, ep_inject_writedata);
}

}  // namespace fabtrace
