// fi_send* / fi_recv* / fi_inject*: the untagged message shims.
#include "preload/issue.h"
#include "preload/op_tables.h"

namespace fabtrace {

namespace {

inline EpWrap* of(struct fid_ep* ep) { return FABTRACE_CONTAINER_OF(ep->msg, EpWrap, msg_ops); }

ssize_t ep_send(struct fid_ep* ep, const void* buf, size_t len, void* desc, fi_addr_t dest,
                void* context) {
  EpWrap* w = of(ep);
  return issue(w, w->tx, w->tx.plain_timed(), OpKind::kSend, context, len, dest,
               [&](void* c) { return w->real_msg->send(ep, buf, len, desc, dest, c); });
}

ssize_t ep_sendv(struct fid_ep* ep, const struct iovec* iov, void** desc, size_t count,
                 fi_addr_t dest, void* context) {
  EpWrap* w = of(ep);
  return issue(w, w->tx, w->tx.plain_timed(), OpKind::kSendv, context, iov_bytes(iov, count), dest,
               [&](void* c) { return w->real_msg->sendv(ep, iov, desc, count, dest, c); });
}

ssize_t ep_sendmsg(struct fid_ep* ep, const struct fi_msg* msg, uint64_t flags) {
  EpWrap* w = of(ep);
  return issue_msg(w, w->tx, flags, OpKind::kSendmsg, msg, iov_bytes(msg->msg_iov, msg->iov_count),
                   [&](const struct fi_msg* m) { return w->real_msg->sendmsg(ep, m, flags); });
}

ssize_t ep_senddata(struct fid_ep* ep, const void* buf, size_t len, void* desc, uint64_t data,
                    fi_addr_t dest, void* context) {
  EpWrap* w = of(ep);
  return issue(w, w->tx, w->tx.plain_timed(), OpKind::kSenddata, context, len, dest,
               [&](void* c) { return w->real_msg->senddata(ep, buf, len, desc, data, dest, c); });
}

ssize_t ep_inject(struct fid_ep* ep, const void* buf, size_t len, fi_addr_t dest) {
  EpWrap* w = of(ep);
  return issue(w, w->tx, false, OpKind::kInject, nullptr, len, dest,
               [&](void*) { return w->real_msg->inject(ep, buf, len, dest); });
}

ssize_t ep_injectdata(struct fid_ep* ep, const void* buf, size_t len, uint64_t data,
                      fi_addr_t dest) {
  EpWrap* w = of(ep);
  return issue(w, w->tx, false, OpKind::kInjectdata, nullptr, len, dest,
               [&](void*) { return w->real_msg->injectdata(ep, buf, len, data, dest); });
}

ssize_t ep_recv(struct fid_ep* ep, void* buf, size_t len, void* desc, fi_addr_t src,
                void* context) {
  EpWrap* w = of(ep);
  return issue(w, w->rx, w->rx.plain_timed(), OpKind::kRecv, context, len, src,
               [&](void* c) { return w->real_msg->recv(ep, buf, len, desc, src, c); });
}

ssize_t ep_recvv(struct fid_ep* ep, const struct iovec* iov, void** desc, size_t count,
                 fi_addr_t src, void* context) {
  EpWrap* w = of(ep);
  return issue(w, w->rx, w->rx.plain_timed(), OpKind::kRecvv, context, iov_bytes(iov, count), src,
               [&](void* c) { return w->real_msg->recvv(ep, iov, desc, count, src, c); });
}

ssize_t ep_recvmsg(struct fid_ep* ep, const struct fi_msg* msg, uint64_t flags) {
  EpWrap* w = of(ep);
  return issue_msg(w, w->rx, flags, OpKind::kRecvmsg, msg, iov_bytes(msg->msg_iov, msg->iov_count),
                   [&](const struct fi_msg* m) { return w->real_msg->recvmsg(ep, m, flags); });
}

}  // namespace

void install_msg_shims(EpWrap* w) {
#define FABTRACE_MSG_SHIM(slot) FABTRACE_SHIM(w->msg_ops, w->real_msg, fi_ops_msg, slot, ep_##slot);
  FABTRACE_SEND_RECV_SLOTS(FABTRACE_MSG_SHIM)
#undef FABTRACE_MSG_SHIM
}

}  // namespace fabtrace
