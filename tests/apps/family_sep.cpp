// "sep" family: scalable endpoints with 2 tx and 2 rx contexts, each bound to its
// own CQ. Rank 0 sends `count` messages from every tx context to every rx context
// of rank 1 (addressed with fi_rx_addr): fi_send on tx context 0, fi_sendmsg on 1.
// Rank 1 receives with fi_recv on rx context 0 and fi_recvmsg on 1. Completions
// must come on the context's own CQ with the context they were posted with, and
// each payload must name the rx context it was sent to.
#include <rdma/fi_endpoint.h>
#include <sys/uio.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "env.h"
#include "families.h"
#include "payload.h"

namespace ftapp {
namespace {

uint16_t send_kind(size_t tx) { return tx == 0 ? kSend : kSendmsg; }
const char* recv_fn(size_t rx) { return rx == 0 ? "fi_recv" : "fi_recvmsg"; }

void check_cq(Env& env, const OpCtx* ctx, fid_cq* want, const std::string& what) {
  if (ctx->comp.cq != want) env.stats.data_error(what + ": completion on another context's CQ");
}

void sender(Env& env, size_t size) {
  Fabric& f = env.fab;
  const size_t nctx = f.tx_ctx.size();
  env.recv("ready");
  Buffer* buf = f.alloc(env.opt.window * size, false);
  SlotPool win(env, env.opt.window, [&](OpCtx* c) {
    check_cq(env, c, f.tx_ctx_cq[c->tid],
             std::string(c->op) + " on tx context " + std::to_string(c->tid));
  });
  for (uint32_t seq = 0; seq < env.opt.count; ++seq) {
    for (size_t tx = 0; tx < nctx; ++tx) {
      for (size_t rx = 0; rx < nctx; ++rx) {
        size_t slot = win.acquire();
        uint8_t* s = buf->data + slot * size;
        uint16_t kind = send_kind(tx);
        fill_payload(s, size, kind, static_cast<uint16_t>(tx * nctx + rx), seq);
        const char* fn = kind_fn(kind);
        OpCtx* ctx = env.ctxs.make(fn, kind, seq, slot);
        ctx->tid = static_cast<uint32_t>(tx);
        fi_addr_t dest = fi_rx_addr(f.peer, static_cast<int>(rx), f.rx_ctx_bits);
        fid_ep* ep = f.tx_ctx[tx];
        if (tx == 0) {
          env.post(fn, ctx, [&] { return fi_send(ep, s, size, buf->desc, dest, ctx); });
        } else {
          iovec iov{s, size};
          void* desc = buf->desc;
          fi_msg msg{&iov, &desc, 1, dest, ctx, 0};
          env.post(fn, ctx, [&] { return fi_sendmsg(ep, &msg, FI_COMPLETION); });
        }
        win.set(slot, ctx);
      }
    }
  }
  win.drain();
}

// Receives on every rx context; each context gets nctx * count messages.
void receiver(Env& env, size_t size) {
  Fabric& f = env.fab;
  const size_t nctx = f.rx_ctx.size();
  const size_t per_ctx = nctx * env.opt.count;
  size_t depth = std::min<size_t>(f.info->rx_attr->size, 256);
  const size_t nslots = std::min(per_ctx, std::max(env.opt.window, depth));
  std::vector<std::vector<bool>> seen(nctx * nctx, std::vector<bool>(env.opt.count, false));
  size_t verified = 0;
  std::vector<Buffer*> bufs;
  std::vector<std::unique_ptr<SlotPool>> wins;
  for (size_t rx = 0; rx < nctx; ++rx) {
    bufs.push_back(f.alloc(nslots * size, false));
    wins.push_back(std::make_unique<SlotPool>(env, nslots, [&, rx](OpCtx* c) {
      std::string what = std::string(c->op) + " on rx context " + std::to_string(rx);
      check_cq(env, c, f.rx_ctx_cq[rx], what);
      const Completion& comp = c->comp;
      if (comp.has_flags &&
          ((comp.flags & (FI_RECV | FI_MSG)) != (FI_RECV | FI_MSG) || comp.len != size)) {
        env.stats.data_error(what + ": completion flags or len wrong");
      }
      PayloadHdr h;
      std::string why;
      if (!check_payload(bufs[rx]->data + c->slot * size, size, &h, &why)) {
        env.stats.data_error(what + ": " + why);
      } else if (h.tid >= nctx * nctx || h.tid % nctx != rx || h.seq >= env.opt.count ||
                 h.kind != send_kind(h.tid / nctx) || seen[h.tid][h.seq]) {
        env.stats.data_error(what + ": message " + std::to_string(h.tid) + "/" +
                             std::to_string(h.seq) + " unexpected here");
      } else {
        seen[h.tid][h.seq] = true;
        ++verified;
      }
    }));
  }
  for (size_t i = 0; i < per_ctx; ++i) {
    if (i == nslots) env.send("ready");
    for (size_t rx = 0; rx < nctx; ++rx) {
      size_t slot = wins[rx]->acquire();
      uint8_t* s = bufs[rx]->data + slot * size;
      void* desc = bufs[rx]->desc;
      const char* fn = recv_fn(rx);
      OpCtx* ctx = env.ctxs.make(fn, 0, static_cast<uint32_t>(i), slot);
      fid_ep* ep = f.rx_ctx[rx];
      if (rx == 0) {
        env.post(fn, ctx, [&] { return fi_recv(ep, s, size, desc, FI_ADDR_UNSPEC, ctx); });
      } else {
        iovec iov{s, size};
        fi_msg msg{&iov, &desc, 1, FI_ADDR_UNSPEC, ctx, 0};
        env.post(fn, ctx, [&] { return fi_recvmsg(ep, &msg, FI_COMPLETION); });
      }
      wins[rx]->set(slot, ctx);
    }
  }
  if (per_ctx <= nslots) env.send("ready");
  for (auto& w : wins) w->drain();
  if (verified != nctx * per_ctx) {
    env.stats.data_error("verified " + std::to_string(verified) + " of " +
                         std::to_string(nctx * per_ctx) + " messages");
  }
}

}  // namespace

void run_sep(Env& env) {
  if (env.fab.tx_ctx.size() < 2 || env.fab.rx_ctx.size() != env.fab.tx_ctx.size()) {
    env.fatal("scalable endpoint has no contexts");
  }
  run_by_rank(env, sender, receiver);
}

}  // namespace ftapp
