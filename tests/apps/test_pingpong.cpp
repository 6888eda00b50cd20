// "pingpong" family: count round trips of size bytes with fi_tsend/fi_trecv
// (fi_send/fi_recv without FI_TAGGED), on one CQ per rank that has a wait object
// and is read with fi_cq_sread.
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>

#include <algorithm>
#include <string>

#include "env.h"
#include "families.h"
#include "payload.h"

namespace ftapp {
namespace {

struct Ops {
  Env& env;
  bool tagged;
  Buffer* buf;
  size_t size;

  OpCtx* recv(uint8_t* p, uint16_t kind, uint32_t seq) {
    Fabric& f = env.fab;
    const char* fn = tagged ? "fi_trecv" : "fi_recv";
    OpCtx* ctx = env.ctxs.make(fn, kind, seq);
    uint64_t tag = tag_of(kind, 0, seq);
    if (tagged) {
      env.post(fn, ctx,
               [&] { return fi_trecv(f.ep, p, size, buf->desc, FI_ADDR_UNSPEC, tag, 0, ctx); });
    } else {
      env.post(fn, ctx, [&] { return fi_recv(f.ep, p, size, buf->desc, FI_ADDR_UNSPEC, ctx); });
    }
    return ctx;
  }

  OpCtx* send(uint8_t* p, uint16_t kind, uint32_t seq) {
    Fabric& f = env.fab;
    const char* fn = tagged ? "fi_tsend" : "fi_send";
    fill_payload(p, size, kind, 0, seq);
    OpCtx* ctx = env.ctxs.make(fn, kind, seq);
    uint64_t tag = tag_of(kind, 0, seq);
    if (tagged) {
      env.post(fn, ctx, [&] { return fi_tsend(f.ep, p, size, buf->desc, f.peer, tag, ctx); });
    } else {
      env.post(fn, ctx, [&] { return fi_send(f.ep, p, size, buf->desc, f.peer, ctx); });
    }
    return ctx;
  }

  void verify(const uint8_t* p, const OpCtx* ctx) {
    std::string why;
    if (!check_payload_is(p, size, static_cast<uint16_t>(ctx->kind), 0, ctx->seq, &why)) {
      env.stats.data_error(std::string(ctx->op) + " #" + std::to_string(ctx->seq) + ": " + why);
    }
    if (ctx->comp.has_flags && ctx->comp.len != size) {
      env.stats.data_error(std::string(ctx->op) + ": completion len mismatch");
    }
  }
};

}  // namespace

void run_pingpong(Env& env) {
  bool tagged = (env.caps & FI_TAGGED) != 0;
  if (!tagged) env.stats.note("pingpong: provider lacks FI_TAGGED, used fi_send/fi_recv");
  const size_t size = std::max(env.opt.size, kMinPayload);
  const size_t n = env.opt.count;
  // Three buffers: send, and two receive buffers used alternately by rank 1.
  Buffer* buf = env.fab.alloc(3 * size, false);
  uint8_t* sbuf = buf->data;
  uint8_t* rbuf[2] = {buf->data + size, buf->data + 2 * size};
  Ops ops{env, tagged, buf, size};
  if (env.rank == 0) {
    env.recv("ready");
    for (uint32_t seq = 0; seq < n; ++seq) {
      OpCtx* r = ops.recv(rbuf[0], kPong, seq);
      OpCtx* s = ops.send(sbuf, kPing, seq);
      env.wait_done(s);
      env.wait_done(r);
      ops.verify(rbuf[0], r);
    }
  } else {
    OpCtx* r = ops.recv(rbuf[0], kPing, 0);
    env.send("ready");
    for (uint32_t seq = 0; seq < n; ++seq) {
      env.wait_done(r);
      ops.verify(rbuf[seq % 2], r);
      if (seq + 1 < n) r = ops.recv(rbuf[(seq + 1) % 2], kPing, seq + 1);
      OpCtx* s = ops.send(sbuf, kPong, seq);
      env.wait_done(s);
    }
  }
  env.sync("fin");
}

}  // namespace ftapp
