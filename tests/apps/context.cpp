#include "context.h"

#include <cstdio>
#include <cstring>
#include <map>

#include "stats.h"

namespace ftapp {
namespace {

std::string ptr_str(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

}  // namespace

OpCtx* CtxTracker::make(const char* op, int kind, uint32_t seq, size_t slot,
                        bool expect_completion) {
  auto ctx = std::make_unique<OpCtx>();
  std::memset(static_cast<void*>(ctx.get()), 0, sizeof(OpCtx));
  ctx->magic = kCtxMagic;
  ctx->op = op;
  ctx->kind = kind;
  ctx->seq = seq;
  ctx->slot = slot;
  ctx->state = expect_completion ? kPending : kNoCompletion;
  std::lock_guard<std::mutex> g(mu_);
  ctx->id = next_id_++;
  OpCtx* raw = ctx.get();
  by_ptr_[raw] = raw;
  owned_.push_back(std::move(ctx));
  if (expect_completion) ++outstanding_;
  return raw;
}

OpCtx* CtxTracker::make_multi(const char* op, int kind, uint32_t seq) {
  OpCtx* ctx = make(op, kind, seq);
  std::lock_guard<std::mutex> g(mu_);
  ctx->state = kMulti;
  multi_[ctx];
  return ctx;
}

void CtxTracker::finish(OpCtx* ctx) {
  std::lock_guard<std::mutex> g(mu_);
  if (ctx->state == kMulti) {
    ctx->state = kCompleted;
    --outstanding_;
  }
}

std::vector<Completion> CtxTracker::completions(const OpCtx* ctx) const {
  std::lock_guard<std::mutex> g(mu_);
  auto it = multi_.find(ctx);
  return it == multi_.end() ? std::vector<Completion>() : it->second;
}

void CtxTracker::rearm(OpCtx* ctx, const char* op) {
  std::lock_guard<std::mutex> g(mu_);
  if (ctx->state != kPending && ctx->state != kMulti) ++outstanding_;
  ctx->state = kPending;
  ctx->op = op;
  ctx->comp = Completion();
}

void CtxTracker::unposted(OpCtx* ctx) {
  std::lock_guard<std::mutex> g(mu_);
  if (ctx->state == kPending || ctx->state == kMulti) --outstanding_;
  ctx->state = kUnposted;
}

OpCtx* CtxTracker::complete(const Completion& c, Stats& stats) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = by_ptr_.find(c.op_context);
  std::string what = c.is_error ? "error completion" : "completion";
  if (it == by_ptr_.end()) {
    stats.context_error(what + " with unknown op_context " + ptr_str(c.op_context));
    return nullptr;
  }
  OpCtx* ctx = it->second;
  if (ctx->magic != kCtxMagic) {
    stats.context_error(what + " for " + ctx->op + ": context magic clobbered");
  }
  switch (ctx->state) {
    case kPending:
      ctx->state = kCompleted;
      ctx->comp = c;
      --outstanding_;
      return ctx;
    case kMulti:
      ctx->comp = c;
      multi_[ctx].push_back(c);
      return ctx;
    case kCompleted:
      stats.context_error("duplicate " + what + " for " + ctx->op + " #" + std::to_string(ctx->id));
      return nullptr;
    case kNoCompletion:
      stats.context_error(what + " for " + ctx->op + " #" + std::to_string(ctx->id) +
                          " that was posted without FI_COMPLETION");
      return nullptr;
    default:
      stats.context_error(what + " for refused call " + ctx->op);
      return nullptr;
  }
}

bool CtxTracker::done(const OpCtx* ctx) const {
  std::lock_guard<std::mutex> g(mu_);
  return ctx->state == kCompleted;
}

size_t CtxTracker::outstanding() const {
  std::lock_guard<std::mutex> g(mu_);
  return outstanding_;
}

std::string CtxTracker::outstanding_summary() const {
  std::lock_guard<std::mutex> g(mu_);
  std::map<std::string, size_t> m;
  for (const auto& c : owned_) {
    if (c->state == kPending || c->state == kMulti) ++m[c->op];
  }
  std::string o;
  for (const auto& kv : m) {
    if (!o.empty()) o += ", ";
    o += kv.first + " x" + std::to_string(kv.second);
  }
  return o.empty() ? "none" : o;
}

}  // namespace ftapp
