// fi_tsend* / fi_trecv* / fi_tinject*: the tagged message shims.
#include <rdma/fi_tagged.h>

#include "preload/issue.h"
#include "preload/op_tables.h"

namespace fabtrace {

namespace {

inline EpWrap* of(struct fid_ep* ep) {
  return FABTRACE_CONTAINER_OF(ep->tagged, EpWrap, tagged_ops);
}

ssize_t ep_tsend(struct fid_ep* ep, const void* buf, size_t len, void* desc, fi_addr_t dest,
                 uint64_t tag, void* context) {
  EpWrap* w = of(ep);
  return issue(w, w->tx, w->tx.plain_timed(), OpKind::kTsend, context, len, dest,
               [&](void* c) { return w->real_tagged->send(ep, buf, len, desc, dest, tag, c); });
}

ssize_t ep_tsendv(struct fid_ep* ep, const struct iovec* iov, void** desc, size_t count,
                  fi_addr_t dest, uint64_t tag, void* context) {
  EpWrap* w = of(ep);
  return issue(w, w->tx, w->tx.plain_timed(), OpKind::kTsendv, context, iov_bytes(iov, count), dest,
               [&](void* c) { return w->real_tagged->sendv(ep, iov, desc, count, dest, tag, c); });
}

ssize_t ep_tsendmsg(struct fid_ep* ep, const struct fi_msg_tagged* msg, uint64_t flags) {
  EpWrap* w = of(ep);
  return issue_msg(
      w, w->tx, flags, OpKind::kTsendmsg, msg, iov_bytes(msg->msg_iov, msg->iov_count),
      [&](const struct fi_msg_tagged* m) { return w->real_tagged->sendmsg(ep, m, flags); });
}

ssize_t ep_tsenddata(struct fid_ep* ep, const void* buf, size_t len, void* desc, uint64_t data,
                     fi_addr_t dest, uint64_t tag, void* context) {
  EpWrap* w = of(ep);
  return issue(w, w->tx, w->tx.plain_timed(), OpKind::kTsenddata, context, len, dest, [&](void* c) {
    return w->real_tagged->senddata(ep, buf, len, desc, data, dest, tag, c);
  });
}

ssize_t ep_tinject(struct fid_ep* ep, const void* buf, size_t len, fi_addr_t dest, uint64_t tag) {
  EpWrap* w = of(ep);
  return issue(w, w->tx, false, OpKind::kTinject, nullptr, len, dest,
               [&](void*) { return w->real_tagged->inject(ep, buf, len, dest, tag); });
}

ssize_t ep_tinjectdata(struct fid_ep* ep, const void* buf, size_t len, uint64_t data,
                       fi_addr_t dest, uint64_t tag) {
  EpWrap* w = of(ep);
  return issue(w, w->tx, false, OpKind::kTinjectdata, nullptr, len, dest,
               [&](void*) { return w->real_tagged->injectdata(ep, buf, len, data, dest, tag); });
}

ssize_t ep_trecv(struct fid_ep* ep, void* buf, size_t len, void* desc, fi_addr_t src, uint64_t tag,
                 uint64_t ignore, void* context) {
  EpWrap* w = of(ep);
  return issue(w, w->rx, w->rx.plain_timed(), OpKind::kTrecv, context, len, src, [&](void* c) {
    return w->real_tagged->recv(ep, buf, len, desc, src, tag, ignore, c);
  });
}

ssize_t ep_trecvv(struct fid_ep* ep, const struct iovec* iov, void** desc, size_t count,
                  fi_addr_t src, uint64_t tag, uint64_t ignore, void* context) {
  EpWrap* w = of(ep);
  return issue(
      w, w->rx, w->rx.plain_timed(), OpKind::kTrecvv, context, iov_bytes(iov, count), src,
      [&](void* c) { return w->real_tagged->recvv(ep, iov, desc, count, src, tag, ignore, c); });
}

ssize_t ep_trecvmsg(struct fid_ep* ep, const struct fi_msg_tagged* msg, uint64_t flags) {
  EpWrap* w = of(ep);
  return issue_msg(
      w, w->rx, flags, OpKind::kTrecvmsg, msg, iov_bytes(msg->msg_iov, msg->iov_count),
      [&](const struct fi_msg_tagged* m) { return w->real_tagged->recvmsg(ep, m, flags); });
}

}  // namespace

void install_tagged_shims(EpWrap* w) {
#define FABTRACE_TAGGED_SHIM(slot) \
  FABTRACE_SHIM(w->tagged_ops, w->real_tagged, fi_ops_tagged, slot, ep_t##slot);
  FABTRACE_SEND_RECV_SLOTS(FABTRACE_TAGGED_SHIM)
#undef FABTRACE_TAGGED_SHIM
}

}  // namespace fabtrace
