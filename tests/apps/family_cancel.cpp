// "cancel" family: rank 1 posts receives nobody will match, cancels each with
// fi_cancel(ep, ctx) and expects one FI_ECANCELED error completion per receive,
// carrying exactly the context it was posted with. Tagged receives first, then
// untagged ones (if the provider cancels those).
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "env.h"
#include "families.h"

namespace ftapp {
namespace {

constexpr size_t kRecvLen = 64;
constexpr uint64_t kUnusedTag = 0x0BAD000000000000ULL;
constexpr int kProbeMs = 3000;

// Progresses until every context completed or `ms` passed; returns true if all did.
bool wait_all(Env& env, const std::vector<OpCtx*>& ctxs, int ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    bool all = true;
    for (OpCtx* c : ctxs) {
      if (!env.ctxs.done(c)) {
        all = false;
        break;
      }
    }
    if (all) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    env.progress();
    env.oob.check_abort();
  }
}

// Posts and cancels `count` receives in batches that fit the receive queue;
// `tagged` picks fi_trecv or fi_recv.
void cancel_receives(Env& env, bool tagged) {
  Fabric& f = env.fab;
  const size_t n = env.opt.count;
  const char* fn = tagged ? "fi_trecv" : "fi_recv";
  std::string label = std::string("fi_cancel:") + fn;
  size_t batch = std::max<size_t>(1, std::min(n, f.info->rx_attr->size / 2));
  Buffer* buf = f.alloc(batch * kRecvLen, false);
  for (size_t first = 0; first < n; first += batch) {
    size_t count = std::min(batch, n - first);
    std::vector<OpCtx*> posted;
    for (size_t i = 0; i < count; ++i) {
      uint32_t seq = static_cast<uint32_t>(first + i);
      OpCtx* ctx = env.ctxs.make(fn, 0, seq, i);
      ctx->expect_err = FI_ECANCELED;
      uint8_t* p = buf->data + i * kRecvLen;
      if (tagged) {
        env.post(fn, ctx, [&] {
          return fi_trecv(f.ep, p, kRecvLen, buf->desc, FI_ADDR_UNSPEC, kUnusedTag | seq, 0, ctx);
        });
      } else {
        env.post(fn, ctx,
                 [&] { return fi_recv(f.ep, p, kRecvLen, buf->desc, FI_ADDR_UNSPEC, ctx); });
      }
      posted.push_back(ctx);
      if (seq == 0 && !tagged) {
        // Probe: does this provider cancel untagged receives at all?
        ssize_t r = fi_cancel(&f.ep->fid, ctx);
        if (r != 0) {
          env.skip(label, std::string("fi_cancel returned ") + fi_strerror(int(-r)));
          return;
        }
        env.stats.other_call("fi_cancel");
        if (!wait_all(env, posted, kProbeMs)) {
          env.skip(label, "no completion after fi_cancel");
          return;
        }
      }
    }
    for (OpCtx* ctx : posted) {
      if (!tagged && ctx->seq == 0) continue;  // already canceled by the probe
      ssize_t r = fi_cancel(&f.ep->fid, ctx);
      if (r != 0) {
        env.fatal(std::string("fi_cancel(") + fn + " #" + std::to_string(ctx->seq) +
                  ") failed: " + fi_strerror(int(-r)));
      }
      env.stats.other_call("fi_cancel");
    }
    if (!wait_all(env, posted, env.timeout_ms())) {
      env.fatal("timeout waiting for canceled " + std::string(fn) +
                " completions (outstanding: " + env.ctxs.outstanding_summary() + ")");
    }
    for (OpCtx* ctx : posted) {
      const Completion& c = ctx->comp;
      // Env already failed the run for a success or a wrong error code.
      if (c.is_error && c.err == FI_ECANCELED && c.flags != 0 && (c.flags & FI_RECV) == 0) {
        env.stats.data_error(std::string("canceled ") + fn + " error entry flags lack FI_RECV");
      }
    }
  }
}

}  // namespace

void run_cancel(Env& env) {
  if (env.rank == 1) {
    if (env.caps & FI_TAGGED) {
      cancel_receives(env, true);
    } else {
      env.skip("fi_cancel:fi_trecv", "provider lacks FI_TAGGED");
    }
    if (env.caps & FI_MSG) {
      cancel_receives(env, false);
    } else {
      env.skip("fi_cancel:fi_recv", "provider lacks FI_MSG");
    }
  }
  env.sync("fin");
}

}  // namespace ftapp
