#include "twosided.h"

#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>
#include <sys/uio.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "env.h"
#include "payload.h"
#include "plan.h"
#include "quirks.h"

namespace ftapp {
namespace {

// Receive variants, stored in OpCtx::tid on rank 1.
enum RecvVariant : uint32_t { kPlain = 0, kVector = 1, kMsg = 2 };

bool is_data_kind(uint16_t k) { return k == kSenddata || k == kTsenddata; }
bool is_vector_kind(uint16_t k) {
  return k == kSendv || k == kTsendv || k == kSendmsg || k == kTsendmsg;
}

size_t payload_size(Env& env) {
  if (env.opt.size < kMinPayload) {
    env.stats.note("--size raised to " + std::to_string(kMinPayload) + " for payload header");
    return kMinPayload;
  }
  return env.opt.size;
}

void build_iov(uint8_t* slot, const std::vector<Piece>& pieces, void* desc, iovec* iov,
               void** descs) {
  for (size_t i = 0; i < pieces.size(); ++i) {
    iov[i].iov_base = slot + pieces[i].off;
    iov[i].iov_len = pieces[i].len;
    descs[i] = desc;
  }
}

void check_send_completion(Env& env, OpCtx* ctx, bool tagged) {
  const Completion& c = ctx->comp;
  if (!c.has_flags) return;
  uint64_t need = FI_SEND | (tagged ? FI_TAGGED : FI_MSG);
  if ((c.flags & need) != need) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(c.flags));
    env.stats.data_error(std::string(ctx->op) + " completion flags " + hex + " lack FI_SEND|" +
                         (tagged ? "FI_TAGGED" : "FI_MSG"));
  }
}

void sender(Env& env, bool tagged, size_t size) {
  Fabric& f = env.fab;
  std::vector<uint16_t> kinds = tagged
                                    ? std::vector<uint16_t>{kTsend, kTsendv, kTsendmsg, kTsenddata}
                                    : std::vector<uint16_t>{kSend, kSendv, kSendmsg, kSenddata};
  if (f.cq_data_size == 0) {
    env.skip(kind_fn(kinds.back()), "provider cq_data_size is 0");
    kinds.pop_back();
  }
  env.send("plan", encode_kinds(kinds));
  env.recv("ready");  // receives are pre-posted: no unexpected messages
  const size_t stride = slot_stride(size);
  const size_t nslots = env.opt.window;
  Buffer* buf = f.alloc(nslots * stride, false);
  std::vector<Piece> pieces = split_pieces(size, f.tx_iov_limit);
  std::vector<uint8_t> tmp(size);
  SlotPool win(env, nslots, [&](OpCtx* c) { check_send_completion(env, c, tagged); });

  for (uint32_t seq = 0; seq < env.opt.count; ++seq) {
    for (uint16_t kind : kinds) {
      size_t slot = win.acquire();
      uint8_t* s = buf->data + slot * stride;
      const char* fn = kind_fn(kind);
      OpCtx* ctx = env.ctxs.make(fn, kind, seq, slot);
      uint64_t tag = tag_of(kind, 0, seq);
      iovec iov[3];
      void* descs[3];
      if (is_vector_kind(kind)) {
        fill_payload(tmp.data(), size, kind, 0, seq);
        scatter(tmp.data(), s, pieces);
        build_iov(s, pieces, buf->desc, iov, descs);
      } else {
        fill_payload(s, size, kind, 0, seq);
      }
      uint64_t data = cq_data_value(kind, seq, f.cq_data_size);
      switch (kind) {
        case kSend:
          env.post(fn, ctx, [&] { return fi_send(f.ep, s, size, buf->desc, f.peer, ctx); });
          break;
        case kSendv:
          env.post(fn, ctx, [&] { return fi_sendv(f.ep, iov, descs, pieces.size(), f.peer, ctx); });
          break;
        case kSendmsg: {
          fi_msg msg{iov, descs, pieces.size(), f.peer, ctx, 0};
          env.post(fn, ctx, [&] { return fi_sendmsg(f.ep, &msg, FI_COMPLETION); });
          break;
        }
        case kSenddata:
          env.post(fn, ctx,
                   [&] { return fi_senddata(f.ep, s, size, buf->desc, data, f.peer, ctx); });
          break;
        case kTsend:
          env.post(fn, ctx, [&] { return fi_tsend(f.ep, s, size, buf->desc, f.peer, tag, ctx); });
          break;
        case kTsendv:
          env.post(fn, ctx,
                   [&] { return fi_tsendv(f.ep, iov, descs, pieces.size(), f.peer, tag, ctx); });
          break;
        case kTsendmsg: {
          fi_msg_tagged msg{iov, descs, pieces.size(), f.peer, tag, 0, ctx, 0};
          env.post(fn, ctx, [&] { return fi_tsendmsg(f.ep, &msg, FI_COMPLETION); });
          break;
        }
        default:
          env.post(fn, ctx,
                   [&] { return fi_tsenddata(f.ep, s, size, buf->desc, data, f.peer, tag, ctx); });
          break;
      }
      win.set(slot, ctx);
    }
  }
  win.drain();
  env.sync("fin");
}

void receiver(Env& env, bool tagged, size_t size) {
  Fabric& f = env.fab;
  std::vector<uint16_t> kinds = decode_kinds(env.recv("plan"));
  if (kinds.empty()) throw FamilyError("empty plan");
  const size_t nk = kinds.size();
  const size_t total = env.opt.count * nk;
  const size_t stride = slot_stride(size);
  // Pre-post as many receives as the provider's receive queue comfortably takes, so
  // that (at default counts) no message arrives before its receive is posted.
  size_t rx_depth = f.info->rx_attr->size < 512 ? f.info->rx_attr->size : 512;
  const size_t nslots = std::min(total, std::max(env.opt.window, rx_depth));
  Buffer* buf = f.alloc(nslots * stride, false);
  std::vector<Piece> vpieces = split_pieces(size, f.rx_iov_limit);
  std::vector<Piece> whole{{0, size}};
  std::vector<std::vector<bool>> seen(kKindMax, std::vector<bool>(env.opt.count, false));
  size_t verified = 0;

  auto verify = [&](OpCtx* ctx) {
    const Completion& c = ctx->comp;
    const uint8_t* s = buf->data + ctx->slot * stride;
    const std::vector<Piece>& pieces = ctx->tid == kPlain ? whole : vpieces;
    std::string what = std::string(ctx->op) + " #" + std::to_string(ctx->seq);
    if (!canaries_intact(s, stride, pieces)) {
      env.stats.data_error(what + ": bytes outside the receive buffers were modified");
    }
    std::string data = gather(s, pieces);
    const uint8_t* p = reinterpret_cast<const uint8_t*>(data.data());
    std::string why;
    PayloadHdr h;
    bool ok = tagged
                  ? check_payload_is(p, size, static_cast<uint16_t>(ctx->kind), 0, ctx->seq, &why)
                  : check_payload(p, size, &h, &why);
    if (!ok) {
      env.stats.data_error(what + ": " + why);
      return;
    }
    uint16_t kind = tagged ? static_cast<uint16_t>(ctx->kind) : h.kind;
    uint32_t seq = tagged ? ctx->seq : h.seq;
    if (!has_kind(kinds, kind) || seq >= env.opt.count) {
      env.stats.data_error(what + ": unexpected message " + kind_fn(kind));
      return;
    }
    if (seen[kind][seq]) {
      env.stats.data_error(what + ": message " + kind_fn(kind) + " #" + std::to_string(seq) +
                           " received twice");
    }
    seen[kind][seq] = true;
    ++verified;
    if (c.has_flags) {
      uint64_t need = FI_RECV | (tagged ? FI_TAGGED : FI_MSG);
      if ((c.flags & need) != need) {
        env.stats.data_error(what + ": completion flags lack FI_RECV|" +
                             (tagged ? "FI_TAGGED" : "FI_MSG"));
      }
      if (c.len != size) {
        env.stats.data_error(what + ": completion len " + std::to_string(c.len) +
                             " != " + std::to_string(size));
      }
      bool has_rcd = (c.flags & FI_REMOTE_CQ_DATA) != 0;
      if (!has_rcd && is_data_kind(kind) && quirk_lost_remote_cq_data_flag(env.opt) &&
          (!c.has_data || c.data == cq_data_value(kind, seq, f.cq_data_size))) {
        env.stats.note("sockets: FI_REMOTE_CQ_DATA flag missing on an unexpected message");
      } else if (has_rcd != is_data_kind(kind)) {
        env.stats.data_error(what + ": FI_REMOTE_CQ_DATA flag " + (has_rcd ? "set" : "missing") +
                             " for " + kind_fn(kind));
      }
    }
    if (c.has_data && is_data_kind(kind) && c.data != cq_data_value(kind, seq, f.cq_data_size)) {
      env.stats.data_error(what + ": remote CQ data mismatch for " + kind_fn(kind));
    }
    if (tagged && c.has_tag && c.tag != tag_of(kind, 0, seq)) {
      env.stats.data_error(what + ": completion tag mismatch");
    }
    // Without FI_SOURCE the source address is not defined (rxm leaves it untouched).
    if (c.has_src && (env.caps & FI_SOURCE) && !f.msg_ep && c.src != f.peer) {
      env.stats.data_error(what + ": fi_cq_readfrom source address " + std::to_string(c.src) +
                           " is not the peer " + std::to_string(f.peer));
    }
  };
  SlotPool win(env, nslots, verify);
  SlotContexts contexts(env, nslots);

  for (size_t i = 0; i < total; ++i) {
    size_t slot;
    uint8_t* s = win.acquire_receive(i, buf, stride, &slot);
    size_t j = i % nk;
    uint16_t kind = kinds[j];
    uint32_t seq = static_cast<uint32_t>(i / nk);
    RecvVariant var = j == 1 ? kVector : j == 2 ? kMsg : kPlain;
    const char* fn = tagged ? (var == kPlain    ? "fi_trecv"
                               : var == kVector ? "fi_trecvv"
                                                : "fi_trecvmsg")
                            : (var == kPlain    ? "fi_recv"
                               : var == kVector ? "fi_recvv"
                                                : "fi_recvmsg");
    OpCtx* ctx = contexts.get(fn, kind, seq, slot);
    ctx->tid = var;
    const std::vector<Piece>& pieces = var == kPlain ? whole : vpieces;
    iovec iov[3];
    void* descs[3];
    build_iov(s, pieces, buf->desc, iov, descs);
    uint64_t tag = tag_of(kind, 0, seq);
    if (!tagged) {
      if (var == kPlain) {
        env.post(fn, ctx,
                 [&] { return fi_recv(f.rx_ep, s, size, buf->desc, FI_ADDR_UNSPEC, ctx); });
      } else if (var == kVector) {
        env.post(fn, ctx,
                 [&] { return fi_recvv(f.rx_ep, iov, descs, pieces.size(), FI_ADDR_UNSPEC, ctx); });
      } else {
        fi_msg msg{iov, descs, pieces.size(), f.peer, ctx, 0};
        env.post(fn, ctx, [&] { return fi_recvmsg(f.rx_ep, &msg, FI_COMPLETION); });
      }
    } else {
      if (var == kPlain) {
        env.post(fn, ctx, [&] {
          return fi_trecv(f.rx_ep, s, size, buf->desc, FI_ADDR_UNSPEC, tag, 0, ctx);
        });
      } else if (var == kVector) {
        env.post(fn, ctx, [&] {
          return fi_trecvv(f.rx_ep, iov, descs, pieces.size(), FI_ADDR_UNSPEC, tag, 0, ctx);
        });
      } else {
        fi_msg_tagged msg{iov, descs, pieces.size(), f.peer, tag, 0, ctx, 0};
        env.post(fn, ctx, [&] { return fi_trecvmsg(f.rx_ep, &msg, FI_COMPLETION); });
      }
    }
    win.set(slot, ctx);
  }
  win.drain_verified(verified, total);
  env.sync("fin");
}

}  // namespace

void run_two_sided(Env& env, bool tagged) {
  size_t size = payload_size(env);
  if (env.rank == 0) {
    sender(env, tagged, size);
  } else {
    receiver(env, tagged, size);
  }
}

}  // namespace ftapp
