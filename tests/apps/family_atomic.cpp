// "atomic" family: FI_SUM on FI_UINT64 with fi_atomic{,v,msg}, fetching FI_SUM with
// fi_fetch_atomic{,v,msg} and FI_CSWAP with fi_compare_atomic{,v,msg}. Each
// non-fetching variant accumulates into one shared uint64 at the target; every
// fetching operation owns a word of its own, so fetched values are exact even with
// many operations in flight (odd-numbered compares are built to mismatch).
#include <rdma/fi_atomic.h>

#include <cstring>
#include <string>
#include <vector>

#include "env.h"
#include "families.h"
#include "plan.h"
#include "quirks.h"

namespace ftapp {
namespace {

enum Variant : uint16_t {
  kAtomic = 0,
  kAtomicv,
  kAtomicmsg,
  kFetch,
  kFetchv,
  kFetchmsg,
  kCompare,
  kComparev,
  kComparemsg,
  kVariants
};

const char* const kFn[kVariants] = {
    "fi_atomic",         "fi_atomicv",         "fi_atomicmsg",
    "fi_fetch_atomic",   "fi_fetch_atomicv",   "fi_fetch_atomicmsg",
    "fi_compare_atomic", "fi_compare_atomicv", "fi_compare_atomicmsg"};

// Target word of (variant, seq): shared for non-fetching variants.
size_t word_index(size_t v, size_t n, uint32_t seq) {
  return v < kFetch ? v : kFetch + (v - kFetch) * n + seq;
}
size_t word_count(size_t n) { return kFetch + (kVariants - kFetch) * n; }
uint64_t initial(size_t w) { return 1000000ULL * (w + 1); }
uint64_t operand(uint32_t seq) { return seq + 1; }
bool compare_matches(uint32_t seq) { return seq % 2 == 0; }

// Value of target word w after the run (issued: the variant ran).
uint64_t expected_final(size_t v, size_t n, uint32_t seq, bool issued) {
  uint64_t init = initial(word_index(v, n, seq));
  if (!issued) return init;
  if (v < kFetch) return init + n * (n + 1) / 2;
  if (v < kCompare) return init + operand(seq);
  return compare_matches(seq) ? init + 1 : init;
}

bool query(Env& env, fi_op op, uint64_t flags) {
  fi_atomic_attr attr;
  std::memset(&attr, 0, sizeof attr);
  int ret = fi_query_atomic(env.fab.domain, FI_UINT64, op, &attr, flags);
  return ret == 0 && attr.count >= 1 && attr.size == sizeof(uint64_t);
}

void initiator(Env& env) {
  Fabric& f = env.fab;
  const size_t n = env.opt.count;
  bool sum = query(env, FI_SUM, 0);
  bool fetch = query(env, FI_SUM, FI_FETCH_ATOMIC);
  bool cswap = query(env, FI_CSWAP, FI_COMPARE_ATOMIC);
  std::vector<uint16_t> plan;
  for (uint16_t v = 0; v < kVariants; ++v) {
    bool ok = v < kFetch ? sum : v < kCompare ? fetch : cswap;
    std::string broken = known_broken(env.opt, kFn[v]);
    if (ok && !broken.empty()) {
      env.skip(kFn[v], broken);
    } else if (ok) {
      plan.push_back(v);
    } else {
      env.skip(kFn[v], std::string("fi_query_atomic: FI_UINT64 ") +
                           (v < kCompare ? "FI_SUM" : "FI_CSWAP") + " unsupported");
    }
  }
  env.send("plan", encode_kinds(plan));
  RemoteMem rm = decode_remote(env.recv("mr"));
  if (rm.len < word_count(n) * sizeof(uint64_t)) throw FamilyError("target buffer too small");

  // Per operation: operand, compare and result words, never reused.
  Buffer* buf = f.alloc(kVariants * n * 3 * sizeof(uint64_t), false);
  auto word = [&](size_t v, uint32_t seq, size_t which) {
    return reinterpret_cast<uint64_t*>(buf->data) + ((v * n + seq) * 3 + which);
  };
  SlotPool win(env, env.opt.window, [&](OpCtx* c) {
    if (c->comp.has_flags && !(c->comp.flags & FI_ATOMIC)) {
      env.stats.data_error(std::string(c->op) + " completion flags lack FI_ATOMIC");
    }
    if (c->kind >= kFetch) {
      uint64_t got = *word(c->kind, c->seq, 2);
      uint64_t want = initial(word_index(c->kind, n, c->seq));
      if (got != want) {
        env.stats.data_error(std::string(c->op) + " #" + std::to_string(c->seq) + " fetched " +
                             std::to_string(got) + ", expected " + std::to_string(want));
      }
    }
  });

  for (uint32_t seq = 0; seq < n; ++seq) {
    for (uint16_t v : plan) {
      const char* fn = kFn[v];
      uint64_t* src = word(v, seq, 0);
      uint64_t* cmp = word(v, seq, 1);
      uint64_t* res = word(v, seq, 2);
      uint64_t init = initial(word_index(v, n, seq));
      uint64_t raddr = rm.addr + word_index(v, n, seq) * sizeof(uint64_t);
      if (v >= kCompare) {
        *cmp = compare_matches(seq) ? init : init + 7;
        *src = init + 1;
      } else {
        *src = operand(seq);
      }
      *res = ~0ULL;
      fi_ioc ioc{src, 1};
      fi_ioc cioc{cmp, 1};
      fi_ioc rioc{res, 1};
      void* d = buf->desc;
      fi_rma_ioc rma{raddr, 1, rm.key};
      size_t slot = win.acquire();
      OpCtx* ctx = env.ctxs.make(fn, v, seq, slot);
      fi_op op = v >= kCompare ? FI_CSWAP : FI_SUM;
      fi_msg_atomic msg{&ioc, &d, 1, f.peer, &rma, 1, FI_UINT64, op, ctx, 0};
      switch (v) {
        case kAtomic:
          env.post(fn, ctx, [&] {
            return fi_atomic(f.ep, src, 1, d, f.peer, raddr, rm.key, FI_UINT64, FI_SUM, ctx);
          });
          break;
        case kAtomicv:
          env.post(fn, ctx, [&] {
            return fi_atomicv(f.ep, &ioc, &d, 1, f.peer, raddr, rm.key, FI_UINT64, FI_SUM, ctx);
          });
          break;
        case kAtomicmsg:
          env.post(fn, ctx, [&] { return fi_atomicmsg(f.ep, &msg, FI_COMPLETION); });
          break;
        case kFetch:
          env.post(fn, ctx, [&] {
            return fi_fetch_atomic(f.ep, src, 1, d, res, d, f.peer, raddr, rm.key, FI_UINT64,
                                   FI_SUM, ctx);
          });
          break;
        case kFetchv:
          env.post(fn, ctx, [&] {
            return fi_fetch_atomicv(f.ep, &ioc, &d, 1, &rioc, &d, 1, f.peer, raddr, rm.key,
                                    FI_UINT64, FI_SUM, ctx);
          });
          break;
        case kFetchmsg:
          env.post(fn, ctx,
                   [&] { return fi_fetch_atomicmsg(f.ep, &msg, &rioc, &d, 1, FI_COMPLETION); });
          break;
        case kCompare:
          env.post(fn, ctx, [&] {
            return fi_compare_atomic(f.ep, src, 1, d, cmp, d, res, d, f.peer, raddr, rm.key,
                                     FI_UINT64, FI_CSWAP, ctx);
          });
          break;
        case kComparev:
          env.post(fn, ctx, [&] {
            return fi_compare_atomicv(f.ep, &ioc, &d, 1, &cioc, &d, 1, &rioc, &d, 1, f.peer, raddr,
                                      rm.key, FI_UINT64, FI_CSWAP, ctx);
          });
          break;
        default:
          env.post(fn, ctx, [&] {
            return fi_compare_atomicmsg(f.ep, &msg, &cioc, &d, 1, &rioc, &d, 1, FI_COMPLETION);
          });
          break;
      }
      win.set(slot, ctx);
    }
  }
  win.drain();
  env.send("done");
  env.sync("fin");
}

void target(Env& env) {
  const size_t n = env.opt.count;
  std::vector<uint16_t> plan = decode_kinds(env.recv("plan"));
  const size_t words = word_count(n);
  Buffer* tgt = env.fab.alloc(words * sizeof(uint64_t), true);
  auto* w = reinterpret_cast<volatile uint64_t*>(tgt->data);
  for (size_t i = 0; i < words; ++i) w[i] = initial(i);
  env.send("mr", encode_remote(*tgt));
  env.recv("done");
  // Counts wrong words; describes the first in *why.
  auto check = [&](std::string* why) {
    size_t bad = 0;
    for (uint16_t v = 0; v < kVariants; ++v) {
      bool issued = has_kind(plan, v);
      for (uint32_t seq = 0; seq < (v < kFetch ? 1u : n); ++seq) {
        uint64_t want = expected_final(v, n, seq, issued);
        uint64_t got = w[word_index(v, n, seq)];
        if (got != want && bad++ == 0) {
          *why = std::string("target word of ") + kFn[v] + " #" + std::to_string(seq) + " is " +
                 std::to_string(got) + ", expected " + std::to_string(want);
        }
      }
    }
    return bad;
  };
  // Non-fetching atomics may be applied after their initiator-side completion.
  std::string why;
  size_t bad = 0;
  env.poll_landed([&] { return (bad = check(&why)) == 0; });
  if (bad != 0) env.stats.data_error(std::to_string(bad) + " wrong target words, first: " + why);
  env.sync("fin");
}

}  // namespace

void run_atomic(Env& env) {
  if (env.rank == 0) {
    initiator(env);
  } else {
    target(env);
  }
}

}  // namespace ftapp
