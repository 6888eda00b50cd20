// "multirecv" family: rank 1 posts one FI_MULTI_RECV buffer with fi_recvmsg (flag
// FI_MULTI_RECV) and then one with plain fi_recv on its endpoint whose default
// receive flags include FI_MULTI_RECV; rank 0 sends `count` messages into each.
// Every completion must carry the buffer's own context, point inside the buffer
// at the right payload, and the last one (the one that releases the buffer) alone
// carries FI_MULTI_RECV.
#include <rdma/fi_endpoint.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "env.h"
#include "families.h"
#include "payload.h"

namespace ftapp {
namespace {

constexpr int kGraceMs = 200;

// Sets the provider's FI_OPT_MIN_MULTI_RECV to one message; returns what applies.
size_t set_min_multi_recv(Env& env, size_t size) {
  size_t min = size;
  int ret = fi_setopt(&env.fab.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, sizeof min);
  if (ret == 0) return min;
  size_t len = sizeof min;
  int got = fi_getopt(&env.fab.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, &len);
  if (got != 0 || min == 0) {
    env.fatal(std::string("fi_setopt(FI_OPT_MIN_MULTI_RECV) failed: ") + fi_strerror(-ret) +
              ", fi_getopt too: " + fi_strerror(-got));
  }
  env.stats.note("fi_setopt(FI_OPT_MIN_MULTI_RECV) refused; provider minimum " +
                 std::to_string(min) + " used");
  return std::max(min, size);
}

void send_phase(Env& env, uint16_t phase, size_t size) {
  Fabric& f = env.fab;
  env.recv("ready" + std::to_string(phase));
  Buffer* buf = f.alloc(env.opt.window * size, false);
  SlotPool win(env, env.opt.window, nullptr);
  for (uint32_t seq = 0; seq < env.opt.count; ++seq) {
    size_t slot = win.acquire();
    uint8_t* s = buf->data + slot * size;
    fill_payload(s, size, kSend, phase, seq);
    OpCtx* ctx = env.ctxs.make("fi_send", kSend, seq, slot);
    env.post("fi_send", ctx, [&] { return fi_send(f.ep, s, size, buf->desc, f.peer, ctx); });
    win.set(slot, ctx);
  }
  win.drain();
  env.send("sent" + std::to_string(phase));
}

// Checks every completion of one multi-receive buffer.
void verify(Env& env, const OpCtx* ctx, const Buffer* buf, size_t cap, size_t size,
            uint16_t phase) {
  const std::vector<Completion> cs = env.ctxs.completions(ctx);
  const size_t n = env.opt.count;
  std::vector<bool> seen(n, false);
  std::vector<size_t> offsets;
  size_t released_at = cs.size();
  size_t messages = 0;
  for (size_t k = 0; k < cs.size(); ++k) {
    const Completion& c = cs[k];
    const std::string what = std::string(ctx->op) + " buffer completion " + std::to_string(k);
    if (c.is_error) continue;  // Env failed the run already
    // Without flags, one entry past the messages can only be the release on its own.
    if (!c.has_flags && k == n && cs.size() == n + 1) continue;
    if (c.has_flags && (c.flags & FI_MULTI_RECV)) {
      if (released_at != cs.size()) env.stats.data_error(what + ": second FI_MULTI_RECV flag");
      released_at = k;
      if (c.len == 0) continue;  // the release reported on its own
    }
    if (c.has_flags && ((c.flags & (FI_RECV | FI_MSG)) != (FI_RECV | FI_MSG) || c.len != size)) {
      env.stats.data_error(what + ": flags lack FI_RECV|FI_MSG or len " + std::to_string(c.len) +
                           " != " + std::to_string(size));
    }
    // Without a buf field the messages are taken to be packed in arrival order.
    size_t off = messages * size;
    if (c.has_data) {
      const uint8_t* p = static_cast<const uint8_t*>(c.buf);
      if (p < buf->data || p + size > buf->data + cap) {
        env.stats.data_error(what + ": buf is outside the posted buffer");
        continue;
      }
      off = static_cast<size_t>(p - buf->data);
    }
    ++messages;
    offsets.push_back(off);
    PayloadHdr h;
    std::string why;
    if (!check_payload(buf->data + off, size, &h, &why)) {
      env.stats.data_error(what + ": " + why);
    } else if (h.kind != kSend || h.tid != phase || h.seq >= n || seen[h.seq]) {
      env.stats.data_error(what + ": unexpected or repeated message #" + std::to_string(h.seq));
    } else {
      seen[h.seq] = true;
    }
  }
  if (messages != n) {
    env.stats.data_error(std::string(ctx->op) + " buffer got " + std::to_string(messages) +
                         " messages, expected " + std::to_string(n));
  }
  bool flags = env.opt.cq_format != FI_CQ_FORMAT_CONTEXT;
  if (flags && released_at + 1 != cs.size()) {
    env.stats.data_error(std::string(ctx->op) + " buffer: FI_MULTI_RECV flag not on its last (" +
                         std::to_string(cs.size()) + ") completion");
  }
  std::sort(offsets.begin(), offsets.end());
  for (size_t i = 1; i < offsets.size(); ++i) {
    if (offsets[i] < offsets[i - 1] + size) {
      env.stats.data_error(std::string(ctx->op) + " buffer: messages overlap");
      break;
    }
  }
}

void recv_phase(Env& env, uint16_t phase, size_t size, size_t min) {
  Fabric& f = env.fab;
  const size_t n = env.opt.count;
  // Room for n messages; what remains after them is below the minimum.
  const size_t cap = n * size + min - 1;
  Buffer* buf = f.alloc(cap, false);
  std::memset(buf->data, kCanary, cap);
  const char* fn = phase == 0 ? "fi_recvmsg" : "fi_recv";
  OpCtx* ctx = env.ctxs.make_multi(fn, kSend, phase);
  ctx->kept = true;
  if (phase == 0) {
    iovec iov{buf->data, cap};
    void* desc = buf->desc;
    fi_msg msg{&iov, &desc, 1, FI_ADDR_UNSPEC, ctx, 0};
    env.post(fn, ctx, [&] { return fi_recvmsg(f.ep, &msg, FI_MULTI_RECV | FI_COMPLETION); });
  } else {
    env.post(fn, ctx,
             [&] { return fi_recv(f.ep, buf->data, cap, buf->desc, FI_ADDR_UNSPEC, ctx); });
  }
  env.send("ready" + std::to_string(phase));
  const bool flags = env.opt.cq_format != FI_CQ_FORMAT_CONTEXT;
  env.wait(
      [&] {
        std::vector<Completion> cs = env.ctxs.completions(ctx);
        if (!flags) return cs.size() >= n;
        for (const Completion& c : cs) {
          if (c.flags & FI_MULTI_RECV) return true;
        }
        return false;
      },
      std::string(fn) + " buffer release (FI_MULTI_RECV completion)");
  env.recv("sent" + std::to_string(phase));
  env.settle(kGraceMs);  // a stray completion for the released buffer would show here
  env.ctxs.finish(ctx);
  verify(env, ctx, buf, cap, size, phase);
}

}  // namespace

void run_multirecv(Env& env) {
  const size_t size = payload_size(env);
  for (uint16_t phase = 0; phase < 2; ++phase) {
    if (env.rank == 0) {
      send_phase(env, phase, size);
    } else {
      recv_phase(env, phase, size, set_min_multi_recv(env, size));
    }
  }
  env.sync("fin");
}

}  // namespace ftapp
