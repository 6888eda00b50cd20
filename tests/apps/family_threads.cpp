// "threads" family: T threads on rank 0 each send count messages on one shared
// endpoint (FI_THREAD_SAFE domain) and all poll the one shared TX CQ; rank 1
// receives T*count and verifies every payload (thread id + sequence). Uses
// fi_tsend/fi_trecv, or fi_send/fi_recv on providers without FI_TAGGED.
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "env.h"
#include "families.h"
#include "payload.h"

namespace ftapp {
namespace {

constexpr uint64_t kAnyThreadIgnore = 0x0000FFFFFFFFFFFFULL;  // tid and seq bits

// What the senders and the receiver agree on: the threads, the messages of
// each, and the payload's size and slot stride.
struct Shape {
  explicit Shape(Env& env)
      : nthreads(env.opt.threads),
        n(env.opt.count),
        size(payload_size(env)),
        stride(slot_stride(size)) {}
  size_t nthreads, n, size, stride;
};

void senders(Env& env, bool tagged) {
  Fabric& f = env.fab;
  const Shape p(env);
  const size_t w = env.opt.window;
  const char* fn = tagged ? "fi_tsend" : "fi_send";
  Buffer* buf = f.alloc(p.nthreads * w * p.stride, false);
  env.recv("ready");

  std::mutex err_mu;
  std::string first_error;
  std::vector<std::thread> pool;
  for (size_t t = 0; t < p.nthreads; ++t) {
    pool.emplace_back([&, t] {
      try {
        SlotPool win(env, w, [&](OpCtx* c) {
          if (c->comp.has_flags && !(c->comp.flags & FI_SEND)) {
            env.stats.data_error(std::string(fn) + " completion flags lack FI_SEND");
          }
        });
        for (uint32_t seq = 0; seq < p.n; ++seq) {
          size_t slot = win.acquire();
          uint8_t* s = buf->data + (t * w + slot) * p.stride;
          fill_payload(s, p.size, kThread, static_cast<uint16_t>(t), seq);
          OpCtx* ctx = env.ctxs.make(fn, kThread, seq, slot);
          ctx->tid = static_cast<uint32_t>(t);
          uint64_t tag = tag_of(kThread, static_cast<uint16_t>(t), seq);
          if (tagged) {
            env.post(fn, ctx,
                     [&] { return fi_tsend(f.ep, s, p.size, buf->desc, f.peer, tag, ctx); });
          } else {
            env.post(fn, ctx, [&] { return fi_send(f.ep, s, p.size, buf->desc, f.peer, ctx); });
          }
          win.set(slot, ctx);
        }
        win.drain();
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> g(err_mu);
        if (first_error.empty()) first_error = "thread " + std::to_string(t) + ": " + e.what();
      }
    });
  }
  for (std::thread& th : pool) th.join();
  if (!first_error.empty()) env.fatal(first_error);
  env.sync("fin");
}

void receiver(Env& env, bool tagged) {
  Fabric& f = env.fab;
  const Shape p(env);
  const size_t total = p.nthreads * p.n;
  size_t rx_depth = std::min<size_t>(f.info->rx_attr->size, 512);
  const size_t nslots = std::min(total, std::max(env.opt.window, rx_depth));
  const char* fn = tagged ? "fi_trecv" : "fi_recv";
  Buffer* buf = f.alloc(nslots * p.stride, false);
  std::vector<std::vector<bool>> seen(p.nthreads, std::vector<bool>(p.n, false));
  size_t verified = 0;
  SlotPool win(env, nslots, [&](OpCtx* ctx) {
    const Completion& c = ctx->comp;
    const uint8_t* s = buf->data + ctx->slot * p.stride;
    PayloadHdr h;
    std::string why;
    if (!check_payload(s, p.size, &h, &why)) {
      env.stats.data_error(std::string(fn) + ": " + why);
      return;
    }
    if (h.kind != kThread || h.tid >= p.nthreads || h.seq >= p.n) {
      env.stats.data_error(std::string(fn) + ": unexpected message");
      return;
    }
    if (seen[h.tid][h.seq]) {
      env.stats.data_error("message of thread " + std::to_string(h.tid) + " #" +
                           std::to_string(h.seq) + " received twice");
    }
    seen[h.tid][h.seq] = true;
    ++verified;
    if (tagged && c.has_tag && c.tag != tag_of(kThread, h.tid, h.seq)) {
      env.stats.data_error("completion tag does not match the payload");
    }
    if (c.has_flags && c.len != p.size) env.stats.data_error("completion len mismatch");
  });
  for (size_t i = 0; i < total; ++i) {
    if (i == nslots) env.send("ready");
    size_t slot = win.acquire();
    uint8_t* s = buf->data + slot * p.stride;
    OpCtx* ctx = env.ctxs.make(fn, kThread, static_cast<uint32_t>(i), slot);
    if (tagged) {
      uint64_t tag = tag_of(kThread, 0, 0);
      env.post(fn, ctx, [&] {
        return fi_trecv(f.ep, s, p.size, buf->desc, FI_ADDR_UNSPEC, tag, kAnyThreadIgnore, ctx);
      });
    } else {
      env.post(fn, ctx, [&] { return fi_recv(f.ep, s, p.size, buf->desc, FI_ADDR_UNSPEC, ctx); });
    }
    win.set(slot, ctx);
  }
  win.drain_verified(verified, total);
  env.sync("fin");
}

}  // namespace

void run_threads(Env& env) {
  bool tagged = (env.caps & FI_TAGGED) != 0;
  if (!tagged) env.stats.note("threads: provider lacks FI_TAGGED, used fi_send/fi_recv");
  if (env.rank == 0) {
    senders(env, tagged);
  } else {
    receiver(env, tagged);
  }
}

}  // namespace ftapp
