// Per-family runtime: the libfabric objects, the context tracker, completion
// processing, bounded waits and posting with -FI_EAGAIN retry.
#pragma once

#include <rdma/fabric.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "context.h"
#include "cq_reader.h"
#include "fabric.h"
#include "oob.h"
#include "options.h"
#include "stats.h"

namespace ftapp {

class Env {
 public:
  Env(const Options& o, int r, Oob& ob, Stats& st);
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;

  const Options& opt;
  const int rank;
  Oob& oob;
  Stats& stats;
  Fabric fab;
  CtxTracker ctxs;
  CqMethod method = CqMethod::kRead;
  uint64_t caps = 0;  // capabilities requested for this family

  int timeout_ms() const { return opt.timeout_s * 1000; }
  // Reads every CQ once and processes the entries. Thread-safe. Only with
  // `may_block` does the fi_cq_sread method block (some providers' fi_cq_sread
  // ignores its timeout, so it is only used while a completion is due).
  void progress(bool may_block = false);
  // When the latest progress() began (steady_clock ns): a program's own bound
  // on when a tracer may have stamped the completions that call brought.
  int64_t last_progress_ns() const { return last_progress_ns_.load(std::memory_order_relaxed); }
  // Progresses until done() is true; fatal error after the timeout.
  void wait(const std::function<bool()>& done, const std::string& what);
  // As wait(), but gives up after `ms` milliseconds and returns whether done().
  bool wait_up_to(const std::function<bool()>& done, int ms);
  // Progresses for `ms` milliseconds, letting late (or premature) completions show.
  void settle(int ms);
  // One-sided writes may land after their initiator's completion: progresses,
  // then asks `landed`, every millisecond until it says yes or the run's
  // timeout passes. Its last answer.
  bool poll_landed(const std::function<bool()>& landed);
  void wait_done(const OpCtx* ctx) {
    wait([&] { return ctxs.done(ctx); }, std::string("completion of ") + ctx->op);
  }
  // Posts with `call`, retrying -FI_EAGAIN after progressing. Counts issued/eagain.
  template <class F>
  void post(const char* fn, OpCtx* ctx, F&& call);
  // As post(), but returns a refusal other than -FI_EAGAIN instead of failing.
  template <class F>
  ssize_t try_post(const char* fn, OpCtx* ctx, F&& call);

  [[noreturn]] void fatal(const std::string& msg);

  // Out-of-band steps; receiving keeps the local provider progressing.
  void send(const std::string& step, const std::string& payload = std::string());
  std::string recv(const std::string& step);
  void sync(const std::string& step);

  // Both ranks learn whether a feature the prober tried at run time works: the
  // prober passes why it does not ("" if it does), the peer passes nullptr. If it
  // does not, both throw FamilyUnsupported and the family is reported as skipped.
  void agree_supported(const std::string& step, const std::string* why_not);

  // A function this family cannot exercise on this provider.
  void skip(const std::string& fn, const std::string& reason);
  const std::map<std::string, std::string>& skips() const { return skips_; }

  // Completions without a context of ours that carry remote CQ data.
  void allow_unassociated(size_t n);
  size_t remote_data_count();
  std::vector<Completion> remote_data();

 private:
  void handle(const Completion& c);

  std::thread::id main_thread_;
  std::atomic<int64_t> last_progress_ns_{0};
  std::chrono::steady_clock::time_point last_abort_check_;
  std::map<std::string, std::string> skips_;
  std::mutex rd_mu_;
  std::vector<Completion> remote_;
  size_t allow_unassoc_ = 0;
};

template <class F>
ssize_t Env::try_post(const char* fn, OpCtx* ctx, F&& call) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms());
  for (;;) {
    ssize_t r = call();
    if (r == 0) {
      stats.issued(fn);
      if (ctx != nullptr && ctx->kept) stats.kept_context(fn);
      return 0;
    }
    if (r != -FI_EAGAIN) {
      if (ctx != nullptr) ctxs.unposted(ctx);
      return r;
    }
    stats.eagain(fn);
    progress();
    if (std::chrono::steady_clock::now() > deadline) {
      if (ctx != nullptr) ctxs.unposted(ctx);
      fatal(std::string(fn) + " kept returning -FI_EAGAIN for " + std::to_string(opt.timeout_s) +
            " s");
    }
  }
}

template <class F>
void Env::post(const char* fn, OpCtx* ctx, F&& call) {
  ssize_t r = try_post(fn, ctx, std::forward<F>(call));
  if (r != 0) fatal(std::string(fn) + " failed: " + fi_strerror(static_cast<int>(-r)));
}

// The contexts of a window's slots: a fresh one per op, or with --reuse-ctx
// one per slot, handed to the provider again for each op of the slot once
// the previous one completed (as a program with a pool of requests does).
class SlotContexts {
 public:
  SlotContexts(Env& env, size_t slots) : env_(env), ctx_(slots, nullptr) {}
  OpCtx* get(const char* op, int kind, uint32_t seq, size_t slot);

 private:
  Env& env_;
  std::vector<OpCtx*> ctx_;
};

// A fixed set of buffer slots, each with at most one operation in flight.
class SlotPool {
 public:
  SlotPool(Env& env, size_t slots, std::function<void(OpCtx*)> reclaim);
  // A free slot; reclaims (and hands to `reclaim`) completed operations as needed.
  size_t acquire();
  // The slot of a receiver's receive i (one a slot, as slots free up) in `buf`
  // of `stride` bytes a slot, set to kCanary so that a write beyond the
  // message shows. "ready" goes to the sender first when i is the first
  // receive beyond the slots (the sender waits for it before sending more).
  uint8_t* acquire_receive(size_t i, Buffer* buf, size_t stride, size_t* slot);
  void set(size_t slot, OpCtx* ctx) { ctx_[slot] = ctx; }
  // Waits for every operation in flight and reclaims it.
  void drain();
  // The receiver's end: "ready" to the sender when the whole run fit the
  // slots (it waits for it before going on), every receive drained, and a data
  // error unless all `total` messages were verified (`verified` is counted by
  // the reclaim, so it is read after the drain).
  void drain_verified(const size_t& verified, size_t total);
  size_t size() const { return ctx_.size(); }

 private:
  Env& env_;
  std::vector<OpCtx*> ctx_;
  std::function<void(OpCtx*)> reclaim_;
};

}  // namespace ftapp
