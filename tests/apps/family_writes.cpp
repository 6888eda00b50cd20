// "writes" family: two links of the same op, timed by the program itself.
// Rank 0 writes --count messages of --size bytes into rank 1's buffer, one at
// a time (each waited for before the next), then rank 1 does the same into
// rank 0's: fi_write on link r0 -> r1, then on r1 -> r0, never both at once
// (the rank not writing keeps progressing its endpoint). No receive is
// posted, so no other row of either rank moves with the writes' times.
// With --gap KIND:MS rank 0 spends MS ms off CPU (asleep, or blocked reading
// a pipe) between posting each of its writes and the first poll for it: a
// delay planted on link r0 -> r1 only.
// Before its writes, each rank reads one message from the other: the first
// op to a peer sets the connection up on the connection-oriented utility
// providers (a write would take that time and its EAGAIN refusals), and a
// read is a row of its own.
// Each rank times each of its writes, from just before the call that took
// it to the return of the CQ read that brought its completion (steady_clock,
// the reader's own stamp: cq_reader.cpp), and records
// the nearest-rank p50 and p99 and the mean as "write_p50_ns", "write_p99_ns"
// and "write_mean_ns", and the time of all its ops (the read and the writes,
// one at a time: the time its NIC had an op in flight) as "busy_ns". Each
// target checks every written slot.
#include <rdma/fi_rma.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "env.h"
#include "families.h"
#include "payload.h"
#include "planted_gap.h"

namespace ftapp {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The nearest-rank percentile q of sorted values.
double nearest_rank(const std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  size_t k = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  k = std::min(std::max<size_t>(k, 1), sorted.size());
  return static_cast<double>(sorted[k - 1]);
}

void write_all(Env& env, const RemoteMem& rm, size_t size) {
  Fabric& f = env.fab;
  const size_t n = env.opt.count;
  Buffer* src = f.alloc(size, false);
  const bool delayed = env.rank == 0 && env.opt.gap_ms > 0;
  int64_t read_took = 0;
  {
    OpCtx* ctx = env.ctxs.make("fi_read", kRead, 0);
    int64_t t0 = 0;
    env.post("fi_read", ctx, [&] {
      t0 = now_ns();
      return fi_read(f.ep, src->data, size, src->desc, f.peer, rm.addr, rm.key, ctx);
    });
    env.wait_done(ctx);
    read_took = ctx->comp.read_ns - t0;
  }
  std::vector<int64_t> took;
  took.reserve(n);
  for (uint32_t seq = 0; seq < n; ++seq) {
    fill_payload(src->data, size, kWrite, 0, seq);
    OpCtx* ctx = env.ctxs.make("fi_write", kWrite, seq);
    const uint64_t raddr = rm.addr + seq * size;
    int64_t t0 = 0;  // of the call that took it (a refused one is tried again)
    env.post("fi_write", ctx, [&] {
      t0 = now_ns();
      return fi_write(f.ep, src->data, size, src->desc, f.peer, raddr, rm.key, ctx);
    });
    if (delayed) planted_gap(env.opt.gap_kind, env.opt.gap_ms);
    env.wait_done(ctx);
    took.push_back(ctx->comp.read_ns - t0);
  }
  double sum = 0;
  for (const int64_t t : took) sum += static_cast<double>(t);
  std::sort(took.begin(), took.end());
  env.stats.measured("write_p50_ns", nearest_rank(took, 0.50));
  env.stats.measured("write_p99_ns", nearest_rank(took, 0.99));
  env.stats.measured("write_mean_ns", n ? sum / static_cast<double>(n) : 0);
  // One op at a time: the time with an op of this rank in flight.
  env.stats.measured("busy_ns", sum + static_cast<double>(read_took));
}

// Waits (progressing) until every slot the peer wrote holds its payload.
void check_written(Env& env, const Buffer& tgt, size_t size) {
  const size_t n = env.opt.count;
  size_t bad = 0;
  std::string why;
  env.poll_landed([&] {
    bad = 0;
    for (uint32_t seq = 0; seq < n; ++seq) {
      std::string w;
      if (!check_payload_is(tgt.data + seq * size, size, kWrite, 0, seq, &w) && bad++ == 0)
        why = "fi_write #" + std::to_string(seq) + ": " + w;
    }
    return bad == 0;
  });
  if (bad) env.stats.data_error(std::to_string(bad) + " written slots wrong, first: " + why);
}

}  // namespace

void run_writes(Env& env) {
  const size_t size = payload_size(env);
  Buffer* tgt = env.fab.alloc(env.opt.count * size, true);
  std::fill(tgt->data, tgt->data + tgt->len, uint8_t{0xEE});
  env.send("mr", encode_remote(*tgt));
  const RemoteMem rm = decode_remote(env.recv("mr"));
  if (rm.len < env.opt.count * size) throw FamilyError("peer's buffer too small");
  for (int writer = 0; writer < 2; ++writer) {
    const std::string step = "wrote" + std::to_string(writer);
    if (env.rank == writer) {
      write_all(env, rm, size);
      env.send(step);
    } else {
      env.recv(step);
      check_written(env, *tgt, size);
    }
  }
  env.sync("fin");
}

}  // namespace ftapp
