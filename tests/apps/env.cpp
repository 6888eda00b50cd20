#include "env.h"

#include <cstdio>
#include <cstring>

#include "payload.h"

namespace ftapp {

Env::Env(const Options& o, int r, Oob& ob, Stats& st)
    : opt(o),
      rank(r),
      oob(ob),
      stats(st),
      main_thread_(std::this_thread::get_id()),
      last_abort_check_(std::chrono::steady_clock::now()) {}

void Env::fatal(const std::string& msg) { throw FamilyError(msg); }

void Env::handle(const Completion& c) {
  if (c.is_error) {
    stats.error_completion();
  } else {
    stats.completion();
  }
  if (c.op_context == nullptr && !c.is_error) {
    bool remote = false;
    {
      std::lock_guard<std::mutex> g(rd_mu_);
      if (c.has_flags) {
        remote = (c.flags & FI_REMOTE_CQ_DATA) != 0;
      } else {
        remote = remote_.size() < allow_unassoc_;  // FI_CQ_FORMAT_CONTEXT: no flags
      }
      if (remote) remote_.push_back(c);
    }
    if (remote) return;
  }
  OpCtx* ctx = ctxs.complete(c, stats);
  if (ctx == nullptr) return;
  if (!c.is_error) stats.completed(ctx->op);
  if (c.is_error && ctx->kept) stats.kept_context_error();
  if (c.is_error) {
    if (ctx->expect_err == 0 || c.err != ctx->expect_err) {
      stats.failure(std::string("error completion for ") + ctx->op + " #" +
                    std::to_string(ctx->seq) + ": " + fi_strerror(c.err) + " (prov_errno " +
                    std::to_string(c.prov_errno) + ")");
    }
  } else if (ctx->expect_err != 0 && !ctx->err_optional) {
    stats.failure(std::string(ctx->op) + " #" + std::to_string(ctx->seq) +
                  " completed successfully but was expected to fail with " +
                  fi_strerror(ctx->expect_err));
  }
}

void Env::progress(bool may_block) {
  last_progress_ns_.store(std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::steady_clock::now().time_since_epoch())
                              .count(),
                          std::memory_order_relaxed);
  std::vector<Completion> entries;
  std::vector<fid_cq*> cqs = {fab.txcq, fab.rxcq == fab.txcq ? nullptr : fab.rxcq};
  cqs.insert(cqs.end(), fab.tx_ctx_cq.begin(), fab.tx_ctx_cq.end());
  cqs.insert(cqs.end(), fab.rx_ctx_cq.begin(), fab.rx_ctx_cq.end());
  CqMethod m = method == CqMethod::kSRead && !may_block ? CqMethod::kRead : method;
  for (fid_cq* cq : cqs) {
    if (cq == nullptr) continue;
    entries.clear();
    read_cq(cq, opt.cq_format, m, 10, &entries);
    for (const Completion& c : entries) handle(c);
  }
}

void Env::wait(const std::function<bool()>& done, const std::string& what) {
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms());
  bool main = std::this_thread::get_id() == main_thread_;
  for (;;) {
    if (done()) return;
    progress(true);
    auto now = Clock::now();
    if (main && now - last_abort_check_ > std::chrono::milliseconds(10)) {
      last_abort_check_ = now;
      oob.check_abort();
    }
    if (now > deadline) {
      fatal("timeout after " + std::to_string(opt.timeout_s) + " s waiting for " + what +
            " (outstanding: " + ctxs.outstanding_summary() + ")");
    }
  }
}

bool Env::wait_up_to(const std::function<bool()>& done, int ms) {
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() > until) return false;
    progress();
    oob.check_abort();
  }
}

bool Env::poll_landed(const std::function<bool()>& landed) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms());
  for (;;) {
    progress();
    if (landed()) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void Env::settle(int ms) {
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < until) {
    progress();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void Env::send(const std::string& step, const std::string& payload) { oob.send(step, payload); }

std::string Env::recv(const std::string& step) {
  return oob.recv(step, timeout_ms(), [this] { progress(); });
}

void Env::sync(const std::string& step) {
  send(step);
  recv(step);
}

void Env::agree_supported(const std::string& step, const std::string* why_not) {
  std::string why;
  if (why_not != nullptr) {
    why = *why_not;
    send(step, why);
  } else {
    why = recv(step);
  }
  if (!why.empty()) throw FamilyUnsupported(why);
}

void Env::skip(const std::string& fn, const std::string& reason) {
  if (skips_.find(fn) == skips_.end()) skips_[fn] = reason;
}

void Env::allow_unassociated(size_t n) {
  std::lock_guard<std::mutex> g(rd_mu_);
  allow_unassoc_ = n;
}

size_t Env::remote_data_count() {
  std::lock_guard<std::mutex> g(rd_mu_);
  return remote_.size();
}

std::vector<Completion> Env::remote_data() {
  std::lock_guard<std::mutex> g(rd_mu_);
  return remote_;
}

OpCtx* SlotContexts::get(const char* op, int kind, uint32_t seq, size_t slot) {
  if (!env_.opt.reuse_ctx || slot >= ctx_.size()) return env_.ctxs.make(op, kind, seq, slot);
  OpCtx*& c = ctx_[slot];
  if (!c) return c = env_.ctxs.make(op, kind, seq, slot);
  env_.ctxs.rearm(c, op);
  c->kind = kind;
  c->seq = seq;
  return c;
}

SlotPool::SlotPool(Env& env, size_t slots, std::function<void(OpCtx*)> reclaim)
    : env_(env), ctx_(slots, nullptr), reclaim_(std::move(reclaim)) {}

size_t SlotPool::acquire() {
  size_t found = 0;
  env_.wait(
      [&] {
        for (size_t i = 0; i < ctx_.size(); ++i) {
          if (ctx_[i] == nullptr) {
            found = i;
            return true;
          }
        }
        for (size_t i = 0; i < ctx_.size(); ++i) {
          if (env_.ctxs.done(ctx_[i])) {
            OpCtx* c = ctx_[i];
            ctx_[i] = nullptr;
            if (reclaim_) reclaim_(c);
            found = i;
            return true;
          }
        }
        return false;
      },
      "a free buffer slot");
  return found;
}

void SlotPool::drain() {
  env_.wait(
      [&] {
        for (size_t i = 0; i < ctx_.size(); ++i) {
          if (ctx_[i] != nullptr && env_.ctxs.done(ctx_[i])) {
            OpCtx* c = ctx_[i];
            ctx_[i] = nullptr;
            if (reclaim_) reclaim_(c);
          }
        }
        for (OpCtx* c : ctx_) {
          if (c != nullptr) return false;
        }
        return true;
      },
      "outstanding operations to complete");
}

uint8_t* SlotPool::acquire_receive(size_t i, Buffer* buf, size_t stride, size_t* slot) {
  if (i == ctx_.size()) env_.send("ready");
  *slot = acquire();
  uint8_t* s = buf->data + *slot * stride;
  std::memset(s, kCanary, stride);
  return s;
}

void SlotPool::drain_verified(const size_t& verified, size_t total) {
  if (total <= ctx_.size()) env_.send("ready");
  drain();
  if (verified != total)
    env_.stats.data_error("verified " + std::to_string(verified) + " of " + std::to_string(total) +
                          " messages");
}

}  // namespace ftapp
