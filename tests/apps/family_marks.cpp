// "marks" family: iterations of known ops between the application's phase
// marks (include/fabtrace.h), the ground truth of the marks tests.
//
// Iteration i (0 .. --count - 1), on both ranks: fabtrace_mark("iteration i"),
// then fabtrace_begin("exchange"); rank 0 posts the receive of an ack and sends
// i % 3 + 1 messages of --size bytes (fi_tsend), rank 1 receives them
// (fi_trecv) and sends the ack; each rank waits for all of its iteration's ops,
// then fabtrace_end(). After the last iteration: fabtrace_mark("done").
// So every op of iteration i starts after the mark "iteration i" and ends before
// the mark of iteration i + 1 (or "done"), inside the "exchange" phase.
//
// --toggle-at I,J,...: rank 0 raises SIGUSR2 just before its mark of each of
// these iterations (the per-op timeline's capture toggle, when the tracer owns
// that signal). --own-usr2: the program installs its own SIGUSR2 handler before
// any fabric call (the tracer must then leave the signal alone).
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>
#include <signal.h>

#include <algorithm>
#include <string>
#include <vector>

#include "env.h"
#include "fabtrace.h"
#include "families.h"
#include "payload.h"

namespace ftapp {

namespace {

bool toggles_at(const Options& o, size_t i) {
  return std::find(o.toggle_at.begin(), o.toggle_at.end(), i) != o.toggle_at.end();
}

}  // namespace

size_t marks_sends_in(size_t iteration) { return iteration % 3 + 1; }

void run_marks(Env& env) {
  Fabric& f = env.fab;
  const size_t size = std::max(env.opt.size, kMinPayload);
  constexpr size_t kMaxSends = 3;
  Buffer* buf = env.fab.alloc((kMaxSends + 1) * size, false);
  for (size_t i = 0; i < env.opt.count; ++i) {
    if (env.rank == 0 && toggles_at(env.opt, i)) raise(SIGUSR2);
    const std::string name = "iteration " + std::to_string(i);
    fabtrace_mark(name.c_str());
    fabtrace_begin("exchange");
    const size_t k = marks_sends_in(i);
    const uint32_t base = static_cast<uint32_t>(i * 4);
    uint8_t* ack = buf->data + kMaxSends * size;
    std::vector<OpCtx*> ops;
    if (env.rank == 0) {
      OpCtx* r = env.ctxs.make("fi_trecv", kPong, static_cast<uint32_t>(i));
      env.post("fi_trecv", r, [&] {
        return fi_trecv(f.ep, ack, size, buf->desc, FI_ADDR_UNSPEC,
                        tag_of(kPong, 0, static_cast<uint32_t>(i)), 0, r);
      });
      ops.push_back(r);
      for (size_t j = 0; j < k; ++j) {
        uint8_t* p = buf->data + j * size;
        fill_payload(p, size, kPing, 0, base + static_cast<uint32_t>(j));
        OpCtx* s = env.ctxs.make("fi_tsend", kPing, base + static_cast<uint32_t>(j));
        env.post("fi_tsend", s, [&] {
          return fi_tsend(f.ep, p, size, buf->desc, f.peer,
                          tag_of(kPing, 0, base + static_cast<uint32_t>(j)), s);
        });
        ops.push_back(s);
      }
    } else {
      for (size_t j = 0; j < k; ++j) {
        uint8_t* p = buf->data + j * size;
        OpCtx* r = env.ctxs.make("fi_trecv", kPing, base + static_cast<uint32_t>(j));
        env.post("fi_trecv", r, [&] {
          return fi_trecv(f.ep, p, size, buf->desc, FI_ADDR_UNSPEC,
                          tag_of(kPing, 0, base + static_cast<uint32_t>(j)), 0, r);
        });
        ops.push_back(r);
      }
      for (OpCtx* r : ops) env.wait_done(r);
      fill_payload(ack, size, kPong, 0, static_cast<uint32_t>(i));
      OpCtx* s = env.ctxs.make("fi_tsend", kPong, static_cast<uint32_t>(i));
      env.post("fi_tsend", s, [&] {
        return fi_tsend(f.ep, ack, size, buf->desc, f.peer,
                        tag_of(kPong, 0, static_cast<uint32_t>(i)), s);
      });
      ops.push_back(s);
    }
    for (OpCtx* o : ops) env.wait_done(o);
    fabtrace_end();
  }
  fabtrace_mark("done");
  env.stats.note("marks: " + std::to_string(env.opt.count) + " iterations");
  env.sync("fin");
}

}  // namespace ftapp
