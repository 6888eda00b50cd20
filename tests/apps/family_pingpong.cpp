// "pingpong" family: count round trips of size bytes with fi_tsend/fi_trecv
// (fi_send/fi_recv without FI_TAGGED), on one CQ per rank that has a wait object
// and is read with fi_cq_sread.
//
// "stream" family: the same round trips on a busy-polled CQ (fi_cq_read), the
// shape of an MPI progress loop, for the node-wide session's tests: it runs
// --count round trips, or until the --until file appears (whichever is first),
// and with --touch-mb N rank 0 touches N MiB of fresh memory between posting
// round trip #100's send and polling its completion: a slow op with page faults
// inside its window; and with --gap KIND:MS it spends MS ms there, asleep or
// blocked reading a pipe. The page faults of rank 0's thread between the last
// CQ read of round trip #99 and the first of #100 (its own fault counters
// around those reads) are measured as "gap_faults_inside" (from the end of
// the one to the start of the other) and "gap_faults_around" (from the start
// of the one to the end of the other), the touch's alone as "touch_faults".
// With --sleepers N, rank 0 runs N threads meanwhile that sleep 1 us at a time
// (each sleep one off-CPU interval: the kernel's timer slack makes it sleep),
// counting their sleeps ("sleeps") and naming their tids ("sleeper_tid_I"),
// and marks round trip #100 ("round trip 100", fabtrace_mark).
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>

#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "env.h"
#include "fabtrace.h"
#include "families.h"
#include "payload.h"
#include "planted_gap.h"

namespace ftapp {
namespace {

struct Ops {
  Env& env;
  bool tagged;
  Buffer* buf;
  size_t size;

  // any_kind: the tag's kind bits are ignored (a ping or the last ping).
  OpCtx* recv(uint8_t* p, uint16_t kind, uint32_t seq, bool any_kind = false) {
    Fabric& f = env.fab;
    const char* fn = tagged ? "fi_trecv" : "fi_recv";
    OpCtx* ctx = env.ctxs.make(fn, kind, seq);
    uint64_t tag = tag_of(kind, 0, seq);
    const uint64_t ignore = any_kind ? 0xffULL << 48 : 0;
    if (tagged) {
      env.post(fn, ctx, [&] {
        return fi_trecv(f.ep, p, size, buf->desc, FI_ADDR_UNSPEC, tag, ignore, ctx);
      });
    } else {
      env.post(fn, ctx, [&] { return fi_recv(f.ep, p, size, buf->desc, FI_ADDR_UNSPEC, ctx); });
    }
    return ctx;
  }

  OpCtx* send(uint8_t* p, uint16_t kind, uint32_t seq) {
    Fabric& f = env.fab;
    const char* fn = tagged ? "fi_tsend" : "fi_send";
    fill_payload(p, size, kind, 0, seq);
    OpCtx* ctx = env.ctxs.make(fn, kind, seq);
    uint64_t tag = tag_of(kind, 0, seq);
    if (tagged) {
      env.post(fn, ctx, [&] { return fi_tsend(f.ep, p, size, buf->desc, f.peer, tag, ctx); });
    } else {
      env.post(fn, ctx, [&] { return fi_send(f.ep, p, size, buf->desc, f.peer, ctx); });
    }
    return ctx;
  }

  // The kind that arrived (a ping or the last ping, for any_kind receives).
  uint16_t kind_of(const uint8_t* p) const {
    PayloadHdr h{};
    std::memcpy(&h, p, sizeof(h));
    return h.kind == kLastPing ? kLastPing : kPing;
  }

  void verify(const uint8_t* p, const OpCtx* ctx, uint16_t kind) {
    std::string why;
    if (!check_payload_is(p, size, kind, 0, ctx->seq, &why)) {
      env.stats.data_error(std::string(ctx->op) + " #" + std::to_string(ctx->seq) + ": " + why);
    }
    if (ctx->comp.has_flags && ctx->comp.len != size) {
      env.stats.data_error(std::string(ctx->op) + ": completion len mismatch");
    }
  }
};

}  // namespace

namespace {

constexpr uint32_t kTouchAt = 100;  // the round trip whose send waits for the touch

// Touches `mb` MiB of fresh anonymous memory, one write per page: page faults.
void touch_fresh(size_t mb) {
  const size_t len = mb << 20;
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  madvise(p, len, MADV_NOHUGEPAGE);  // one fault per 4 KiB page, whatever THP is set to
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (size_t off = 0; off < len; off += page) static_cast<volatile char*>(p)[off] = 1;
  munmap(p, len);
}

// Threads that sleep 1 us at a time until stopped, each counting its sleeps.
class Sleepers {
 public:
  explicit Sleepers(size_t n) : counts_(n), tids_(n) {
    for (size_t i = 0; i < n; ++i)
      threads_.emplace_back([this, i] {
        tids_[i] = static_cast<long>(syscall(SYS_gettid));
        started_.fetch_add(1);
        uint64_t k = 0;
        const timespec us{0, 1000};
        while (!stop_.load(std::memory_order_relaxed)) {
          nanosleep(&us, nullptr);
          ++k;
        }
        counts_[i] = k;
      });
    while (started_.load() < n) std::this_thread::yield();
  }
  // Stops them and says what they did.
  void finish(Env& env) {
    stop_.store(true);
    uint64_t total = 0;
    for (size_t i = 0; i < threads_.size(); ++i) {
      threads_[i].join();
      total += counts_[i];
      env.stats.measured(("sleeper_tid_" + std::to_string(i)).c_str(),
                         static_cast<double>(tids_[i]));
    }
    env.stats.measured("sleeps", static_cast<double>(total));
  }

 private:
  std::vector<uint64_t> counts_;
  std::vector<long> tids_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> started_{0};
};

bool stop_file_exists(const Options& o, uint32_t seq) {
  return !o.until.empty() && seq % 64 == 0 && access(o.until.c_str(), F_OK) == 0;
}

void round_trips(Env& env, bool busy) {
  bool tagged = (env.caps & FI_TAGGED) != 0;
  if (!tagged) env.stats.note("pingpong: provider lacks FI_TAGGED, used fi_send/fi_recv");
  const size_t size = std::max(env.opt.size, kMinPayload);
  const size_t n = env.opt.count;
  // Three buffers: send, and two receive buffers used alternately by rank 1.
  Buffer* buf = env.fab.alloc(3 * size, false);
  uint8_t* sbuf = buf->data;
  uint8_t* rbuf[2] = {buf->data + size, buf->data + 2 * size};
  Ops ops{env, tagged, buf, size};
  // Rank 0 decides when to stop (--count, or --until) and says so with the kind
  // of its last ping; rank 1's receives accept either kind.
  if (env.rank == 0) {
    env.recv("ready");
    std::unique_ptr<Sleepers> sleepers;
    if (busy && env.opt.sleepers) sleepers = std::make_unique<Sleepers>(env.opt.sleepers);
    uint32_t seq = 0;
    for (;; ++seq) {
      const bool last = seq + 1 >= n || (busy && stop_file_exists(env.opt, seq + 1));
      const bool planted = busy && seq == kTouchAt;
      // With a touch, the faults of the gap: its reads' bounds (after #99's
      // last read returned, before #100's first began: inside; from the start
      // of the one to the end of the other: around).
      if (busy && env.opt.touch_mb && seq == 0) track_read_faults();
      const ReadFaults ended = planted ? last_read_faults() : ReadFaults{};
      OpCtx* r = ops.recv(rbuf[0], kPong, seq);
      OpCtx* s = ops.send(sbuf, last ? kLastPing : kPing, seq);
      uint64_t touch_faults = 0;
      if (planted && env.opt.touch_mb) {
        const uint64_t t0 = thread_faults();
        touch_fresh(env.opt.touch_mb);
        touch_faults = thread_faults() - t0;
      }
      if (planted && sleepers) fabtrace_mark("round trip 100");
      if (planted && env.opt.gap_ms) planted_gap(env.opt.gap_kind, env.opt.gap_ms);
      if (planted && env.opt.touch_mb) {
        env.progress();  // the first read after the gap
        const ReadFaults next = last_read_faults();
        // Recorded only now: recording allocates, and may fault.
        env.stats.measured("touch_faults", static_cast<double>(touch_faults));
        env.stats.measured("gap_faults_inside", static_cast<double>(next.before - ended.after));
        env.stats.measured("gap_faults_around", static_cast<double>(next.after - ended.before));
      }
      env.wait_done(s);
      env.wait_done(r);
      ops.verify(rbuf[0], r, kPong);
      if (last) break;
    }
    if (sleepers) sleepers->finish(env);
    env.stats.note("round trips: " + std::to_string(seq + 1));
  } else {
    OpCtx* r = ops.recv(rbuf[0], kPing, 0, true);
    env.send("ready");
    for (uint32_t seq = 0;; ++seq) {
      env.wait_done(r);
      const uint16_t kind = ops.kind_of(rbuf[seq % 2]);
      ops.verify(rbuf[seq % 2], r, kind);
      if (kind != kLastPing) r = ops.recv(rbuf[(seq + 1) % 2], kPing, seq + 1, true);
      OpCtx* s = ops.send(sbuf, kPong, seq);
      env.wait_done(s);
      if (kind == kLastPing) break;
    }
  }
  env.sync("fin");
}

}  // namespace

void run_pingpong(Env& env) { round_trips(env, false); }
void run_stream(Env& env) { round_trips(env, true); }

}  // namespace ftapp
