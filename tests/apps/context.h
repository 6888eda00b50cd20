// Operation contexts handed to libfabric and the tracker that validates every
// completion's op_context against the set of contexts the program handed out.
#pragma once

#include <rdma/fabric.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace ftapp {

class Stats;

// One completion entry, normalised over the CQ formats.
struct Completion {
  void* op_context = nullptr;
  uint64_t flags = 0;
  size_t len = 0;
  void* buf = nullptr;
  uint64_t data = 0;
  uint64_t tag = 0;
  fi_addr_t src = FI_ADDR_NOTAVAIL;
  int err = 0;  // positive FI_E* value for error completions
  int prov_errno = 0;
  bool is_error = false;
  bool has_flags = false;  // FI_CQ_FORMAT_MSG and richer (and error entries)
  bool has_data = false;   // FI_CQ_FORMAT_DATA and richer (and error entries)
  bool has_tag = false;    // FI_CQ_FORMAT_TAGGED (and error entries)
  bool has_src = false;    // read with fi_cq_readfrom
  fid_cq* cq = nullptr;    // the CQ it was read from
  int64_t read_ns = 0;  // steady_clock ns when the read that brought it returned (0: fi_cq_sread)
};

constexpr uint64_t kCtxMagic = 0x4654415050435458ULL;  // "FTAPPCTX"

// The first 64 bytes belong to the provider (FI_CONTEXT / FI_CONTEXT2 mode).
struct OpCtx {
  struct fi_context2 prov;
  uint64_t magic;
  uint64_t id;
  const char* op;  // libfabric function that was given this context
  int state;
  int expect_err;  // 0, or the FI_E* value the completion must carry (FI_ECANCELED)
  int kind;
  uint32_t seq;
  uint32_t tid;
  size_t slot;
  // Handed to the provider as is (FI_PEEK, FI_CLAIM, FI_MULTI_RECV, FI_TRIGGER):
  // the tracer passes such ops through untimed.
  bool kept;
  bool err_optional;  // expect_err or success are both fine (a peek that may miss)
  Completion comp;    // the latest completion
};
static_assert(std::is_standard_layout<OpCtx>::value, "OpCtx must be standard layout");
static_assert(offsetof(OpCtx, prov) == 0, "provider scratch must come first");
static_assert(sizeof(struct fi_context2) >= 64, "fi_context2 is 64 bytes");

class CtxTracker {
 public:
  enum State { kPending = 0, kNoCompletion, kCompleted, kUnposted, kMulti };

  // A fresh context, expected to complete once (or never, if !expect_completion).
  OpCtx* make(const char* op, int kind = 0, uint32_t seq = 0, size_t slot = 0,
              bool expect_completion = true);
  // A context that may complete any number of times (an FI_MULTI_RECV buffer)
  // until finish(); completions(ctx) lists them.
  OpCtx* make_multi(const char* op, int kind = 0, uint32_t seq = 0);
  void finish(OpCtx* ctx);
  std::vector<Completion> completions(const OpCtx* ctx) const;
  // A completed context handed to another call (FI_PEEK|FI_CLAIM, then FI_CLAIM).
  void rearm(OpCtx* ctx, const char* op);
  // The call that was given `ctx` was refused for good: no completion may follow.
  void unposted(OpCtx* ctx);
  // Validates one completion. Returns the context, or nullptr after counting a
  // context error (unknown pointer, clobbered magic, duplicate, unexpected).
  OpCtx* complete(const Completion& c, Stats& stats);
  bool done(const OpCtx* ctx) const;
  size_t outstanding() const;
  // Contexts still waiting for a completion, by function name.
  std::string outstanding_summary() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<OpCtx>> owned_;
  std::unordered_map<const void*, OpCtx*> by_ptr_;
  std::unordered_map<const OpCtx*, std::vector<Completion>> multi_;
  uint64_t next_id_ = 1;
  size_t outstanding_ = 0;
};

}  // namespace ftapp
