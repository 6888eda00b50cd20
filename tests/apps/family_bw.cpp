// "bw" family: a tagged bandwidth run that measures itself. Rank 0 first sends
// one 16-byte setup message (on the connection-oriented utility providers the
// first send also sets the connection up, so it stays in flight for a while),
// lets 30 ms pass with nothing in flight, then sends --count messages of
// --size bytes with at most --window outstanding. Its own bandwidth is the
// bytes of those messages over the time from just before the first was
// issued to the return of the poll that brought the last completion: what a
// tracer's "time with an op in flight" should find for them.
#include <rdma/fi_tagged.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "env.h"
#include "families.h"

namespace ftapp {
namespace {

constexpr size_t kSetupBytes = 16;
constexpr uint64_t kSetupTag = 0xfeed;

}  // namespace

void run_bw(Env& env) {
  Fabric& f = env.fab;
  const size_t size = env.opt.size;
  const size_t n = env.opt.count;
  Buffer* buf = f.alloc(std::max(n, env.opt.window) * size + kSetupBytes, false);
  uint8_t* setup = buf->data + std::max(n, env.opt.window) * size;
  if (env.rank == 1) {
    OpCtx* s = env.ctxs.make("fi_trecv");
    env.post("fi_trecv", s, [&] {
      return fi_trecv(f.rx_ep, setup, kSetupBytes, buf->desc, FI_ADDR_UNSPEC, kSetupTag, 0, s);
    });
    // With --rx-contexts N the receives take N contexts in turn: a context
    // is handed to the provider again while earlier receives with it are
    // outstanding (fabtests' bandwidth tests post their window so).
    const size_t shared = std::min(env.opt.rx_contexts, n);
    std::vector<OpCtx*> pool;
    for (size_t k = 0; k < shared; ++k) pool.push_back(env.ctxs.make_multi("fi_trecv"));
    std::vector<OpCtx*> rx;
    for (size_t i = 0; i < n; ++i) {
      uint8_t* p = buf->data + i * size;
      OpCtx* c = shared ? pool[i % shared] : env.ctxs.make("fi_trecv", 0, static_cast<uint32_t>(i));
      env.post("fi_trecv", c,
               [&] { return fi_trecv(f.rx_ep, p, size, buf->desc, FI_ADDR_UNSPEC, i, 0, c); });
      if (!shared) rx.push_back(c);
    }
    env.send("posted");
    env.wait_done(s);
    for (OpCtx* c : rx) env.wait_done(c);
    if (shared) {
      env.wait(
          [&] {
            size_t got = 0;
            for (OpCtx* c : pool) got += env.ctxs.completions(c).size();
            return got >= n;
          },
          "the receives of the shared contexts");
      for (size_t k = 0; k < shared; ++k) {
        const size_t want = n / shared + (k < n % shared ? 1 : 0);
        if (env.ctxs.completions(pool[k]).size() != want)
          env.stats.context_error("shared receive context " + std::to_string(k) + " completed " +
                                  std::to_string(env.ctxs.completions(pool[k]).size()) +
                                  " times, posted " + std::to_string(want));
        env.ctxs.finish(pool[k]);
      }
    }
    env.sync("done");
    return;
  }
  env.recv("posted");
  OpCtx* s = env.ctxs.make("fi_tsend");
  env.post("fi_tsend", s,
           [&] { return fi_tsend(f.ep, setup, kSetupBytes, buf->desc, f.peer, kSetupTag, s); });
  env.wait_done(s);
  // Nothing in flight for longer than two of a tracer's ~10 ms time windows.
  std::this_thread::sleep_for(std::chrono::milliseconds(30));

  using Clock = std::chrono::steady_clock;
  SlotPool win(env, env.opt.window, nullptr);
  const Clock::time_point t0 = Clock::now();
  Clock::time_point first_issued = t0;
  for (size_t i = 0; i < n; ++i) {
    const size_t slot = win.acquire();
    uint8_t* p = buf->data + slot * size;
    OpCtx* c = env.ctxs.make("fi_tsend", 0, static_cast<uint32_t>(i), slot);
    env.post("fi_tsend", c, [&] { return fi_tsend(f.ep, p, size, buf->desc, f.peer, i, c); });
    if (i == 0) first_issued = Clock::now();
    win.set(slot, c);
  }
  win.drain();
  const Clock::time_point t1 = Clock::now();
  const double secs = std::chrono::duration<double>(t1 - t0).count();
  // The transfer as the program bounds it from inside: from the return of its
  // first send to the start of the poll that brought its last completion. A
  // tracer's "first issue to last completion" lies between this and `secs`,
  // however long the program was descheduled on either side.
  const Clock::time_point last_poll{std::chrono::duration_cast<Clock::duration>(
      std::chrono::nanoseconds(env.last_progress_ns()))};
  env.stats.measured("bw_bytes", static_cast<double>(n * size));
  env.stats.measured("bw_secs", secs);
  env.stats.measured("bw_inner_secs",
                     std::chrono::duration<double>(last_poll - first_issued).count());
  env.stats.measured("bw_MB_per_s", secs > 0 ? static_cast<double>(n * size) / secs / 1e6 : 0);
  env.sync("done");
}

}  // namespace ftapp
