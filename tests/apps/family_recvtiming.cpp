// "recvtiming" family: receives posted before their message's send on
// purpose, then receives posted after it on purpose, so that a tracer's
// "posted late" verdict can be held to the truth.
//
//   pre-posted: --count times, rank 1 posts a receive of kEarlyBytes, tells
//               rank 0 over the out-of-band channel, and only then does rank 0
//               issue the matching send;
//   late:       --count times, rank 0 issues a send of kLateBytes and tells
//               rank 1, which waits 1 ms more and only then posts the receive.
//
// Tagged where the provider has FI_TAGGED, else untagged. The result's
// "recv_posted" says how many receives of each size were posted before and
// after their send.
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>

#include <chrono>
#include <string>
#include <thread>

#include "env.h"
#include "families.h"

namespace ftapp {
namespace {

constexpr size_t kEarlyBytes = 1000;
constexpr size_t kLateBytes = 2000;

struct Io {
  Env& env;
  bool tagged;
  Buffer* buf;

  OpCtx* recv(size_t len, uint64_t tag) {
    Fabric& f = env.fab;
    const char* fn = tagged ? "fi_trecv" : "fi_recv";
    OpCtx* c = env.ctxs.make(fn, 0, static_cast<uint32_t>(tag));
    env.post(fn, c, [&] {
      return tagged ? fi_trecv(f.rx_ep, buf->data, len, buf->desc, FI_ADDR_UNSPEC, tag, 0, c)
                    : fi_recv(f.rx_ep, buf->data, len, buf->desc, FI_ADDR_UNSPEC, c);
    });
    return c;
  }
  OpCtx* send(size_t len, uint64_t tag) {
    Fabric& f = env.fab;
    const char* fn = tagged ? "fi_tsend" : "fi_send";
    OpCtx* c = env.ctxs.make(fn, 0, static_cast<uint32_t>(tag));
    uint8_t* p = buf->data + kLateBytes;
    env.post(fn, c, [&] {
      return tagged ? fi_tsend(f.ep, p, len, buf->desc, f.peer, tag, c)
                    : fi_send(f.ep, p, len, buf->desc, f.peer, c);
    });
    return c;
  }
};

}  // namespace

void run_recvtiming(Env& env) {
  Io io{env, (env.caps & FI_TAGGED) != 0, env.fab.alloc(2 * kLateBytes, false)};
  const size_t n = env.opt.count;
  for (size_t k = 0; k < n; ++k) {
    if (env.rank == 1) {
      OpCtx* r = io.recv(kEarlyBytes, k);
      env.send("posted");
      env.wait_done(r);
    } else {
      env.recv("posted");
      env.wait_done(io.send(kEarlyBytes, k));
    }
  }
  for (size_t k = 0; k < n; ++k) {
    const uint64_t tag = n + k;
    if (env.rank == 0) {
      OpCtx* s = io.send(kLateBytes, tag);
      env.send("sent");
      env.wait_done(s);
      env.recv("received");
    } else {
      env.recv("sent");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      env.wait_done(io.recv(kLateBytes, tag));
      env.send("received");
    }
  }
  if (env.rank == 1) {
    env.stats.measured(("recv_posted_before_send_" + std::to_string(kEarlyBytes)).c_str(),
                       static_cast<double>(n));
    env.stats.measured(("recv_posted_after_send_" + std::to_string(kLateBytes)).c_str(),
                       static_cast<double>(n));
  }
  env.sync("fin");
}

}  // namespace ftapp
