// "trigger" family: triggered operations (FI_TRIGGER) held back until a counter
// reaches their threshold. Rank 1 posts its receives as triggered fi_recvmsg and
// fires them with fi_cntr_add; rank 0 posts triggered fi_sendmsg in two batches,
// thresholds 1 and 2, and fires one batch at a time, checking that no batch runs
// early. The struct fi_triggered_context each call gets is the start of the op's
// own context (OpCtx::prov) and must come back in its completion.
#include <rdma/fi_endpoint.h>
#include <rdma/fi_trigger.h>
#include <sys/uio.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "env.h"
#include "families.h"
#include "payload.h"

namespace ftapp {
namespace {

constexpr int kGraceMs = 100;
static_assert(sizeof(fi_triggered_context) <= sizeof(fi_context2), "fits the provider scratch");

// A completion counter that only triggers: closed when the family ends.
class Counter {
 public:
  explicit Counter(Env& env) : env_(env) {
    fi_cntr_attr attr;
    std::memset(&attr, 0, sizeof attr);
    attr.events = FI_CNTR_EVENTS_COMP;
    attr.wait_obj = FI_WAIT_NONE;
    int ret = fi_cntr_open(env.fab.domain, &attr, &cntr_, nullptr);
    if (ret != 0) env.fatal(std::string("fi_cntr_open failed: ") + fi_strerror(-ret));
  }
  ~Counter() {
    int ret = fi_close(&cntr_->fid);
    if (ret != 0) env_.stats.failure(std::string("fi_close(cntr) failed: ") + fi_strerror(-ret));
  }
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;
  fid_cntr* get() const { return cntr_; }
  void add(uint64_t v) {
    int ret = fi_cntr_add(cntr_, v);
    if (ret != 0) env_.fatal(std::string("fi_cntr_add failed: ") + fi_strerror(-ret));
  }

 private:
  Env& env_;
  fid_cntr* cntr_ = nullptr;
};

// A context whose provider part is the fi_triggered_context for `threshold`.
OpCtx* triggered_ctx(Env& env, const char* fn, Counter& cntr, size_t threshold, uint32_t seq,
                     size_t slot) {
  OpCtx* ctx = env.ctxs.make(fn, kSendmsg, seq, slot);
  ctx->kept = true;
  fi_triggered_context t;
  std::memset(&t, 0, sizeof t);
  t.event_type = FI_TRIGGER_THRESHOLD;
  t.trigger.threshold.cntr = cntr.get();
  t.trigger.threshold.threshold = threshold;
  std::memcpy(&ctx->prov, &t, sizeof t);
  return ctx;
}

// How many of `ctxs` completed.
size_t completed(Env& env, const std::vector<OpCtx*>& ctxs) {
  return static_cast<size_t>(
      std::count_if(ctxs.begin(), ctxs.end(), [&](OpCtx* c) { return env.ctxs.done(c); }));
}

void wait_all(Env& env, const std::vector<OpCtx*>& ctxs, const std::string& what) {
  env.wait([&] { return completed(env, ctxs) == ctxs.size(); }, what);
}

void sender(Env& env, size_t size) {
  Fabric& f = env.fab;
  Counter cntr(env);
  const size_t n = env.opt.count;
  Buffer* buf = f.alloc(n * size, false);
  env.recv("ready");
  std::vector<OpCtx*> batch[2];
  for (uint32_t seq = 0; seq < n; ++seq) {
    size_t b = seq < n / 2 ? 0 : 1;
    uint8_t* s = buf->data + seq * size;
    fill_payload(s, size, kSendmsg, 0, seq);
    OpCtx* ctx = triggered_ctx(env, "fi_sendmsg", cntr, b + 1, seq, seq);
    iovec iov{s, size};
    void* desc = buf->desc;
    fi_msg msg{&iov, &desc, 1, f.peer, ctx, 0};
    env.post("fi_sendmsg", ctx, [&] { return fi_sendmsg(f.ep, &msg, FI_TRIGGER | FI_COMPLETION); });
    batch[b].push_back(ctx);
  }
  for (size_t b = 0; b < 2; ++b) {
    env.settle(kGraceMs);
    if (completed(env, batch[b]) != 0) {
      env.stats.data_error("triggered fi_sendmsg batch " + std::to_string(b) +
                           " ran before the counter reached its threshold");
    }
    cntr.add(1);
    wait_all(env, batch[b], "triggered fi_sendmsg batch " + std::to_string(b));
  }
  for (const auto& v : batch) {
    for (const OpCtx* c : v) {
      if (c->comp.has_flags && (c->comp.flags & (FI_SEND | FI_MSG)) != (FI_SEND | FI_MSG)) {
        env.stats.data_error("triggered fi_sendmsg completion flags lack FI_SEND|FI_MSG");
      }
    }
  }
}

void receiver(Env& env, size_t size) {
  Fabric& f = env.fab;
  Counter cntr(env);
  const size_t n = env.opt.count;
  Buffer* buf = f.alloc(n * size, false);
  std::vector<OpCtx*> recvs;
  for (uint32_t seq = 0; seq < n; ++seq) {
    uint8_t* s = buf->data + seq * size;
    OpCtx* ctx = triggered_ctx(env, "fi_recvmsg", cntr, 1, seq, seq);
    iovec iov{s, size};
    void* desc = buf->desc;
    fi_msg msg{&iov, &desc, 1, FI_ADDR_UNSPEC, ctx, 0};
    env.post("fi_recvmsg", ctx,
             [&] { return fi_recvmsg(f.rx_ep, &msg, FI_TRIGGER | FI_COMPLETION); });
    recvs.push_back(ctx);
  }
  cntr.add(1);  // posts the receives
  env.send("ready");
  wait_all(env, recvs, "triggered fi_recvmsg");
  std::vector<bool> seen(n, false);
  for (const OpCtx* c : recvs) {
    std::string what = "triggered fi_recvmsg #" + std::to_string(c->seq);
    PayloadHdr h;
    std::string why;
    if (c->comp.has_flags &&
        ((c->comp.flags & (FI_RECV | FI_MSG)) != (FI_RECV | FI_MSG) || c->comp.len != size)) {
      env.stats.data_error(what + ": completion flags or len wrong");
    }
    if (!check_payload(buf->data + c->slot * size, size, &h, &why)) {
      env.stats.data_error(what + ": " + why);
    } else if (h.kind != kSendmsg || h.seq >= n || seen[h.seq]) {
      env.stats.data_error(what + ": unexpected message #" + std::to_string(h.seq));
    } else {
      seen[h.seq] = true;
    }
  }
}

}  // namespace

void run_trigger(Env& env) { run_by_rank(env, sender, receiver); }

}  // namespace ftapp
