// Endpoints: which CQ each direction reports to (so that only ops that will
// complete are timed), enable-time table re-checks, cancel, scalable contexts,
// and the readable local/peer addresses.
#include <rdma/fi_errno.h>

#include <new>

#include "common/addr_format.h"
#include "common/clock.h"
#include "preload/inflight.h"
#include "preload/op_tables.h"
#include "preload/provider_call.h"
#include "preload/runtime.h"

namespace fabtrace {

namespace {

EpWrap* of_fid(struct fid* fid) { return FABTRACE_CONTAINER_OF(fid->ops, EpWrap, fid_ops); }

void set_local_name(EpWrap* w) {
  if (!FABTRACE_HAS_OP(w->real_cm, fi_ops_cm, getname)) return;
  char raw[256];
  size_t rl = sizeof(raw);
  if (w->real_cm->getname(&w->ep->fid, raw, &rl) != 0 || rl > sizeof(raw)) return;
  std::string name;
  if (w->av && FABTRACE_HAS_OP(w->av->real_ops, fi_ops_av, straddr)) {
    char str[256];
    size_t sl = sizeof(str);
    if (const char* s = w->av->real_ops->straddr(w->av->av, raw, str, &sl)) name = s;
  }
  if (name.empty()) name = format_addr(w->addr_format, raw, rl);
  std::lock_guard<std::mutex> lk(w->names_mu);
  w->local_name = name;
}

int ep_bind(struct fid* fid, struct fid* bfid, uint64_t flags) {
  EpWrap* w = of_fid(fid);
  const int ret = call_nested([&] { return w->real_fid->bind(fid, bfid, flags); });
  if (ret != 0 || !bfid) return ret;
  if (CqWrap* cq = cq_wrap_of(bfid)) {
    const bool sel = (flags & FI_SELECTIVE_COMPLETION) != 0;
    // A CQ bound with neither direction flag serves both.
    const bool both = !(flags & (FI_TRANSMIT | FI_RECV));
    if (both || (flags & FI_TRANSMIT)) w->tx.cq = cq, w->tx.selective = sel;
    if (both || (flags & FI_RECV)) w->rx.cq = cq, w->rx.selective = sel;
  } else if (AvWrap* av = av_wrap_of(bfid)) {
    w->av = av;
  } else if (bfid->fclass == FI_CLASS_SRX_CTX) {
    if (EpWrap* srx = ep_wrap_of(bfid)) w->srx = srx;
  }
  w->install();
  return ret;
}

int ep_control(struct fid* fid, int command, void* arg) {
  EpWrap* w = of_fid(fid);
  const int ret = call_nested([&] { return w->real_fid->control(fid, command, arg); });
  if (ret != 0) return ret;
  if (command == FI_ENABLE) {
    w->install();
    // A shared receive context completes into the CQ of the endpoint it serves.
    if (w->srx && !w->srx->rx.cq) w->srx->rx.cq = w->rx.cq, w->srx->rx.selective = w->rx.selective;
    if (w->type != FI_EP_MSG) set_local_name(w);
  } else if (command == FI_SETOPSFLAG && arg) {
    const uint64_t f = *static_cast<uint64_t*>(arg);
    const uint64_t v = f & ~(FI_TRANSMIT | FI_RECV);
    if (f & FI_TRANSMIT) w->tx.op_flags = v;
    if (f & FI_RECV) w->rx.op_flags = v;
  }
  return ret;
}

int ep_close(struct fid* fid) {
  EpWrap* w = of_fid(fid);
  // The container stays: records of this endpoint's ops may still complete on
  // an open CQ, and the report needs its names.
  return call_nested([&] { return w->real_fid->close(fid); });
}

// fi_cancel names the op by the application's context; the provider knows it
// by our record, so find the record (rare path: a scan of the ring).
ssize_t ep_cancel(struct fid* fid, void* context) {
  EpWrap* w =
      FABTRACE_CONTAINER_OF(FABTRACE_CONTAINER_OF(fid, struct fid_ep, fid)->ops, EpWrap, ep_ops);
  Runtime& rt = runtime();
  for (OpRecord* r = rt.ring.begin(); r != rt.ring.end(); ++r) {
    if (!r->busy.load(std::memory_order_acquire) || r->user_ctx != context) continue;
    if (r->ep != w && r->ep->parent != w && r->ep != w->srx) continue;
    const ssize_t ret = w->real_ep->cancel(fid, r);
    if (ret == 0) return 0;
  }
  return w->real_ep->cancel(fid, context);
}

// A scalable endpoint's transmit or receive context: a child of the scalable
// endpoint, with its type, address format and AV, and the op flags of its
// own direction (`dir`) from the context's attributes.
template <typename Attr, typename Open>
int open_sep_ctx(EpWrap* w, const Attr* attr, Direction EpWrap::*dir, struct fid_ep** ctx,
                 Open&& open) {
  return open_wrapped(ctx, open, [&](struct fid_ep* e) {
    EpWrap* c = wrap_ep(e, w->domain, nullptr, w);
    if (!c) return false;
    c->type = w->type;
    c->addr_format = w->addr_format;
    c->av = w->av;
    if (attr) (c->*dir).op_flags = attr->op_flags;
    return true;
  });
}

EpWrap* of_sep(struct fid_ep* sep) { return FABTRACE_CONTAINER_OF(sep->ops, EpWrap, ep_ops); }

int ep_tx_ctx(struct fid_ep* sep, int index, struct fi_tx_attr* attr, struct fid_ep** tx_ep,
              void* context) {
  EpWrap* w = of_sep(sep);
  return open_sep_ctx(w, attr, &EpWrap::tx, tx_ep,
                      [&] { return w->real_ep->tx_ctx(sep, index, attr, tx_ep, context); });
}

int ep_rx_ctx(struct fid_ep* sep, int index, struct fi_rx_attr* attr, struct fid_ep** rx_ep,
              void* context) {
  EpWrap* w = of_sep(sep);
  return open_sep_ctx(w, attr, &EpWrap::rx, rx_ep,
                      [&] { return w->real_ep->rx_ctx(sep, index, attr, rx_ep, context); });
}

int cm_connect(struct fid_ep* ep, const void* addr, const void* param, size_t paramlen) {
  EpWrap* w = FABTRACE_CONTAINER_OF(ep->cm, EpWrap, cm_ops);
  const int ret = call_nested([&] { return w->real_cm->connect(ep, addr, param, paramlen); });
  if (ret == 0) {
    if (const size_t len = sockaddr_len(w->addr_format, addr)) {
      std::string peer = format_addr(w->addr_format, addr, len);
      std::lock_guard<std::mutex> lk(w->names_mu);
      w->peer_name = peer;
    }
    set_local_name(w);
  }
  return ret;
}

int cm_accept(struct fid_ep* ep, const void* param, size_t paramlen) {
  EpWrap* w = FABTRACE_CONTAINER_OF(ep->cm, EpWrap, cm_ops);
  const int ret = call_nested([&] { return w->real_cm->accept(ep, param, paramlen); });
  if (ret == 0) set_local_name(w);
  return ret;
}

// Points one family's table at our copy, re-copying when the provider put a
// new table in since we last looked.
template <typename T>
bool adopt(T*& slot, const T*& real, T& ours) {
  if (!slot || slot == &ours) return false;
  real = slot;
  copy_table(&ours, slot);
  slot = &ours;
  return true;
}

}  // namespace

void EpWrap::install() {
  if (adopt(ep->fid.ops, real_fid, fid_ops)) {
    FABTRACE_SHIM(fid_ops, real_fid, fi_ops, close, ep_close);
    FABTRACE_SHIM(fid_ops, real_fid, fi_ops, bind, ep_bind);
    FABTRACE_SHIM(fid_ops, real_fid, fi_ops, control, ep_control);
  }
  if (adopt(ep->ops, real_ep, ep_ops)) {
    FABTRACE_SHIM(ep_ops, real_ep, fi_ops_ep, cancel, ep_cancel);
    FABTRACE_SHIM(ep_ops, real_ep, fi_ops_ep, tx_ctx, ep_tx_ctx);
    FABTRACE_SHIM(ep_ops, real_ep, fi_ops_ep, rx_ctx, ep_rx_ctx);
  }
  if (adopt(ep->cm, real_cm, cm_ops)) {
    FABTRACE_SHIM(cm_ops, real_cm, fi_ops_cm, connect, cm_connect);
    FABTRACE_SHIM(cm_ops, real_cm, fi_ops_cm, accept, cm_accept);
  }
  if (adopt(ep->msg, real_msg, msg_ops)) install_msg_shims(this);
  if (adopt(ep->tagged, real_tagged, tagged_ops)) install_tagged_shims(this);
  if (adopt(ep->rma, real_rma, rma_ops)) install_rma_shims(this);
  if (adopt(ep->atomic, real_atomic, atomic_ops)) install_atomic_shims(this);
}

EpWrap* wrap_ep(struct fid_ep* ep, DomainWrap* domain, const struct fi_info* info, EpWrap* parent) {
  clock_add_pair();  // another point for the clock fit, off the data path
  auto* w = new (std::nothrow) EpWrap();
  if (!w) return nullptr;
  w->ep = ep;
  w->domain = domain;
  w->parent = parent;
  if (info) {
    if (info->ep_attr) w->type = info->ep_attr->type;
    w->addr_format = info->addr_format;
    if (info->tx_attr) w->tx.op_flags = info->tx_attr->op_flags;
    if (info->rx_attr) w->rx.op_flags = info->rx_attr->op_flags;
    // A connected endpoint's peer: the connection request's source (passive
    // side) or the address fi_getinfo resolved (active side).
    if (info->dest_addr && info->dest_addrlen)
      w->peer_name = format_addr(info->addr_format, info->dest_addr, info->dest_addrlen);
  }
  w->install();
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lk(rt.mu);
  rt.eps.push_back(w);
  return w;
}

EpWrap* ep_wrap_of(struct fid* fid) {
  if (!fid || !fid->ops || fid->ops->close != ep_close) return nullptr;
  return of_fid(fid);
}

}  // namespace fabtrace
