// "peek" family: rank 0 sends `count` tagged messages; rank 1 finds each with
// fi_trecvmsg(FI_PEEK), claims it with FI_PEEK|FI_CLAIM and receives it with
// FI_CLAIM, handing back the context of the claiming peek (fi_tagged(3)). A peek
// for a tag nobody sends must fail with FI_ENOMSG. Every completion and error
// entry must carry exactly the context of the call it answers.
#include <rdma/fi_tagged.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

#include "env.h"
#include "families.h"
#include "payload.h"

namespace ftapp {
namespace {

constexpr uint64_t kNoSuchTag = 0x0BAD00000000BEEFULL;
const char* const kFn = "fi_trecvmsg";
constexpr int kProbeMs = 3000;
constexpr int kRetryMs = 1;  // between peeks that found nothing

bool refused_as_unsupported(ssize_t r) {
  return r == -FI_ENOSYS || r == -FI_EOPNOTSUPP || r == -FI_EINVAL;
}

// One fi_trecvmsg into `buf` with `flags` and the context `ctx`.
ssize_t trecvmsg(Env& env, OpCtx* ctx, Buffer* buf, size_t size, uint64_t tag, uint64_t flags) {
  iovec iov{buf->data, size};
  void* desc = buf->desc;
  fi_msg_tagged msg{&iov, &desc, 1, FI_ADDR_UNSPEC, tag, 0, ctx, 0};
  return env.try_post(kFn, ctx,
                      [&] { return fi_trecvmsg(env.fab.ep, &msg, flags | FI_COMPLETION); });
}

OpCtx* kept_ctx(Env& env, uint32_t seq, int expect_err) {
  OpCtx* ctx = env.ctxs.make(kFn, kTsend, seq);
  ctx->kept = true;
  ctx->expect_err = expect_err;
  return ctx;
}

// What a successful peek, claim or receive reports about message `seq`.
void check_found(Env& env, const OpCtx* ctx, const char* step, size_t size, uint32_t seq) {
  const Completion& c = ctx->comp;
  std::string what = std::string(step) + " #" + std::to_string(seq);
  if (c.has_flags && (c.flags & (FI_RECV | FI_TAGGED)) != (FI_RECV | FI_TAGGED)) {
    env.stats.data_error(what + ": completion flags lack FI_RECV|FI_TAGGED");
  }
  if (c.has_flags && c.len != size) {
    env.stats.data_error(what + ": completion len " + std::to_string(c.len));
  }
  if (c.has_tag && c.tag != tag_of(kTsend, 0, seq)) {
    env.stats.data_error(what + ": completion tag mismatch");
  }
}

// The first peek, before anything is sent, tells whether the provider peeks.
std::string probe_peek(Env& env, Buffer* buf, size_t size) {
  OpCtx* ctx = kept_ctx(env, 0, FI_ENOMSG);
  ssize_t r = trecvmsg(env, ctx, buf, size, kNoSuchTag, FI_PEEK);
  if (refused_as_unsupported(r))
    return std::string("fi_trecvmsg(FI_PEEK) returned ") + fi_strerror(static_cast<int>(-r));
  if (r != 0) env.fatal(std::string("fi_trecvmsg(FI_PEEK) failed: ") + fi_strerror(int(-r)));
  // Env checks that it is the FI_ENOMSG error entry.
  if (!env.wait_up_to([&] { return env.ctxs.done(ctx); }, kProbeMs)) {
    return "fi_trecvmsg(FI_PEEK) for an absent tag got no completion (FI_ENOMSG) in " +
           std::to_string(kProbeMs / 1000) + " s";
  }
  return std::string();
}

// Peeks until message `seq` has arrived.
void peek_until_found(Env& env, Buffer* buf, size_t size, uint32_t seq) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(env.timeout_ms());
  for (;;) {
    OpCtx* ctx = kept_ctx(env, seq, FI_ENOMSG);
    ctx->err_optional = true;
    if (trecvmsg(env, ctx, buf, size, tag_of(kTsend, 0, seq), FI_PEEK) != 0) {
      env.fatal("fi_trecvmsg(FI_PEEK) refused");
    }
    env.wait_done(ctx);
    if (!ctx->comp.is_error) return check_found(env, ctx, "FI_PEEK", size, seq);
    if (std::chrono::steady_clock::now() > deadline) {
      env.fatal("FI_PEEK never found message #" + std::to_string(seq));
    }
    env.settle(kRetryMs);
  }
}

// Claims message `seq` and receives it. Returns false if FI_CLAIM is unsupported.
bool claim_and_receive(Env& env, Buffer* buf, size_t size, uint32_t seq) {
  uint64_t tag = tag_of(kTsend, 0, seq);
  OpCtx* ctx = kept_ctx(env, seq, 0);
  ssize_t r = trecvmsg(env, ctx, buf, size, tag, FI_PEEK | FI_CLAIM);
  if (refused_as_unsupported(r) && seq == 0) {
    env.skip("FI_CLAIM:fi_trecvmsg", std::string("fi_trecvmsg(FI_PEEK|FI_CLAIM) returned ") +
                                         fi_strerror(static_cast<int>(-r)));
    return false;
  }
  if (r != 0)
    env.fatal(std::string("fi_trecvmsg(FI_PEEK|FI_CLAIM) failed: ") +
              fi_strerror(static_cast<int>(-r)));
  env.wait_done(ctx);
  check_found(env, ctx, "FI_PEEK|FI_CLAIM", size, seq);
  std::memset(buf->data, kCanary, size);
  env.ctxs.rearm(ctx, kFn);  // FI_CLAIM takes the peek's own fi_context back
  if (trecvmsg(env, ctx, buf, size, tag, FI_CLAIM) != 0) env.fatal("FI_CLAIM receive refused");
  env.wait_done(ctx);
  check_found(env, ctx, "FI_CLAIM", size, seq);
  std::string why;
  if (!check_payload_is(buf->data, size, kTsend, 0, seq, &why)) {
    env.stats.data_error("FI_CLAIM #" + std::to_string(seq) + ": " + why);
  }
  return true;
}

// Without FI_CLAIM the peeked message is taken with a plain tagged receive.
void receive(Env& env, Buffer* buf, size_t size, uint32_t seq) {
  OpCtx* ctx = env.ctxs.make("fi_trecv", kTsend, seq);
  std::memset(buf->data, kCanary, size);
  env.post("fi_trecv", ctx, [&] {
    return fi_trecv(env.fab.ep, buf->data, size, buf->desc, FI_ADDR_UNSPEC, tag_of(kTsend, 0, seq),
                    0, ctx);
  });
  env.wait_done(ctx);
  check_found(env, ctx, "fi_trecv", size, seq);
  std::string why;
  if (!check_payload_is(buf->data, size, kTsend, 0, seq, &why)) {
    env.stats.data_error("fi_trecv #" + std::to_string(seq) + ": " + why);
  }
}

void sender(Env& env, size_t size) {
  Fabric& f = env.fab;
  env.agree_supported("peek", nullptr);
  Buffer* buf = f.alloc(env.opt.window * size, false);
  SlotPool win(env, env.opt.window, nullptr);
  for (uint32_t seq = 0; seq < env.opt.count; ++seq) {
    size_t slot = win.acquire();
    uint8_t* s = buf->data + slot * size;
    fill_payload(s, size, kTsend, 0, seq);
    OpCtx* ctx = env.ctxs.make("fi_tsend", kTsend, seq, slot);
    uint64_t tag = tag_of(kTsend, 0, seq);
    env.post("fi_tsend", ctx, [&] { return fi_tsend(f.ep, s, size, buf->desc, f.peer, tag, ctx); });
    win.set(slot, ctx);
  }
  win.drain();
  env.send("sent");
}

void receiver(Env& env, size_t size) {
  Buffer* buf = env.fab.alloc(size, false);
  std::string why_not = probe_peek(env, buf, size);
  env.agree_supported("peek", &why_not);
  bool claim = true;
  for (uint32_t seq = 0; seq < env.opt.count; ++seq) {
    peek_until_found(env, buf, size, seq);
    if (claim) claim = claim_and_receive(env, buf, size, seq);
    if (!claim) receive(env, buf, size, seq);
  }
  env.recv("sent");
}

}  // namespace

void run_peek(Env& env) { run_by_rank(env, sender, receiver); }

}  // namespace ftapp
