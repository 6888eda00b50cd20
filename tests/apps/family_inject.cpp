// "inject" family: rank 0's endpoint has its TX CQ bound with
// FI_SELECTIVE_COMPLETION. It issues the inject calls (no completions by
// definition), fi_sendmsg with FI_INJECT and no FI_COMPLETION, fi_send without
// FI_COMPLETION (no completion either) and, as a control, fi_sendmsg with
// FI_COMPLETION. Rank 1 verifies every message, every written byte and the atomic.
#include <rdma/fi_atomic.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <sys/uio.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "env.h"
#include "families.h"
#include "payload.h"
#include "plan.h"
#include "quirks.h"

namespace ftapp {
namespace {

constexpr uint16_t kInjectAtomic = 200;  // plan entry for fi_inject_atomic

bool is_tagged_kind(uint16_t k) { return k == kTinject || k == kTinjectdata; }
bool is_msg_kind(uint16_t k) {
  return k == kInject || k == kInjectdata || k == kTinject || k == kTinjectdata ||
         k == kSendmsgInject || k == kSendmsgCompletion || k == kSendSelective;
}
bool is_data_kind(uint16_t k) { return k == kInjectdata || k == kTinjectdata; }

// Target layout: count slots for fi_inject_write, then count for
// fi_inject_writedata. The fi_inject_atomic word has a registration of its own, so
// its remote address is 0 on offset-addressed providers: ofi_rxd 1.17's
// rxd_atomic_inject indexes its AV with the remote address instead of dest_addr,
// which only works when that is 0 (the peer is AV entry 0).
size_t write_offset(uint16_t kind, uint32_t seq, size_t n, size_t size) {
  return ((kind == kInjectWrite ? 0 : n) + seq) * size;
}

std::vector<uint16_t> make_plan(Env& env, size_t size) {
  Fabric& f = env.fab;
  std::vector<uint16_t> plan;
  if (size < kMinPayload) {
    for (const char* fn : {"fi_inject", "fi_injectdata", "fi_tinject", "fi_tinjectdata",
                           "fi_inject_write", "fi_inject_writedata", "fi_inject_atomic"}) {
      env.skip(fn, "provider inject_size " + std::to_string(f.inject_size) + " is too small");
    }
    return plan;
  }
  bool data = f.cq_data_size > 0;
  bool tagged = (env.caps & FI_TAGGED) != 0;
  bool rma = (env.caps & FI_RMA) != 0;
  bool atomic = false;
  if (env.caps & FI_ATOMIC) {
    fi_atomic_attr attr;
    std::memset(&attr, 0, sizeof attr);
    atomic = fi_query_atomic(f.domain, FI_UINT64, FI_SUM, &attr, 0) == 0 && attr.count >= 1;
  }
  auto add = [&](uint16_t k, bool ok, const std::string& why) {
    if (ok) {
      plan.push_back(k);
    } else if (why.size()) {
      env.skip(k == kInjectAtomic ? "fi_inject_atomic" : kind_fn(k), why);
    }
  };
  add(kInject, true, "");
  add(kInjectdata, data, "provider cq_data_size is 0");
  add(kTinject, tagged, "provider lacks FI_TAGGED");
  add(kTinjectdata, tagged && data,
      tagged ? "provider cq_data_size is 0" : "provider lacks FI_TAGGED");
  add(kSendmsgInject, true, "");
  add(kSendmsgCompletion, true, "");
  add(kSendSelective, true, "");
  add(kInjectWrite, rma, "provider lacks FI_RMA");
  add(kInjectWritedata, rma && data, rma ? "provider cq_data_size is 0" : "provider lacks FI_RMA");
  add(kInjectAtomic, atomic,
      (env.caps & FI_ATOMIC) ? "fi_query_atomic: FI_UINT64 FI_SUM unsupported"
                             : "provider lacks FI_ATOMIC");
  return plan;
}

void initiator(Env& env, size_t size) {
  Fabric& f = env.fab;
  const size_t n = env.opt.count;
  std::vector<uint16_t> plan = make_plan(env, size);
  env.send("plan", encode_kinds(plan));
  std::string mrs = env.recv("mr");
  RemoteMem rm = decode_remote(mrs.substr(0, sizeof(RemoteMem)));
  RemoteMem am = decode_remote(mrs.substr(sizeof(RemoteMem)));
  env.recv("ready");
  if (plan.empty()) {
    env.recv("done");
    env.sync("fin");
    return;
  }
  const size_t stride = slot_stride(size);
  Buffer* scratch = f.alloc(stride, false);
  Buffer* wbuf = f.alloc(env.opt.window * stride, false);
  Buffer* selbuf = f.alloc(n * size, false);  // fi_send without completion: never reused
  uint8_t* s = scratch->data;
  SlotPool win(env, env.opt.window, [&](OpCtx* c) {
    if (c->comp.has_flags && !(c->comp.flags & FI_SEND)) {
      env.stats.data_error("fi_sendmsg(FI_COMPLETION) completion flags lack FI_SEND");
    }
  });

  for (uint32_t seq = 0; seq < n; ++seq) {
    for (uint16_t kind : plan) {
      uint64_t data = cq_data_value(kind, seq, f.cq_data_size);
      uint64_t tag = tag_of(kind, 0, seq);
      if (kind != kInjectAtomic && kind != kSendmsgCompletion && kind != kSendSelective) {
        fill_payload(s, size, kind, 0, seq);
      }
      switch (kind) {
        case kInject:
          env.post("fi_inject", nullptr, [&] { return fi_inject(f.ep, s, size, f.peer); });
          env.stats.no_completion("fi_inject");  // an inject has no completion
          break;
        case kInjectdata:
          env.post("fi_injectdata", nullptr,
                   [&] { return fi_injectdata(f.ep, s, size, data, f.peer); });
          env.stats.no_completion("fi_injectdata");  // an inject has no completion
          break;
        case kTinject:
          env.post("fi_tinject", nullptr, [&] { return fi_tinject(f.ep, s, size, f.peer, tag); });
          env.stats.no_completion("fi_tinject");  // an inject has no completion
          break;
        case kTinjectdata:
          env.post("fi_tinjectdata", nullptr,
                   [&] { return fi_tinjectdata(f.ep, s, size, data, f.peer, tag); });
          env.stats.no_completion("fi_tinjectdata");  // an inject has no completion
          break;
        case kSendmsgInject: {
          OpCtx* ctx = env.ctxs.make("fi_sendmsg", kind, seq, 0, false);
          iovec iov{s, size};
          void* desc = scratch->desc;
          fi_msg msg{&iov, &desc, 1, f.peer, ctx, 0};
          env.post("fi_sendmsg", ctx, [&] { return fi_sendmsg(f.ep, &msg, FI_INJECT); });
          env.stats.no_completion("fi_sendmsg");
          break;
        }
        case kSendmsgCompletion: {
          size_t slot = win.acquire();
          uint8_t* w = wbuf->data + slot * stride;
          fill_payload(w, size, kind, 0, seq);
          OpCtx* ctx = env.ctxs.make("fi_sendmsg", kind, seq, slot);
          iovec iov{w, size};
          void* desc = wbuf->desc;
          fi_msg msg{&iov, &desc, 1, f.peer, ctx, 0};
          env.post("fi_sendmsg", ctx, [&] { return fi_sendmsg(f.ep, &msg, FI_COMPLETION); });
          win.set(slot, ctx);
          break;
        }
        case kSendSelective: {
          uint8_t* p = selbuf->data + seq * size;
          fill_payload(p, size, kind, 0, seq);
          OpCtx* ctx = env.ctxs.make("fi_send", kind, seq, 0, false);
          env.post("fi_send", ctx,
                   [&] { return fi_send(f.ep, p, size, selbuf->desc, f.peer, ctx); });
          env.stats.no_completion("fi_send");
          break;
        }
        case kInjectWrite: {
          uint64_t addr = rm.addr + write_offset(kind, seq, n, size);
          env.post("fi_inject_write", nullptr,
                   [&] { return fi_inject_write(f.ep, s, size, f.peer, addr, rm.key); });
          env.stats.no_completion("fi_inject_write");  // an inject has no completion
          break;
        }
        case kInjectWritedata: {
          uint64_t addr = rm.addr + write_offset(kind, seq, n, size);
          env.post("fi_inject_writedata", nullptr,
                   [&] { return fi_inject_writedata(f.ep, s, size, data, f.peer, addr, rm.key); });
          env.stats.no_completion("fi_inject_writedata");  // an inject has no completion
          break;
        }
        case kInjectAtomic: {
          uint64_t operand = seq + 1;
          std::memcpy(s, &operand, sizeof operand);
          env.post("fi_inject_atomic", nullptr, [&] {
            return fi_inject_atomic(f.ep, s, 1, f.peer, am.addr, am.key, FI_UINT64, FI_SUM);
          });
          env.stats.no_completion("fi_inject_atomic");  // an inject has no completion
          break;
        }
        default:
          throw FamilyError("bad inject plan");
      }
    }
  }
  win.drain();
  // The rest completes silently; keep progressing until the target has it all.
  env.recv("done");
  // Any late completion for the silent operations is a context error.
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  while (std::chrono::steady_clock::now() < until) env.progress();
  env.sync("fin");
}

void target(Env& env, size_t size) {
  Fabric& f = env.fab;
  const size_t n = env.opt.count;
  std::vector<uint16_t> plan = decode_kinds(env.recv("plan"));
  Buffer* tgt = f.alloc(2 * n * size, true);
  std::memset(tgt->data, 0xEE, 2 * n * size);
  Buffer* atom = f.alloc(sizeof(uint64_t), true);
  auto* atomic_word = reinterpret_cast<volatile uint64_t*>(atom->data);
  *atomic_word = 0;
  size_t expect_rcd = has_kind(plan, kInjectWritedata) ? n : 0;
  env.allow_unassociated(expect_rcd);
  env.send("mr", encode_remote(*tgt) + encode_remote(*atom));

  std::vector<uint16_t> msg_kinds;
  for (uint16_t k : plan) {
    if (is_msg_kind(k)) msg_kinds.push_back(k);
  }
  const size_t nk = msg_kinds.size();
  const size_t total = n * nk;
  const size_t stride = slot_stride(size);
  size_t rx_depth = std::min<size_t>(f.info->rx_attr->size, 512);
  const size_t nslots = std::max<size_t>(1, std::min(total, std::max(env.opt.window, rx_depth)));
  Buffer* buf = f.alloc(nslots * stride, false);
  std::vector<std::vector<bool>> seen(kKindMax, std::vector<bool>(n, false));
  size_t verified = 0;
  auto verify = [&](OpCtx* ctx) {
    const Completion& c = ctx->comp;
    const uint8_t* s = buf->data + ctx->slot * stride;
    std::string what = std::string(ctx->op) + " #" + std::to_string(ctx->seq);
    PayloadHdr h;
    std::string why;
    if (!canaries_intact(s, stride, {{0, size}})) {
      env.stats.data_error(what + ": bytes beyond the message were modified");
    }
    if (!check_payload(s, size, &h, &why)) {
      env.stats.data_error(what + ": " + why);
      return;
    }
    bool tagged = std::strcmp(ctx->op, "fi_trecv") == 0;
    if (tagged ? (h.kind != ctx->kind || h.seq != ctx->seq)
               : (!has_kind(msg_kinds, h.kind) || is_tagged_kind(h.kind) || h.seq >= n)) {
      env.stats.data_error(what + ": unexpected message " + kind_fn(h.kind));
      return;
    }
    if (seen[h.kind][h.seq]) env.stats.data_error(what + ": message received twice");
    seen[h.kind][h.seq] = true;
    ++verified;
    if (c.has_flags) {
      bool has_rcd = (c.flags & FI_REMOTE_CQ_DATA) != 0;
      if (!has_rcd && is_data_kind(h.kind) && quirk_lost_remote_cq_data_flag(env.opt)) {
        env.stats.note("sockets: FI_REMOTE_CQ_DATA flag missing on an unexpected message");
      } else if (has_rcd != is_data_kind(h.kind)) {
        env.stats.data_error(what + ": FI_REMOTE_CQ_DATA flag " + (has_rcd ? "set" : "missing") +
                             " for " + kind_fn(h.kind));
      }
      if (c.len != size) env.stats.data_error(what + ": completion len mismatch");
    }
    if (c.has_data && is_data_kind(h.kind) &&
        c.data != cq_data_value(h.kind, h.seq, f.cq_data_size)) {
      env.stats.data_error(what + ": remote CQ data mismatch for " + kind_fn(h.kind));
    }
    if (tagged && c.has_tag && c.tag != tag_of(h.kind, 0, h.seq)) {
      env.stats.data_error(what + ": completion tag mismatch");
    }
  };
  SlotPool win(env, nslots, verify);
  SlotContexts contexts(env, nslots);
  for (size_t i = 0; i < total; ++i) {
    size_t slot;
    uint8_t* s = win.acquire_receive(i, buf, stride, &slot);
    uint16_t kind = msg_kinds[i % nk];
    uint32_t seq = static_cast<uint32_t>(i / nk);
    if (is_tagged_kind(kind)) {
      OpCtx* ctx = contexts.get("fi_trecv", kind, seq, slot);
      uint64_t tag = tag_of(kind, 0, seq);
      env.post("fi_trecv", ctx,
               [&] { return fi_trecv(f.ep, s, size, buf->desc, FI_ADDR_UNSPEC, tag, 0, ctx); });
      win.set(slot, ctx);
    } else {
      OpCtx* ctx = contexts.get("fi_recv", kind, seq, slot);
      env.post("fi_recv", ctx,
               [&] { return fi_recv(f.ep, s, size, buf->desc, FI_ADDR_UNSPEC, ctx); });
      win.set(slot, ctx);
    }
  }
  win.drain_verified(verified, total);

  // Writes and the atomic complete silently: poll until they are all visible.
  uint64_t want_atomic = has_kind(plan, kInjectAtomic) ? n * (n + 1) / 2 : 0;
  auto check_writes = [&](std::string* why) {
    size_t bad = 0;
    for (uint16_t kind : {kInjectWrite, kInjectWritedata}) {
      if (!has_kind(plan, kind)) continue;
      for (uint32_t seq = 0; seq < n; ++seq) {
        std::string w;
        if (!check_payload_is(tgt->data + write_offset(kind, seq, n, size), size, kind, 0, seq,
                              &w) &&
            bad++ == 0) {
          *why = std::string(kind_fn(kind)) + " #" + std::to_string(seq) + ": " + w;
        }
      }
    }
    return bad;
  };
  std::string why;
  size_t bad = 0;
  env.poll_landed([&] {
    bad = check_writes(&why);
    return bad == 0 && *atomic_word == want_atomic && env.remote_data_count() >= expect_rcd;
  });
  if (bad != 0) env.stats.data_error(std::to_string(bad) + " injected writes wrong, first: " + why);
  if (*atomic_word != want_atomic) {
    env.stats.data_error("fi_inject_atomic target is " + std::to_string(*atomic_word) +
                         ", expected " + std::to_string(want_atomic));
  }
  std::vector<Completion> rd = env.remote_data();
  if (rd.size() != expect_rcd) {
    env.stats.data_error("expected " + std::to_string(expect_rcd) +
                         " remote CQ data completions for fi_inject_writedata, got " +
                         std::to_string(rd.size()));
  }
  std::vector<bool> got(n, false);
  for (const Completion& c : rd) {
    if (!c.has_data) continue;
    bool found = false;
    for (uint32_t seq = 0; seq < n && !found; ++seq) {
      if (!got[seq] && c.data == cq_data_value(kInjectWritedata, seq, f.cq_data_size)) {
        got[seq] = found = true;
      }
    }
    if (!found) env.stats.data_error("unexpected remote CQ data from fi_inject_writedata");
  }
  env.send("done");
  env.sync("fin");
}

}  // namespace

void run_inject(Env& env) {
  size_t size = std::min(env.opt.size, env.fab.inject_size);
  if (env.rank == 0) {
    initiator(env, size);
  } else {
    target(env, size);
  }
}

}  // namespace ftapp
