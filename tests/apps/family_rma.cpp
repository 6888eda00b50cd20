// "rma" family: rank 1 exposes a registered buffer; rank 0 writes into it with every
// write variant and reads a pre-filled area back with every read variant.
#include <rdma/fi_rma.h>
#include <sys/uio.h>

#include <cstring>
#include <string>
#include <vector>

#include "env.h"
#include "families.h"
#include "payload.h"
#include "plan.h"

namespace ftapp {
namespace {

const uint16_t kWriteKinds[] = {kWrite, kWritev, kWritemsg, kWritedata};
const uint16_t kReadKinds[] = {kRead, kReadv, kReadmsg};

size_t rma_size(Env& env) {
  if (env.opt.size < kMinPayload) {
    env.stats.note("--size raised to " + std::to_string(kMinPayload) + " for payload header");
    return kMinPayload;
  }
  return env.opt.size;
}

// Target layout: 4 write areas of count slots, then one read area of count slots.
size_t write_offset(size_t kind_index, uint32_t seq, size_t count, size_t size) {
  return (kind_index * count + seq) * size;
}
size_t read_offset(uint32_t seq, size_t count, size_t size) { return (4 * count + seq) * size; }

void initiator(Env& env, size_t size) {
  Fabric& f = env.fab;
  const size_t n = env.opt.count;
  std::vector<uint16_t> kinds(std::begin(kWriteKinds), std::end(kWriteKinds));
  if (f.cq_data_size == 0) {
    env.skip("fi_writedata", "provider cq_data_size is 0");
    kinds.pop_back();
  }
  env.send("plan", encode_kinds(kinds));
  RemoteMem rm = decode_remote(env.recv("mr"));
  if (rm.len < 5 * n * size) throw FamilyError("target buffer too small");

  const size_t stride = slot_stride(size);
  const size_t nslots = env.opt.window;
  Buffer* buf = f.alloc(nslots * stride, false);
  std::vector<Piece> lpieces = split_pieces(size, f.tx_iov_limit);
  // Remote side of *msg variants: two pieces of the slot, split elsewhere.
  size_t rsplit = size / 2 ? size / 2 : size;
  std::vector<uint8_t> tmp(size);

  // Writes.
  {
    SlotPool win(env, nslots, [&](OpCtx* c) {
      if (c->comp.has_flags && (c->comp.flags & (FI_RMA | FI_WRITE)) != (FI_RMA | FI_WRITE)) {
        env.stats.data_error(std::string(c->op) + " completion flags lack FI_RMA|FI_WRITE");
      }
    });
    for (uint32_t seq = 0; seq < n; ++seq) {
      for (size_t ki = 0; ki < kinds.size(); ++ki) {
        uint16_t kind = kinds[ki];
        size_t slot = win.acquire();
        uint8_t* s = buf->data + slot * stride;
        const char* fn = kind_fn(kind);
        OpCtx* ctx = env.ctxs.make(fn, kind, seq, slot);
        uint64_t raddr = rm.addr + write_offset(ki, seq, n, size);
        iovec iov[3];
        void* descs[3];
        fi_rma_iov riov[2] = {{raddr, rsplit, rm.key}, {raddr + rsplit, size - rsplit, rm.key}};
        size_t nriov = (rsplit < size && f.rma_iov_limit >= 2) ? 2 : 1;
        if (nriov == 1) riov[0].len = size;
        if (kind == kWritev || kind == kWritemsg) {
          fill_payload(tmp.data(), size, kind, 0, seq);
          scatter(tmp.data(), s, lpieces);
          for (size_t i = 0; i < lpieces.size(); ++i) {
            iov[i].iov_base = s + lpieces[i].off;
            iov[i].iov_len = lpieces[i].len;
            descs[i] = buf->desc;
          }
        } else {
          fill_payload(s, size, kind, 0, seq);
        }
        switch (kind) {
          case kWrite:
            env.post(fn, ctx, [&] {
              return fi_write(f.ep, s, size, buf->desc, f.peer, raddr, rm.key, ctx);
            });
            break;
          case kWritev:
            env.post(fn, ctx, [&] {
              return fi_writev(f.ep, iov, descs, lpieces.size(), f.peer, raddr, rm.key, ctx);
            });
            break;
          case kWritemsg: {
            fi_msg_rma msg{iov, descs, lpieces.size(), f.peer, riov, nriov, ctx, 0};
            env.post(fn, ctx, [&] { return fi_writemsg(f.ep, &msg, FI_COMPLETION); });
            break;
          }
          default: {
            uint64_t data = cq_data_value(kind, seq, f.cq_data_size);
            env.post(fn, ctx, [&] {
              return fi_writedata(f.ep, s, size, buf->desc, data, f.peer, raddr, rm.key, ctx);
            });
            break;
          }
        }
        win.set(slot, ctx);
      }
    }
    win.drain();
  }

  // Reads of the pre-filled area, verified here.
  {
    std::vector<Piece> whole{{0, size}};
    auto pieces_of = [&](const OpCtx* c) -> const std::vector<Piece>& {
      return c->kind == kRead ? whole : lpieces;
    };
    SlotPool win(env, nslots, [&](OpCtx* c) {
      const uint8_t* s = buf->data + c->slot * stride;
      std::string what = std::string(c->op) + " #" + std::to_string(c->seq);
      if (!canaries_intact(s, stride, pieces_of(c))) {
        env.stats.data_error(what + ": bytes outside the read buffers were modified");
      }
      std::string data = gather(s, pieces_of(c));
      std::string why;
      if (!check_payload_is(reinterpret_cast<const uint8_t*>(data.data()), size, kReadSource, 0,
                            c->seq, &why)) {
        env.stats.data_error(what + ": " + why);
      }
      if (c->comp.has_flags && (c->comp.flags & (FI_RMA | FI_READ)) != (FI_RMA | FI_READ)) {
        env.stats.data_error(what + ": completion flags lack FI_RMA|FI_READ");
      }
    });
    for (uint32_t seq = 0; seq < n; ++seq) {
      for (uint16_t kind : kReadKinds) {
        size_t slot = win.acquire();
        uint8_t* s = buf->data + slot * stride;
        std::memset(s, kCanary, stride);
        const char* fn = kind_fn(kind);
        OpCtx* ctx = env.ctxs.make(fn, kind, seq, slot);
        uint64_t raddr = rm.addr + read_offset(seq, n, size);
        const std::vector<Piece>& pieces = pieces_of(ctx);
        iovec iov[3];
        void* descs[3];
        for (size_t i = 0; i < pieces.size(); ++i) {
          iov[i].iov_base = s + pieces[i].off;
          iov[i].iov_len = pieces[i].len;
          descs[i] = buf->desc;
        }
        fi_rma_iov riov[2] = {{raddr, rsplit, rm.key}, {raddr + rsplit, size - rsplit, rm.key}};
        size_t nriov = (rsplit < size && f.rma_iov_limit >= 2) ? 2 : 1;
        if (nriov == 1) riov[0].len = size;
        switch (kind) {
          case kRead:
            env.post(fn, ctx,
                     [&] { return fi_read(f.ep, s, size, buf->desc, f.peer, raddr, rm.key, ctx); });
            break;
          case kReadv:
            env.post(fn, ctx, [&] {
              return fi_readv(f.ep, iov, descs, pieces.size(), f.peer, raddr, rm.key, ctx);
            });
            break;
          default: {
            fi_msg_rma msg{iov, descs, pieces.size(), f.peer, riov, nriov, ctx, 0};
            env.post(fn, ctx, [&] { return fi_readmsg(f.ep, &msg, FI_COMPLETION); });
            break;
          }
        }
        win.set(slot, ctx);
      }
    }
    win.drain();
  }
  env.send("done");
  env.sync("fin");
}

// Checks the write areas; returns the number of bad slots (first problem in *why).
size_t check_writes(const uint8_t* base, const std::vector<uint16_t>& kinds, size_t n, size_t size,
                    std::string* why) {
  size_t bad = 0;
  for (size_t ki = 0; ki < kinds.size(); ++ki) {
    for (uint32_t seq = 0; seq < n; ++seq) {
      std::string w;
      if (!check_payload_is(base + write_offset(ki, seq, n, size), size, kinds[ki], 0, seq, &w)) {
        if (bad++ == 0)
          *why = std::string(kind_fn(kinds[ki])) + " #" + std::to_string(seq) + ": " + w;
      }
    }
  }
  return bad;
}

void target(Env& env, size_t size) {
  Fabric& f = env.fab;
  const size_t n = env.opt.count;
  std::vector<uint16_t> kinds = decode_kinds(env.recv("plan"));
  if (kinds.size() > 4) throw FamilyError("bad plan");
  Buffer* tgt = f.alloc(5 * n * size, true);
  std::memset(tgt->data, 0xEE, 4 * n * size);
  for (uint32_t seq = 0; seq < n; ++seq) {
    fill_payload(tgt->data + read_offset(seq, n, size), size, kReadSource, 0, seq);
  }
  size_t expect_data = has_kind(kinds, kWritedata) ? n : 0;
  env.allow_unassociated(expect_data);
  env.send("mr", encode_remote(*tgt));
  env.recv("done");

  // Written data may land after the initiator saw its completions: poll until
  // everything is in place (or the timeout passes).
  std::string why;
  size_t bad = 0;
  env.poll_landed([&] {
    bad = check_writes(tgt->data, kinds, n, size, &why);
    return bad == 0 && env.remote_data_count() >= expect_data;
  });
  if (bad != 0) {
    env.stats.data_error(std::to_string(bad) + " written slots wrong, first: " + why);
  }
  std::vector<Completion> rd = env.remote_data();
  if (rd.size() != expect_data) {
    env.stats.data_error("expected " + std::to_string(expect_data) +
                         " remote CQ data completions for fi_writedata, got " +
                         std::to_string(rd.size()));
  }
  std::vector<bool> seen(n, false);
  for (const Completion& c : rd) {
    if (c.has_flags && (c.flags & (FI_REMOTE_CQ_DATA | FI_REMOTE_WRITE)) !=
                           (FI_REMOTE_CQ_DATA | FI_REMOTE_WRITE)) {
      env.stats.data_error(
          "fi_writedata target completion lacks FI_REMOTE_CQ_DATA|FI_REMOTE_WRITE");
    }
    if (!c.has_data) continue;
    bool found = false;
    for (uint32_t seq = 0; seq < n && !found; ++seq) {
      if (!seen[seq] && c.data == cq_data_value(kWritedata, seq, f.cq_data_size)) {
        seen[seq] = found = true;
      }
    }
    if (!found) env.stats.data_error("unexpected remote CQ data value from fi_writedata");
  }
  env.sync("fin");
}

}  // namespace

void run_rma(Env& env) {
  size_t size = rma_size(env);
  if (env.rank == 0) {
    initiator(env, size);
  } else {
    target(env, size);
  }
}

}  // namespace ftapp
