// fabtrace's own data-path cost, isolated from any network: every benchmark
// drives the null provider (bench/null_provider.h), whose ops complete at once
// into an in-memory CQ, through libfabric's inline fi_* calls, in up to three
// modes with the same body:
//
//   <name>/raw     the null provider's objects as opened: no fabtrace at all
//   <name>/traced  objects opened the way the preload sees an application's
//                  (fabtrace::wrap_fabric, then the preload's own fi_domain,
//                  fi_cq_open, fi_endpoint, fi_ep_bind and fi_enable shims),
//                  so the fi_* calls go through fabtrace's shims
//   <name>/seed    a model of the reference design's data path, for comparison:
//                  per op two mutex-guarded std::unordered_map updates (insert
//                  at issue, erase at completion) and three steady_clock reads
//                  (before and after the issue call, at the completion); per
//                  poll one steady_clock read and a mutex-guarded map lookup
//
// Benchmarks (ns are per op: a batch benchmark divides by its 16 ops):
//   BM_<Op>/…        issue one op, then fi_cq_read(count 1) its completion, for
//                    fi_send fi_tsend fi_trecv fi_write fi_read fi_sendmsg
//                    fi_tsendmsg fi_writemsg fi_readmsg (the *msg calls with
//                    FI_COMPLETION)
//   BM_<Op>_x16/…    issue 16, then one fi_cq_read(count 16)
//   BM_Inject/…      fi_inject (counted, never timed: no completion)
//   BM_TsendCtxCq[_x16]/…  fi_tsend + poll on a CQ the application opened in
//                    FI_CQ_FORMAT_CONTEXT (traced: the preload opens it in
//                    FI_CQ_FORMAT_MSG and copies the entries out); the table's
//                    "format translation" line is its added cost minus that of
//                    the same op on the TAGGED CQ
//   BM_EmptyPoll/…   fi_cq_read(count 16) on an empty CQ: what a spinning
//                    (…/traced_nogap: with FABTRACE_CQGAP=0, no clock read)
//                    progress thread pays per poll
//   BM_EmptyPollUtilCq/…  the same on a CQ whose fi_cq_read calls
//                    fi_cq_readfrom through its op table, as libfabric's
//                    utility CQ does (one application poll, one stamp)
//   BM_Threads2_SeparateCq/…  2 threads, each fi_tsend + poll on its own
//                    endpoint and CQ (one domain: one NIC)
//   BM_Threads2_SeparateNic/… the same, the second thread on a second domain
//                    (no NIC busy-time word shared between the threads)
//   BM_Threads2_SharedCq/…    2 threads, own endpoints, one shared CQ (the null
//                    CQ then takes a mutex: FI_THREAD_SAFE domain, raw and traced)
//   BM_TimelineTsend[_x16]/off|on  traced fi_tsend + poll with the per-op
//                    timeline not started (off) or started with
//                    FABTRACE_OPS_RANKS=all FABTRACE_OPS_MIN_BYTES=0 (on)
//   BM_LiveTsend/off|on|on_10ms  traced fi_tsend + poll with the live
//                    snapshot's publisher paused (what FABTRACE_LIVE=0 leaves
//                    the data path), publishing every 1 s (FABTRACE_LIVE=1,
//                    the default) or every 10 ms; the table's "live on" rows
//                    are the differences (target: at most 1 ns per op). Run
//                    with --benchmark_enable_random_interleaving=true so that
//                    the machine's drift falls on both alike
//   BM_LivePublish   one snapshot built and published (the publisher's work
//                    per interval, on its own thread)
//   BM_Clock/…       one read of rdtsc, clock_gettime(CLOCK_MONOTONIC),
//                    std::chrono::steady_clock::now, fabtrace::now_ticks
//   BM_Step/…        the preload's data-path steps one by one (where the added
//                    time goes): in-flight ring claim+release and lookup, NIC
//                    busy-time issue+complete, shard lookup, cell lookup,
//                    histogram record, the completion fold
//
// The per-op timeline is switched on once per process (runtime_activate), so
// the "on" benchmarks run in a child: before anything is activated the binary
// forks; the child waits until the parent has run its benchmarks, then sets
// FABTRACE_OPS_RANKS=all, FABTRACE_OPS_MIN_BYTES=0 (and FABTRACE_OPS_MB=512
// unless set, so that the writer's 200 ms flush period never runs the chunk
// pool dry), runs the "on" benchmarks, prints its own table and sends its
// medians back through a pipe. The parent unsets FABTRACE_OPS_RANKS and
// FABTRACE_OPS_NIC for itself. --benchmark_out gets the parent's runs only.
//
// After the runs the binary prints, for each pair, "op raw_ns traced_ns
// added_ns ratio" from the median of the repetitions (the single run without
// --benchmark_repetitions), with PASS/MISS against the targets: added cost per
// timed op <= 35 ns, per empty poll <= 12 ns, per timeline append <= 10 ns;
// then the targets as ratios within the run: added per timed op <= 1.5x
// two clock reads (fabtrace_now_ticks) and <= 0.25x the seed model's added,
// per empty poll <= 1.2x one clock read, 2 threads on one NIC <= 1.3x the
// single thread's fi_tsend.
// The table's time is the benchmark threads' CPU time by default (on a loaded
// machine real time also counts the time they were descheduled);
// --fabtrace_time=real switches it to real time. For a 2-thread benchmark it
// is both threads' CPU time (or the wall time) divided by the ops of both.
//
//   bench_overhead --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//   bench_overhead --benchmark_filter='Tsend|EmptyPoll' --benchmark_repetitions=9
//
// Own flags: --fabtrace_ratios=0 (no ratio table), --fabtrace_timeline=0 (no
// child), --fabtrace_time=cpu|real. The preload's report (and the child's
// oplog: 40 bytes per op, a few GB in a 5-repetition run) goes to a temporary
// directory removed at exit (FABTRACE_JSON=0), unless FABTRACE_DIR is set.
//
// Each mode runs on its own instances of the null objects: wrapping rewrites
// an object's table pointers in place, so a wrapped object cannot be driven
// raw any more. The instances are built on first use and live until exit.
#include <benchmark/benchmark.h>
#include <dirent.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench/null_provider.h"
#include "common/clock.h"
#include "preload/activate.h"
#include "preload/completion.h"
#include "preload/inflight.h"
#include "preload/live.h"
#include "preload/objects.h"
#include "preload/probes.h"
#include "preload/runtime.h"
#include "preload/stats.h"

namespace {

using fabtrace_bench::null_cq_pending;
using fabtrace_bench::null_ep_last_context;
using fabtrace_bench::null_fabric_open;
using fabtrace_bench::null_info;

enum class Mode { kRaw, kTraced, kSeed };

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::kRaw:
      return "raw";
    case Mode::kTraced:
      return "traced";
    default:
      return "seed";
  }
}

// ---------------------------------------------------------------------------
// The seed model: the reference design's bookkeeping, installed in front of
// the null provider's tables the way a tracer's shims are.

namespace seed {

using Clock = std::chrono::steady_clock;

inline int64_t now() { return Clock::now().time_since_epoch().count(); }

struct Inflight {
  int64_t start = 0;
  uint64_t bytes = 0;
  int kind = 0;
};

struct CqInfo {
  int64_t last_poll = 0;
  uint64_t polls = 0;
  size_t entry_size = sizeof(struct fi_cq_tagged_entry);
};

struct State {
  std::mutex op_mu;
  std::unordered_map<void*, Inflight> inflight;
  std::mutex cq_mu;
  std::unordered_map<const struct fid_cq*, CqInfo> cqs;
};

State& st() {
  static State* s = new State();
  return *s;
}

// Durations are folded per thread (the model's aggregation is not the point).
struct Acc {
  int64_t issue_ns = 0, lat_ns = 0;
  uint64_t ops = 0;
};
thread_local Acc t_acc;

const struct fi_ops_msg* g_real_msg = nullptr;
const struct fi_ops_tagged* g_real_tagged = nullptr;
const struct fi_ops_rma* g_real_rma = nullptr;
const struct fi_ops_cq* g_real_cq = nullptr;
struct fi_ops_msg g_msg;
struct fi_ops_tagged g_tagged;
struct fi_ops_rma g_rma;
struct fi_ops_cq g_cq;

template <typename Call>
inline ssize_t issue(void* ctx, uint64_t bytes, int kind, Call&& call) {
  State& s = st();
  const int64_t t0 = now();  // clock read 1
  {
    std::lock_guard<std::mutex> lk(s.op_mu);
    s.inflight[ctx] = Inflight{t0, bytes, kind};  // map update 1
  }
  const ssize_t ret = call();
  const int64_t t1 = now();  // clock read 2
  if (ret != 0) {
    std::lock_guard<std::mutex> lk(s.op_mu);
    s.inflight.erase(ctx);
  }
  t_acc.issue_ns += t1 - t0;
  return ret;
}

ssize_t send(struct fid_ep* ep, const void* buf, size_t len, void* desc, fi_addr_t dest,
             void* ctx) {
  return issue(ctx, len, 0, [&] { return g_real_msg->send(ep, buf, len, desc, dest, ctx); });
}
ssize_t sendmsg(struct fid_ep* ep, const struct fi_msg* msg, uint64_t flags) {
  return issue(msg->context, msg->iov_count ? msg->msg_iov[0].iov_len : 0, 1,
               [&] { return g_real_msg->sendmsg(ep, msg, flags); });
}
ssize_t inject(struct fid_ep* ep, const void* buf, size_t len, fi_addr_t dest) {
  return g_real_msg->inject(ep, buf, len, dest);
}
ssize_t tsend(struct fid_ep* ep, const void* buf, size_t len, void* desc, fi_addr_t dest,
              uint64_t tag, void* ctx) {
  return issue(ctx, len, 2,
               [&] { return g_real_tagged->send(ep, buf, len, desc, dest, tag, ctx); });
}
ssize_t tsendmsg(struct fid_ep* ep, const struct fi_msg_tagged* msg, uint64_t flags) {
  return issue(msg->context, msg->iov_count ? msg->msg_iov[0].iov_len : 0, 3,
               [&] { return g_real_tagged->sendmsg(ep, msg, flags); });
}
ssize_t trecv(struct fid_ep* ep, void* buf, size_t len, void* desc, fi_addr_t src, uint64_t tag,
              uint64_t ignore, void* ctx) {
  return issue(ctx, len, 4,
               [&] { return g_real_tagged->recv(ep, buf, len, desc, src, tag, ignore, ctx); });
}
ssize_t write(struct fid_ep* ep, const void* buf, size_t len, void* desc, fi_addr_t dest,
              uint64_t addr, uint64_t key, void* ctx) {
  return issue(ctx, len, 5,
               [&] { return g_real_rma->write(ep, buf, len, desc, dest, addr, key, ctx); });
}
ssize_t writemsg(struct fid_ep* ep, const struct fi_msg_rma* msg, uint64_t flags) {
  return issue(msg->context, msg->rma_iov_count ? msg->rma_iov[0].len : 0, 6,
               [&] { return g_real_rma->writemsg(ep, msg, flags); });
}
ssize_t read(struct fid_ep* ep, void* buf, size_t len, void* desc, fi_addr_t src, uint64_t addr,
             uint64_t key, void* ctx) {
  return issue(ctx, len, 7,
               [&] { return g_real_rma->read(ep, buf, len, desc, src, addr, key, ctx); });
}
ssize_t readmsg(struct fid_ep* ep, const struct fi_msg_rma* msg, uint64_t flags) {
  return issue(msg->context, msg->rma_iov_count ? msg->rma_iov[0].len : 0, 8,
               [&] { return g_real_rma->readmsg(ep, msg, flags); });
}

ssize_t cq_read(struct fid_cq* cq, void* buf, size_t count) {
  State& s = st();
  const int64_t tp = now();  // the per-poll clock read
  size_t esz;
  {
    std::lock_guard<std::mutex> lk(s.cq_mu);
    CqInfo& c = s.cqs.find(cq)->second;  // the per-poll map lookup
    c.last_poll = tp;
    ++c.polls;
    esz = c.entry_size;
  }
  const ssize_t n = g_real_cq->read(cq, buf, count);
  char* e = static_cast<char*>(buf);
  for (ssize_t i = 0; i < n; ++i, e += esz) {
    void* ctx = *reinterpret_cast<void**>(e);
    const int64_t tc = now();  // clock read 3
    std::lock_guard<std::mutex> lk(s.op_mu);
    auto it = s.inflight.find(ctx);
    if (it == s.inflight.end()) continue;
    t_acc.lat_ns += tc - it->second.start;
    ++t_acc.ops;
    s.inflight.erase(it);  // map update 2
  }
  return n;
}

void wrap_ep(struct fid_ep* ep) {
  if (!g_real_msg) {
    g_real_msg = ep->msg;
    g_msg = *ep->msg;
    g_msg.send = send;
    g_msg.sendmsg = sendmsg;
    g_msg.inject = inject;
    g_real_tagged = ep->tagged;
    g_tagged = *ep->tagged;
    g_tagged.send = tsend;
    g_tagged.sendmsg = tsendmsg;
    g_tagged.recv = trecv;
    g_real_rma = ep->rma;
    g_rma = *ep->rma;
    g_rma.write = write;
    g_rma.writemsg = writemsg;
    g_rma.read = read;
    g_rma.readmsg = readmsg;
  }
  ep->msg = &g_msg;
  ep->tagged = &g_tagged;
  ep->rma = &g_rma;
}

void wrap_cq(struct fid_cq* cq) {
  if (!g_real_cq) {
    g_real_cq = cq->ops;
    g_cq = *cq->ops;
    g_cq.read = cq_read;
  }
  cq->ops = &g_cq;
  State& s = st();
  std::lock_guard<std::mutex> lk(s.cq_mu);
  s.cqs[cq] = CqInfo{};
  std::lock_guard<std::mutex> lk2(s.op_mu);
  s.inflight.reserve(4096);
}

}  // namespace seed

// ---------------------------------------------------------------------------
// The objects each mode runs on.

struct Stack {
  struct fid_fabric* fabric = nullptr;
  struct fid_domain* dom = nullptr;       // FI_THREAD_COMPLETION: unlocked CQs
  struct fid_domain* dom_safe = nullptr;  // FI_THREAD_SAFE: CQs take a mutex
  struct fid_ep* ep[2] = {};              // ep[i] bound to cq[i]; [0] single-thread runs
  struct fid_cq* cq[2] = {};
  struct fid_ep* idle_ep = nullptr;  // never issues: its CQ stays empty
  struct fid_cq* empty_cq = nullptr;
  struct fid_ep* sh_ep[2] = {};  // both bound to sh_cq, on dom_safe
  struct fid_cq* sh_cq = nullptr;
  // An application CQ in FI_CQ_FORMAT_CONTEXT: traced, the provider's CQ is
  // opened in FI_CQ_FORMAT_MSG and the entries are copied out as fi_cq_entry.
  struct fid_ep* ctx_ep = nullptr;
  struct fid_cq* ctx_cq = nullptr;
  // A CQ whose fi_cq_read calls fi_cq_readfrom through its op table, as
  // libfabric's utility CQ does (tcp;ofi_rxm, shm, udp;ofi_rxd); its endpoint
  // never issues, so it stays empty: what a busy poller pays on those providers.
  struct fid_ep* util_ep = nullptr;
  struct fid_cq* util_cq = nullptr;
  struct fid_domain* dom2 = nullptr;  // a second NIC (FI_THREAD_COMPLETION)
  struct fid_ep* nic2_ep = nullptr;   // bound to nic2_cq, on dom2
  struct fid_cq* nic2_cq = nullptr;
  std::string error;
};

std::string fi_err(const char* what, int ret) {
  return std::string(what) + " failed: " + std::to_string(ret);
}

struct fid_cq* open_cq(struct fid_domain* dom, std::string* err,
                       enum fi_cq_format format = FI_CQ_FORMAT_TAGGED, uint64_t flags = 0) {
  struct fi_cq_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.size = 1024;
  attr.format = format;
  attr.flags = flags;
  attr.wait_obj = FI_WAIT_NONE;
  struct fid_cq* cq = nullptr;
  const int ret = fi_cq_open(dom, &attr, &cq, nullptr);
  if (ret != 0) *err = fi_err("fi_cq_open", ret);
  return ret == 0 ? cq : nullptr;
}

struct fid_ep* open_ep(struct fid_domain* dom, struct fi_info* info, struct fid_cq* cq,
                       std::string* err) {
  struct fid_ep* ep = nullptr;
  int ret = fi_endpoint(dom, info, &ep, nullptr);
  if (ret != 0) {
    *err = fi_err("fi_endpoint", ret);
    return nullptr;
  }
  ret = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV);
  if (ret != 0) {
    *err = fi_err("fi_ep_bind", ret);
    return nullptr;
  }
  ret = fi_enable(ep);
  if (ret != 0) {
    *err = fi_err("fi_enable", ret);
    return nullptr;
  }
  return ep;
}

void build_stack(Mode mode, Stack* s) {
  std::string& err = s->error;
  if (mode == Mode::kTraced) {
    if (!fabtrace::runtime_configure()) {
      err = "FABTRACE=0: the preload is inert";
      return;
    }
    fabtrace::runtime_activate();
  }
  int ret = null_fabric_open(&s->fabric);
  if (ret != 0) {
    err = fi_err("null_fabric_open", ret);
    return;
  }
  // What the preload's fi_fabric does with the fabric the provider returned.
  if (mode == Mode::kTraced) fabtrace::wrap_fabric(s->fabric, "null");
  struct fi_info* info = null_info(FI_THREAD_COMPLETION);
  struct fi_info* info_safe = null_info(FI_THREAD_SAFE);
  ret = fi_domain(s->fabric, info, &s->dom, nullptr);
  if (ret == 0) ret = fi_domain(s->fabric, info_safe, &s->dom_safe, nullptr);
  if (ret == 0) ret = fi_domain(s->fabric, info, &s->dom2, nullptr);
  if (ret != 0) {
    err = fi_err("fi_domain", ret);
    return;
  }
  for (int i = 0; i < 2; ++i) {
    if (!(s->cq[i] = open_cq(s->dom, &err))) return;
    if (!(s->ep[i] = open_ep(s->dom, info, s->cq[i], &err))) return;
  }
  if (!(s->ctx_cq = open_cq(s->dom, &err, FI_CQ_FORMAT_CONTEXT))) return;
  if (!(s->ctx_ep = open_ep(s->dom, info, s->ctx_cq, &err))) return;
  if (!(s->util_cq = open_cq(s->dom, &err, FI_CQ_FORMAT_TAGGED, fabtrace_bench::kNullUtilCq)))
    return;
  if (!(s->util_ep = open_ep(s->dom, info, s->util_cq, &err))) return;
  if (!(s->empty_cq = open_cq(s->dom, &err))) return;
  if (!(s->idle_ep = open_ep(s->dom, info, s->empty_cq, &err))) return;
  if (!(s->sh_cq = open_cq(s->dom_safe, &err))) return;
  for (int i = 0; i < 2; ++i)
    if (!(s->sh_ep[i] = open_ep(s->dom_safe, info_safe, s->sh_cq, &err))) return;
  if (!(s->nic2_cq = open_cq(s->dom2, &err))) return;
  if (!(s->nic2_ep = open_ep(s->dom2, info, s->nic2_cq, &err))) return;

  if (mode == Mode::kTraced) {
    // The preload must have wrapped every object and learnt each CQ binding.
    for (struct fid_ep* ep : {s->ep[0], s->ep[1], s->ctx_ep, s->util_ep, s->idle_ep, s->sh_ep[0],
                              s->sh_ep[1], s->nic2_ep}) {
      fabtrace::EpWrap* w = fabtrace::ep_wrap_of(&ep->fid);
      if (!w || !w->tx.cq || !w->rx.cq || !w->tx.plain_timed()) {
        err = "the preload did not wrap an endpoint or learn its CQ binding";
        return;
      }
    }
    for (struct fid_cq* cq :
         {s->cq[0], s->cq[1], s->ctx_cq, s->util_cq, s->empty_cq, s->sh_cq, s->nic2_cq}) {
      if (!fabtrace::cq_wrap_of(&cq->fid)) {
        err = "the preload did not wrap a CQ";
        return;
      }
    }
    const fabtrace::CqWrap* cw = fabtrace::cq_wrap_of(&s->ctx_cq->fid);
    if (!cw->translate || !cw->has_len) {
      err = "the preload did not open the FI_CQ_FORMAT_CONTEXT CQ with a length";
      return;
    }
  } else if (mode == Mode::kSeed) {
    for (struct fid_ep* ep : {s->ep[0], s->ep[1], s->ctx_ep, s->util_ep, s->idle_ep, s->sh_ep[0],
                              s->sh_ep[1], s->nic2_ep})
      seed::wrap_ep(ep);
    for (struct fid_cq* cq :
         {s->cq[0], s->cq[1], s->ctx_cq, s->util_cq, s->empty_cq, s->sh_cq, s->nic2_cq})
      seed::wrap_cq(cq);
  }
}

// The stack of a mode, built on first use (thread-safe); nullptr after
// marking the benchmark failed.
Stack* stack(Mode mode, benchmark::State& state) {
  static std::once_flag once[3];
  static Stack stacks[3];
  const int i = static_cast<int>(mode);
  std::call_once(once[i], [&] { build_stack(mode, &stacks[i]); });
  if (!stacks[i].error.empty()) {
    state.SkipWithError(stacks[i].error.c_str());
    return nullptr;
  }
  return &stacks[i];
}

// ---------------------------------------------------------------------------
// The ops.

enum class Op {
  kSend,
  kTsend,
  kTrecv,
  kWrite,
  kRead,
  kSendmsg,
  kTsendmsg,
  kWritemsg,
  kReadmsg,
  kInject
};

constexpr size_t kLen = 64;
constexpr fi_addr_t kPeer = 0;
constexpr uint64_t kTag = 0x1234;
constexpr uint64_t kRaddr = 0x1000;
constexpr uint64_t kRkey = 0x5;

struct Io {
  alignas(64) char buf[kLen];
  struct iovec iov;
  void* desc;
  struct fi_rma_iov rma;
  struct fi_msg msg;
  struct fi_msg_tagged tmsg;
  struct fi_msg_rma rmsg;

  Io() : buf{}, iov{}, desc(nullptr), rma{}, msg{}, tmsg{}, rmsg{} {
    iov.iov_base = buf;
    iov.iov_len = kLen;
    rma.addr = kRaddr;
    rma.len = kLen;
    rma.key = kRkey;
    msg.msg_iov = &iov;
    msg.desc = &desc;
    msg.iov_count = 1;
    msg.addr = kPeer;
    tmsg.msg_iov = &iov;
    tmsg.desc = &desc;
    tmsg.iov_count = 1;
    tmsg.addr = kPeer;
    tmsg.tag = kTag;
    rmsg.msg_iov = &iov;
    rmsg.desc = &desc;
    rmsg.iov_count = 1;
    rmsg.addr = kPeer;
    rmsg.rma_iov = &rma;
    rmsg.rma_iov_count = 1;
  }
};

template <Op op>
inline ssize_t issue_op(struct fid_ep* ep, Io& io, void* ctx) {
  if constexpr (op == Op::kSend) {
    return fi_send(ep, io.buf, kLen, nullptr, kPeer, ctx);
  } else if constexpr (op == Op::kTsend) {
    return fi_tsend(ep, io.buf, kLen, nullptr, kPeer, kTag, ctx);
  } else if constexpr (op == Op::kTrecv) {
    return fi_trecv(ep, io.buf, kLen, nullptr, FI_ADDR_UNSPEC, kTag, 0, ctx);
  } else if constexpr (op == Op::kWrite) {
    return fi_write(ep, io.buf, kLen, nullptr, kPeer, kRaddr, kRkey, ctx);
  } else if constexpr (op == Op::kRead) {
    return fi_read(ep, io.buf, kLen, nullptr, kPeer, kRaddr, kRkey, ctx);
  } else if constexpr (op == Op::kSendmsg) {
    io.msg.context = ctx;
    return fi_sendmsg(ep, &io.msg, FI_COMPLETION);
  } else if constexpr (op == Op::kTsendmsg) {
    io.tmsg.context = ctx;
    return fi_tsendmsg(ep, &io.tmsg, FI_COMPLETION);
  } else if constexpr (op == Op::kWritemsg) {
    io.rmsg.context = ctx;
    return fi_writemsg(ep, &io.rmsg, FI_COMPLETION);
  } else if constexpr (op == Op::kReadmsg) {
    io.rmsg.context = ctx;
    return fi_readmsg(ep, &io.rmsg, FI_COMPLETION);
  } else {
    (void)ctx;
    return fi_inject(ep, io.buf, kLen, kPeer);
  }
}

// Ops the per-op timeline dropped (no free chunk) or filtered on this thread.
uint64_t timeline_dropped() {
  fabtrace::Shard* s = fabtrace::my_shard();
  return s ? s->timeline.dropped + s->timeline.filtered : 0;
}

// Issue kBatch ops, then read their completions with one fi_cq_read. Entry:
// the application's CQ entry type (fi_cq_tagged_entry: the TAGGED CQ;
// fi_cq_entry: the CONTEXT CQ, whose entries the preload translates).
template <Op op, int kBatch, typename Entry = struct fi_cq_tagged_entry>
void bm_op(benchmark::State& state, Mode mode) {
  constexpr bool kCompletes = op != Op::kInject;
  constexpr bool kContextCq = sizeof(Entry) == sizeof(struct fi_cq_entry);
  Stack* s = stack(mode, state);
  if (!s) return;
  struct fid_ep* ep = kContextCq ? s->ctx_ep : s->ep[0];
  struct fid_cq* cq = kContextCq ? s->ctx_cq : s->cq[0];
  const bool timeline = mode == Mode::kTraced && fabtrace::runtime().timeline_on;
  const uint64_t dropped0 = timeline ? timeline_dropped() : 0;
  Io io;
  struct fi_context2 ctx[kBatch];
  Entry ent[kBatch];
  std::memset(ent, 0, sizeof(ent));
  for (auto _ : state) {
    ssize_t bad = 0;
    for (int i = 0; i < kBatch; ++i) bad |= issue_op<op>(ep, io, &ctx[i]);
    if constexpr (kCompletes) bad |= fi_cq_read(cq, ent, kBatch) != kBatch;
    if (__builtin_expect(bad != 0, 0)) {
      state.SkipWithError("an op was refused or did not complete at once");
      break;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kBatch);
  if (state.error_occurred() || state.iterations() == 0) return;
  if constexpr (kCompletes) {
    // The application got its own contexts back; the provider saw fabtrace's
    // record when traced, the application's context otherwise.
    for (int i = 0; i < kBatch; ++i)
      if (ent[i].op_context != &ctx[i]) state.SkipWithError("wrong op_context in a completion");
    const bool replaced = null_ep_last_context(ep) != &ctx[kBatch - 1];
    if (replaced != (mode == Mode::kTraced))
      state.SkipWithError(mode == Mode::kTraced ? "the op was not timed by the preload"
                                                : "the op context was replaced");
    if (null_cq_pending(cq) != 0) state.SkipWithError("completions left in the CQ");
  }
  if (timeline) {
    const double n = static_cast<double>(state.iterations()) * kBatch;
    state.counters["tl_dropped_share"] = static_cast<double>(timeline_dropped() - dropped0) / n;
  }
}

void bm_empty_poll(benchmark::State& state, Mode mode, bool util = false) {
  Stack* s = stack(mode, state);
  if (!s) return;
  struct fid_cq* cq = util ? s->util_cq : s->empty_cq;
  struct fi_cq_tagged_entry ent[16];
  ssize_t n = 0;
  for (auto _ : state) {
    n = fi_cq_read(cq, ent, 16);
    benchmark::DoNotOptimize(n);
  }
  if (n != -FI_EAGAIN) state.SkipWithError("the empty CQ was not empty");
}

// The same with the poll-gap statistics off (FABTRACE_CQGAP=0): no clock read.
void bm_empty_poll_nogap(benchmark::State& state) {
  bool& gap = fabtrace::runtime().cfg.cqgap;
  const bool was = gap;
  gap = false;
  bm_empty_poll(state, Mode::kTraced);
  gap = was;
}

struct fi_context2 g_thread_ctx[2];

enum class Sharing { kSeparateCq, kSeparateNic, kSharedCq };

// Two threads, each fi_tsend + poll until one completion comes back (on a
// shared CQ it may be the other thread's). kSeparateCq: own endpoint and CQ,
// one domain (one NIC); kSeparateNic: the second thread on a second domain;
// kSharedCq: own endpoints, one CQ.
template <Sharing kShare>
void bm_threads(benchmark::State& state, Mode mode) {
  Stack* s = stack(mode, state);
  if (!s) return;
  const int t = state.thread_index();
  struct fid_ep* ep = s->ep[t];
  struct fid_cq* cq = s->cq[t];
  if (kShare == Sharing::kSharedCq) {
    ep = s->sh_ep[t];
    cq = s->sh_cq;
  } else if (kShare == Sharing::kSeparateNic && t == 1) {
    ep = s->nic2_ep;
    cq = s->nic2_cq;
  }
  void* ctx = &g_thread_ctx[t];
  Io io;
  struct fi_cq_tagged_entry e;
  std::memset(&e, 0, sizeof(e));
  for (auto _ : state) {
    if (__builtin_expect(issue_op<Op::kTsend>(ep, io, ctx) != 0, 0)) {
      state.SkipWithError("fi_tsend refused");
      break;
    }
    ssize_t n;
    while ((n = fi_cq_read(cq, &e, 1)) == -FI_EAGAIN) {
    }
    if (__builtin_expect(n != 1, 0)) {
      state.SkipWithError("fi_cq_read failed");
      break;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  if (state.iterations() && e.op_context != &g_thread_ctx[0] && e.op_context != &g_thread_ctx[1])
    state.SkipWithError("wrong op_context in a completion");
}

// ---------------------------------------------------------------------------
// Clocks and the preload's steps.

void bm_clock_rdtsc(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(__rdtsc());
}
void bm_clock_gettime(benchmark::State& state) {
  struct timespec ts;
  for (auto _ : state) {
    clock_gettime(CLOCK_MONOTONIC, &ts);
    benchmark::DoNotOptimize(ts);
  }
}
void bm_clock_steady(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(std::chrono::steady_clock::now());
}
void bm_clock_now_ticks(benchmark::State& state) {
  fabtrace::clock_init();
  for (auto _ : state) benchmark::DoNotOptimize(fabtrace::now_ticks());
  state.SetLabel(fabtrace::clock_calibration().tsc ? "tsc" : "clock_gettime");
}

// The steps run on the preload's live state (its ring, this thread's shard,
// the traced stack's endpoint), so the traced stack is built first.
bool steps_ready(benchmark::State& state) { return stack(Mode::kTraced, state) != nullptr; }

void bm_step_ring(benchmark::State& state) {
  if (!steps_ready(state)) return;
  fabtrace::InflightRing& ring = fabtrace::runtime().ring;
  for (auto _ : state) {
    fabtrace::OpRecord* r = ring.claim();
    benchmark::DoNotOptimize(r);
    if (r) fabtrace::InflightRing::release(r);
  }
}

void bm_step_ring_owned(benchmark::State& state) {
  if (!steps_ready(state)) return;
  fabtrace::InflightRing& ring = fabtrace::runtime().ring;
  fabtrace::OpRecord* r = ring.claim();
  if (!r) {
    state.SkipWithError("ring full");
    return;
  }
  void* p = r;
  for (auto _ : state) {
    benchmark::DoNotOptimize(p);
    benchmark::DoNotOptimize(ring.owned(p));
  }
  fabtrace::InflightRing::release(r);
}

// One poll's NIC busy interval: plain update (`serial`: a FI_THREAD_DOMAIN
// domain) or the try-lock (any other threading model). Every period reaches
// the NIC's time windows and busiest-stretch tracker, set up as the preload
// sets up a domain's.
void bm_step_nic(benchmark::State& state, bool serial) {
  if (!stack(Mode::kTraced, state)) return;  // the runtime: clock and window settings
  const fabtrace::Runtime& rt = fabtrace::runtime();
  auto nic = std::make_unique<fabtrace::NicBusy>();  // a private one: the report's stays untouched
  nic->serial = serial;
  nic->set_bins(rt.start_ticks, rt.nic_bin_shift, rt.nic_peak_span);
  fabtrace::NicLocal local;
  local.nic = nic.get();
  uint64_t t = rt.start_ticks + 1000;
  for (auto _ : state) {  // a ping-pong: one new period per poll, the worst case
    local.add(t, t + 64, 64);
    t += 128;
  }
  local.flush();
  benchmark::DoNotOptimize(nic->busy_ticks());
}

void bm_step_my_shard(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(fabtrace::my_shard());
}

// The USDT probe sites with no session attached: the semaphore checks a poll
// makes (per-poll probes, stall probe) and an op makes (slow-op probe).
void bm_step_probe_checks(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(fabtrace::probes::polls_on());
    benchmark::DoNotOptimize(fabtrace::probes::cq_stall_on());
    benchmark::DoNotOptimize(fabtrace::probes::slow_op_on());
  }
}

void bm_step_cell(benchmark::State& state) {
  Stack* s = stack(Mode::kTraced, state);
  if (!s) return;
  fabtrace::Shard* sh = fabtrace::my_shard();
  const fabtrace::CellKey k{fabtrace::ep_wrap_of(&s->ep[0]->fid), kPeer, kLen,
                            fabtrace::OpKind::kTsend};
  for (auto _ : state) benchmark::DoNotOptimize(sh->cell(k));
}

void bm_step_histogram(benchmark::State& state) {
  fabtrace::Cell c;
  uint64_t v = 150;
  for (auto _ : state) {
    c.lat.record(v);
    v = (v * 7 + 13) & 1023;  // latencies of 0..1023 ticks: the null provider's range
  }
  benchmark::DoNotOptimize(c);
}

// complete_ok alone: the NIC busy count is at zero here, so its CAS is skipped.
void bm_step_complete(benchmark::State& state) {
  Stack* s = stack(Mode::kTraced, state);
  if (!s) return;
  fabtrace::Shard* sh = fabtrace::my_shard();
  fabtrace::OpRecord* r = fabtrace::runtime().ring.claim();
  if (!r) {
    state.SkipWithError("ring full");
    return;
  }
  r->kind = fabtrace::OpKind::kTsend;
  r->ep = fabtrace::ep_wrap_of(&s->ep[0]->fid);
  r->cq = fabtrace::cq_wrap_of(&s->cq[0]->fid);
  r->peer = kPeer;
  r->bytes = kLen;
  r->start = fabtrace::now_ticks();
  uint64_t now = r->start;
  for (auto _ : state)
    fabtrace::complete_ok(sh, r, now += 100, 0, FI_ADDR_NOTAVAIL, nullptr, nullptr);
  fabtrace::InflightRing::release(r);
}

// The live snapshot's publisher (preload/live.h), off (paused: FABTRACE_LIVE=0
// as the data path sees it: the thread that reads the shards does not run)
// or on, publishing every `interval_ms`, while the traced fi_tsend + poll runs.
// The publisher only reads the shards: what the data path can pay is the
// cache lines it takes from the benchmark's core at each snapshot.
void bm_live_tsend(benchmark::State& state, bool on, uint64_t interval_ms) {
  if (!stack(Mode::kTraced, state)) return;
  if (!fabtrace::live_running()) {
    state.SkipWithError("no live snapshot (FABTRACE_LIVE=0, or its file could not be made)");
    return;
  }
  fabtrace::live_set_interval_ms(interval_ms);
  fabtrace::live_pause(!on);
  bm_op<Op::kTsend, 1>(state, Mode::kTraced);
  fabtrace::live_pause(false);
  fabtrace::live_set_interval_ms(1000);
}

// One snapshot built and published on this thread: what the publisher thread
// spends per interval (on this process's cells: every benchmark's links).
void bm_live_publish(benchmark::State& state) {
  if (!stack(Mode::kTraced, state)) return;
  if (!fabtrace::live_running()) {
    state.SkipWithError("no live snapshot (FABTRACE_LIVE=0, or its file could not be made)");
    return;
  }
  fabtrace::live_pause(true);
  for (auto _ : state) fabtrace::live_publish_now();
  fabtrace::live_pause(false);
}

// ---------------------------------------------------------------------------
// Registration and the ratio table.

// Ops per benchmark iteration, by registered name.
std::map<std::string, int>& ops_per_iter() {
  static std::map<std::string, int> m;
  return m;
}

double stat_min(const std::vector<double>& v) {
  return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
}

template <typename Fn>
benchmark::internal::Benchmark* reg(const std::string& name, int ops, Fn&& fn) {
  ops_per_iter()[name] = ops;
  return benchmark::RegisterBenchmark(name.c_str(), std::forward<Fn>(fn))
      ->Unit(benchmark::kNanosecond)
      ->ComputeStatistics("min", stat_min);
}

template <Op op>
void reg_op(const char* bm, bool seed) {
  std::vector<Mode> modes = {Mode::kRaw, Mode::kTraced};
  if (seed) modes.push_back(Mode::kSeed);
  for (Mode m : modes)
    reg(std::string("BM_") + bm + "/" + mode_name(m), 1,
        [m](benchmark::State& st) { bm_op<op, 1>(st, m); });
  if (op == Op::kInject) return;
  for (Mode m : modes)
    reg(std::string("BM_") + bm + "_x16/" + mode_name(m), 16,
        [m](benchmark::State& st) { bm_op<op, 16>(st, m); });
}

void register_parent() {
  reg_op<Op::kSend>("Send", true);
  reg_op<Op::kTsend>("Tsend", true);
  reg_op<Op::kTrecv>("Trecv", true);
  reg_op<Op::kWrite>("Write", true);
  reg_op<Op::kRead>("Read", true);
  reg_op<Op::kSendmsg>("Sendmsg", true);
  reg_op<Op::kTsendmsg>("Tsendmsg", true);
  reg_op<Op::kWritemsg>("Writemsg", true);
  reg_op<Op::kReadmsg>("Readmsg", true);
  reg_op<Op::kInject>("Inject", true);
  // The application asks for FI_CQ_FORMAT_CONTEXT: traced, its entries come
  // from a FI_CQ_FORMAT_MSG CQ through the preload's copy.
  for (Mode m : {Mode::kRaw, Mode::kTraced}) {
    reg(std::string("BM_TsendCtxCq/") + mode_name(m), 1,
        [m](benchmark::State& st) { bm_op<Op::kTsend, 1, struct fi_cq_entry>(st, m); });
    reg(std::string("BM_TsendCtxCq_x16/") + mode_name(m), 16,
        [m](benchmark::State& st) { bm_op<Op::kTsend, 16, struct fi_cq_entry>(st, m); });
  }
  for (Mode m : {Mode::kRaw, Mode::kTraced, Mode::kSeed})
    reg(std::string("BM_EmptyPoll/") + mode_name(m), 1,
        [m](benchmark::State& st) { bm_empty_poll(st, m); });
  reg("BM_EmptyPoll/traced_nogap", 1, bm_empty_poll_nogap);
  for (Mode m : {Mode::kRaw, Mode::kTraced})
    reg(std::string("BM_EmptyPollUtilCq/") + mode_name(m), 1,
        [m](benchmark::State& st) { bm_empty_poll(st, m, true); });
  for (Mode m : {Mode::kRaw, Mode::kTraced}) {
    reg(std::string("BM_Threads2_SeparateCq/") + mode_name(m), 1,
        [m](benchmark::State& st) { bm_threads<Sharing::kSeparateCq>(st, m); })
        ->Threads(2)
        ->UseRealTime();
  }
  for (Mode m : {Mode::kRaw, Mode::kTraced}) {
    reg(std::string("BM_Threads2_SeparateNic/") + mode_name(m), 1,
        [m](benchmark::State& st) { bm_threads<Sharing::kSeparateNic>(st, m); })
        ->Threads(2)
        ->UseRealTime();
  }
  for (Mode m : {Mode::kRaw, Mode::kTraced}) {
    reg(std::string("BM_Threads2_SharedCq/") + mode_name(m), 1,
        [m](benchmark::State& st) { bm_threads<Sharing::kSharedCq>(st, m); })
        ->Threads(2)
        ->UseRealTime();
  }
  reg("BM_TimelineTsend/off", 1,
      [](benchmark::State& st) { bm_op<Op::kTsend, 1>(st, Mode::kTraced); });
  reg("BM_TimelineTsend_x16/off", 16,
      [](benchmark::State& st) { bm_op<Op::kTsend, 16>(st, Mode::kTraced); });
  reg("BM_LiveTsend/off", 1, [](benchmark::State& st) { bm_live_tsend(st, false, 1000); });
  reg("BM_LiveTsend/on", 1, [](benchmark::State& st) { bm_live_tsend(st, true, 1000); });
  reg("BM_LiveTsend/on_10ms", 1, [](benchmark::State& st) { bm_live_tsend(st, true, 10); });
  reg("BM_LivePublish", 1, bm_live_publish);
  reg("BM_Clock/rdtsc", 1, bm_clock_rdtsc);
  reg("BM_Clock/clock_gettime_mono", 1, bm_clock_gettime);
  reg("BM_Clock/steady_clock", 1, bm_clock_steady);
  reg("BM_Clock/fabtrace_now_ticks", 1, bm_clock_now_ticks);
  reg("BM_Step/ring_claim_release", 1, bm_step_ring);
  reg("BM_Step/ring_owned", 1, bm_step_ring_owned);
  reg("BM_Step/nic_add_trylock", 1, [](benchmark::State& st) { bm_step_nic(st, false); });
  reg("BM_Step/nic_add_serial", 1, [](benchmark::State& st) { bm_step_nic(st, true); });
  reg("BM_Step/my_shard", 1, bm_step_my_shard);
  reg("BM_Step/probe_checks", 1, bm_step_probe_checks);
  reg("BM_Step/shard_cell", 1, bm_step_cell);
  reg("BM_Step/histogram_record", 1, bm_step_histogram);
  reg("BM_Step/complete_ok", 1, bm_step_complete);
}

const char* const kTimelineOn[] = {"BM_TimelineTsend/on", "BM_TimelineTsend_x16/on"};

void register_timeline_child() {
  reg(kTimelineOn[0], 1, [](benchmark::State& st) { bm_op<Op::kTsend, 1>(st, Mode::kTraced); });
  reg(kTimelineOn[1], 16, [](benchmark::State& st) { bm_op<Op::kTsend, 16>(st, Mode::kTraced); });
}

// Whether --benchmark_filter selects `name` (the library's syntax: an
// extended regex, a leading '-' negates; empty or "all" selects everything).
bool filter_selects(const std::string& name) {
  std::string f = benchmark::GetBenchmarkFilter();
  if (f.empty() || f == "all") return true;
  bool negate = false;
  if (f[0] == '-') {
    negate = true;
    f = f.substr(1);
  }
  try {
    const bool hit = std::regex_search(name, std::regex(f, std::regex::extended));
    return hit != negate;
  } catch (const std::regex_error&) {
    return true;  // let the library report the bad regex
  }
}

bool g_ratios = true;
bool g_timeline = true;
bool g_real_time = false;  // the ratio table's time: thread CPU time unless --fabtrace_time=real

// Forwards every run to the display reporter and keeps the per-op medians.
class Collector : public benchmark::BenchmarkReporter {
 public:
  explicit Collector(benchmark::BenchmarkReporter* inner) : inner_(inner) {}

  bool ReportContext(const Context& c) override { return inner_->ReportContext(c); }
  void Finalize() override { inner_->Finalize(); }

  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      const std::string& name = r.run_name.function_name;
      auto it = ops_per_iter().find(name);
      const double ops = it == ops_per_iter().end() ? 1.0 : it->second;
      reps_ = std::max<int64_t>(reps_, r.repetitions);
      const double t = (g_real_time ? r.GetAdjustedRealTime() : r.GetAdjustedCPUTime()) / ops;
      if (r.run_type == Run::RT_Aggregate) {
        if (r.aggregate_name == "median") median_[name] = t;
      } else {
        each_[name].push_back(t);
      }
    }
    inner_->ReportRuns(runs);
  }

  // The median over repetitions of ns per op; NaN when the benchmark did not run.
  std::map<std::string, double> medians() const {
    std::map<std::string, double> out;
    for (const auto& [name, v] : each_) {
      std::vector<double> s = v;
      std::sort(s.begin(), s.end());
      const size_t n = s.size();
      out[name] = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    }
    for (const auto& [name, m] : median_) out[name] = m;
    return out;
  }
  int64_t repetitions() const { return reps_; }

 private:
  benchmark::BenchmarkReporter* inner_;
  std::map<std::string, std::vector<double>> each_;
  std::map<std::string, double> median_;
  int64_t reps_ = 1;
};

using Medians = std::map<std::string, double>;

double get(const Medians& m, const std::string& name) {
  auto it = m.find(name);
  return it == m.end() ? NAN : it->second;
}

struct Totals {
  int pass = 0, miss = 0;
};

void print_header(const char* title, const char* base, const char* test, bool seed) {
  std::printf("\n%s\n", title);
  std::printf("%-26s %9s %9s %9s %7s", "op", base, test, "added_ns", "ratio");
  if (seed) std::printf(" %9s %10s", "seed_ns", "seed_added");
  std::printf("   %s\n", "target");
}

// One pair: base vs test; target <= 0 means none.
void print_row(const std::string& label, double base, double test, double seed, bool with_seed,
               double target, Totals* t) {
  if (std::isnan(base) && std::isnan(test)) return;
  const double added = test - base;
  std::printf("%-26s %9.2f %9.2f %9.2f %6.2fx", label.c_str(), base, test, added, test / base);
  if (with_seed) {
    if (std::isnan(seed))
      std::printf(" %9s %10s", "-", "-");
    else
      std::printf(" %9.2f %10.2f", seed, seed - base);
  }
  if (target > 0 && !std::isnan(added)) {
    const bool ok = added <= target;
    std::printf("   added<=%g %s", target, ok ? "PASS" : "MISS");
    ++(ok ? t->pass : t->miss);
  }
  std::printf("\n");
}

// One ratio target: `value` / `unit` <= `max` (nothing printed when either is unknown).
void print_ratio_target(const char* label, double value, double unit, const char* unit_name,
                        double max, Totals* t) {
  if (std::isnan(value) || std::isnan(unit) || unit <= 0) return;
  const double r = value / unit;
  const bool ok = r <= max;
  std::printf("%-34s %8.2f ns = %5.2fx %-28s target <= %.2fx %s\n", label, value, r, unit_name, max,
              ok ? "PASS" : "MISS");
  ++(ok ? t->pass : t->miss);
}

// A ratio target on a ratio already formed (the seed comparison).
void print_ratio_target(const char* label, double r, const char* unit_name, double max, Totals* t) {
  if (std::isnan(r)) return;
  const bool ok = r <= max;
  std::printf("%-34s %14.2fx %-28s target <= %.2fx %s\n", label, r, unit_name, max,
              ok ? "PASS" : "MISS");
  ++(ok ? t->pass : t->miss);
}

// The ratio targets: the added cost as ratios to what cannot be avoided (the
// clock reads the preload makes: fabtrace_now_ticks) and to the reference
// design's model, each pair measured in this one run so that a loaded
// machine moves both sides together. Per op kind, and the worst of them.
template <typename OpName>
void print_clock_ratios(const Medians& m, const OpName* ops, size_t nops, Totals* t) {
  const double clk = get(m, "BM_Clock/fabtrace_now_ticks");
  std::printf("\nratios to the unavoidable (clock read = fabtrace_now_ticks, %.2f ns)\n", clk);
  double worst = NAN, worst_seed = NAN;
  for (size_t i = 0; i < nops; ++i) {
    const std::string bm = std::string("BM_") + ops[i].bm;
    const double raw = get(m, bm + "/raw");
    const double added = get(m, bm + "/traced") - raw;
    const double seed_added = get(m, bm + "/seed") - raw;
    if (std::isnan(added)) continue;
    std::printf("  %-14s added %6.2f ns = %5.2fx two clock reads, %5.2fx the seed's added\n",
                ops[i].fi, added, added / (2 * clk), added / seed_added);
    if (std::isnan(worst) || added > worst) worst = added;
    if (!std::isnan(seed_added) && (std::isnan(worst_seed) || added / seed_added > worst_seed))
      worst_seed = added / seed_added;
  }
  print_ratio_target("timed op, worst kind", worst, 2 * clk, "two clock reads", 1.5, t);
  if (!std::isnan(worst_seed))
    print_ratio_target("timed op vs seed, worst kind", worst_seed, "the seed's added", 0.25, t);
  print_ratio_target("empty poll, gap statistics on",
                     get(m, "BM_EmptyPoll/traced") - get(m, "BM_EmptyPoll/raw"), clk,
                     "one clock read", 1.2, t);
  print_ratio_target("2 threads, one NIC, own CQs",
                     get(m, "BM_Threads2_SeparateCq/traced") - get(m, "BM_Threads2_SeparateCq/raw"),
                     get(m, "BM_Tsend/traced") - get(m, "BM_Tsend/raw"), "one thread's (fi_tsend)",
                     1.3, t);
}

void print_ratios(const Medians& m, int64_t reps, bool real_time) {
  if (m.empty()) return;
  constexpr double kOpTarget = 35, kPollTarget = 12, kTimelineTarget = 10, kLiveTarget = 1;
  struct OpName {
    const char* bm;
    const char* fi;
  };
  const OpName ops[] = {
      {"Send", "fi_send"},         {"Tsend", "fi_tsend"},       {"Trecv", "fi_trecv"},
      {"Write", "fi_write"},       {"Read", "fi_read"},         {"Sendmsg", "fi_sendmsg"},
      {"Tsendmsg", "fi_tsendmsg"}, {"Writemsg", "fi_writemsg"}, {"Readmsg", "fi_readmsg"}};
  Totals t;
  std::printf(
      "\n=== fabtrace overhead, null provider: ns per op, median of %lld repetition(s), %s "
      "===\n",
      static_cast<long long>(reps), real_time ? "real time" : "thread CPU time");
  const auto row3 = [&](const std::string& label, const std::string& bm, double target) {
    print_row(label, get(m, bm + "/raw"), get(m, bm + "/traced"), get(m, bm + "/seed"), true,
              target, &t);
  };
  print_header("issue + completion, one fi_cq_read(count 1) per op", "raw_ns", "traced_ns", true);
  for (const OpName& o : ops) row3(o.fi, std::string("BM_") + o.bm, kOpTarget);
  print_header("16 issued, then one fi_cq_read(count 16); per op", "raw_ns", "traced_ns", true);
  for (const OpName& o : ops)
    row3(std::string(o.fi) + " x16", std::string("BM_") + o.bm + "_x16", kOpTarget);
  print_header(
      "fi_tsend + poll on a FI_CQ_FORMAT_CONTEXT CQ (traced: opened in FI_CQ_FORMAT_MSG, "
      "entries copied out); translation = added here - added on the TAGGED CQ",
      "raw_ns", "traced_ns", false);
  print_row("fi_tsend, CONTEXT CQ", get(m, "BM_TsendCtxCq/raw"), get(m, "BM_TsendCtxCq/traced"),
            NAN, false, kOpTarget, &t);
  print_row("fi_tsend x16, CONTEXT CQ", get(m, "BM_TsendCtxCq_x16/raw"),
            get(m, "BM_TsendCtxCq_x16/traced"), NAN, false, kOpTarget, &t);
  {
    const double tagged1 = get(m, "BM_Tsend/traced") - get(m, "BM_Tsend/raw");
    const double ctx1 = get(m, "BM_TsendCtxCq/traced") - get(m, "BM_TsendCtxCq/raw");
    const double tagged16 = get(m, "BM_Tsend_x16/traced") - get(m, "BM_Tsend_x16/raw");
    const double ctx16 = get(m, "BM_TsendCtxCq_x16/traced") - get(m, "BM_TsendCtxCq_x16/raw");
    if (!std::isnan(ctx1) && !std::isnan(tagged1))
      std::printf("%-26s %9.2f ns per completion (1 per poll), %.2f ns (16 per poll)\n",
                  "format translation", ctx1 - tagged1, ctx16 - tagged16);
  }
  print_header("untimed and polls", "raw_ns", "traced_ns", true);
  row3("fi_inject (counted only)", "BM_Inject", 0);
  row3("empty poll fi_cq_read", "BM_EmptyPoll", kPollTarget);
  print_row("empty poll, CQGAP=0", get(m, "BM_EmptyPoll/raw"), get(m, "BM_EmptyPoll/traced_nogap"),
            NAN, true, 0, &t);
  print_row("empty poll, utility CQ", get(m, "BM_EmptyPollUtilCq/raw"),
            get(m, "BM_EmptyPollUtilCq/traced"), NAN, true, kPollTarget, &t);
  print_header(
      "2 threads, fi_tsend + poll each; ns per op (real: wall / ops, cpu: both threads' CPU / ops)",
      "raw_ns", "traced_ns", false);
  for (const char* bm :
       {"BM_Threads2_SeparateCq", "BM_Threads2_SeparateNic", "BM_Threads2_SharedCq"})
    print_row(std::string(bm + 12), get(m, std::string(bm) + "/raw"),
              get(m, std::string(bm) + "/traced"), NAN, false, kOpTarget, &t);
  print_header(
      "per-op timeline, traced fi_tsend + poll (on: FABTRACE_OPS_RANKS=all "
      "FABTRACE_OPS_MIN_BYTES=0, child process)",
      "off_ns", "on_ns", false);
  print_row("timeline append", get(m, "BM_TimelineTsend/off"), get(m, "BM_TimelineTsend/on"), NAN,
            false, kTimelineTarget, &t);
  print_row("timeline append x16", get(m, "BM_TimelineTsend_x16/off"),
            get(m, "BM_TimelineTsend_x16/on"), NAN, false, kTimelineTarget, &t);

  print_header(
      "live snapshot, traced fi_tsend + poll: publisher paused (FABTRACE_LIVE=0) vs publishing "
      "every 1 s (FABTRACE_LIVE=1, the default) and every 10 ms (100x as often)",
      "off_ns", "on_ns", false);
  print_row("live on, every 1 s", get(m, "BM_LiveTsend/off"), get(m, "BM_LiveTsend/on"), NAN, false,
            kLiveTarget, &t);
  print_row("live on, every 10 ms", get(m, "BM_LiveTsend/off"), get(m, "BM_LiveTsend/on_10ms"), NAN,
            false, 0, &t);
  const double publish = get(m, "BM_LivePublish");
  if (!std::isnan(publish))
    std::printf(
        "%-26s %9.0f ns per snapshot, on the publisher's thread (%.4f%% of a core at 1 s)\n",
        "one snapshot published", publish, publish / 1e9 * 100);

  const double rdtsc = get(m, "BM_Clock/rdtsc");
  std::printf("\nclock reads (ns per read)\n");
  for (const char* c : {"rdtsc", "clock_gettime_mono", "steady_clock", "fabtrace_now_ticks"}) {
    const double v = get(m, std::string("BM_Clock/") + c);
    if (std::isnan(v)) continue;
    std::printf("%-26s %9.2f   %.2fx rdtsc\n", c, v, v / rdtsc);
  }
  std::printf("\npreload steps (ns per call; where the added time goes)\n");
  for (const char* c :
       {"ring_claim_release", "ring_owned", "nic_add_trylock", "nic_add_serial", "my_shard",
        "probe_checks", "shard_cell", "histogram_record", "complete_ok"}) {
    const double v = get(m, std::string("BM_Step/") + c);
    if (!std::isnan(v)) std::printf("%-26s %9.2f\n", c, v);
  }
  print_clock_ratios(m, ops, sizeof(ops) / sizeof(ops[0]), &t);
  std::printf("\ntargets: %d PASS, %d MISS\n", t.pass, t.miss);
}

// ---------------------------------------------------------------------------
// Environment, the timeline child, main.

std::string g_tmp_dir;
pid_t g_tmp_owner = 0;

void remove_tmp_dir() {
  if (g_tmp_dir.empty() || getpid() != g_tmp_owner) return;
  if (DIR* d = opendir(g_tmp_dir.c_str())) {
    while (struct dirent* e = readdir(d)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      unlink((g_tmp_dir + "/" + e->d_name).c_str());
    }
    closedir(d);
  }
  rmdir(g_tmp_dir.c_str());
}

// The preload's report (written at exit) goes to a temporary directory,
// removed after it (atexit runs this after the preload's own handler, which
// is registered later), unless FABTRACE_DIR says where.
void prepare_env() {
  setenv("FABTRACE_JSON", "0", 0);
  if (std::getenv("FABTRACE_DIR")) return;
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/fabtrace-bench.XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) return;
  g_tmp_dir = buf.data();
  g_tmp_owner = getpid();
  setenv("FABTRACE_DIR", g_tmp_dir.c_str(), 1);
  std::atexit(remove_tmp_dir);
}

bool write_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// The child: waits for the parent's go, runs the timeline-on benchmarks with
// the timeline selected, sends "name<TAB>ns\n" lines back.
[[noreturn]] void run_timeline_child(int go_fd, int res_fd) {
  char c;
  if (::read(go_fd, &c, 1) != 1) _exit(0);  // the parent went away
  close(go_fd);
  setenv("FABTRACE_OPS_RANKS", "all", 1);
  setenv("FABTRACE_OPS_MIN_BYTES", "0", 1);
  unsetenv("FABTRACE_OPS_NIC");
  setenv("FABTRACE_OPS_MB", "512", 0);
  register_timeline_child();
  std::printf("\n--- per-op timeline on (child process %d) ---\n", static_cast<int>(getpid()));
  std::fflush(stdout);
  Collector col(benchmark::CreateDefaultDisplayReporter());
  benchmark::RunSpecifiedBenchmarks(&col);
  std::cout.flush();
  std::fflush(stdout);
  std::string out;
  for (const auto& [name, v] : col.medians()) out += name + "\t" + std::to_string(v) + "\n";
  write_all(res_fd, out);
  close(res_fd);
  benchmark::Shutdown();
  std::exit(0);  // the preload writes its report (and closes the oplog) at exit
}

Medians read_child(int fd) {
  std::string all;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) all.append(buf, static_cast<size_t>(n));
  Medians m;
  size_t pos = 0;
  while (pos < all.size()) {
    size_t nl = all.find('\n', pos);
    if (nl == std::string::npos) nl = all.size();
    const std::string line = all.substr(pos, nl - pos);
    pos = nl + 1;
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    m[line.substr(0, tab)] = std::strtod(line.c_str() + tab + 1, nullptr);
  }
  return m;
}

void print_help() {
  benchmark::PrintDefaultHelp();
  std::printf(
      "          [--fabtrace_ratios=0|1]   print the raw/traced ratio table (default 1)\n"
      "          [--fabtrace_timeline=0|1] run the timeline-on benchmarks in a child (default "
      "1)\n"
      "          [--fabtrace_time=cpu|real]  the ratio table's time (default cpu: the benchmark\n"
      "                                      threads' CPU time, which leaves out the time they\n"
      "                                      were descheduled on a loaded machine)\n");
}

// Takes this binary's own flags out of argv.
void parse_own_flags(int* argc, char** argv) {
  int out = 1;
  for (int i = 1; i < *argc; ++i) {
    const char* a = argv[i];
    if (std::strncmp(a, "--fabtrace_ratios=", 18) == 0) {
      g_ratios = std::atoi(a + 18) != 0;
    } else if (std::strncmp(a, "--fabtrace_timeline=", 20) == 0) {
      g_timeline = std::atoi(a + 20) != 0;
    } else if (std::strncmp(a, "--fabtrace_time=", 16) == 0) {
      g_real_time = std::strcmp(a + 16, "real") == 0;
    } else {
      argv[out++] = argv[i];
    }
  }
  *argc = out;
  argv[out] = nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  parse_own_flags(&argc, argv);
  benchmark::Initialize(&argc, argv, print_help);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  prepare_env();

  // Fork the timeline child now, before this process activates the preload.
  pid_t child = -1;
  int go_fd = -1, res_fd = -1;
  if (g_timeline && std::any_of(std::begin(kTimelineOn), std::end(kTimelineOn), filter_selects)) {
    int go[2], res[2];
    if (pipe(go) == 0 && pipe(res) == 0) {
      std::cout.flush();
      std::fflush(stdout);
      std::fflush(stderr);
      child = fork();
      if (child == 0) {
        close(go[1]);
        close(res[0]);
        run_timeline_child(go[0], res[1]);
      }
      close(go[0]);
      close(res[1]);
      go_fd = go[1];
      res_fd = res[0];
      if (child < 0) {
        close(go_fd);
        close(res_fd);
        go_fd = res_fd = -1;
      }
    }
  }

  unsetenv("FABTRACE_OPS_RANKS");
  unsetenv("FABTRACE_OPS_NIC");
  register_parent();
  Collector col(benchmark::CreateDefaultDisplayReporter());
  benchmark::RunSpecifiedBenchmarks(&col);
  std::cout.flush();
  std::fflush(stdout);

  Medians m = col.medians();
  if (child > 0) {
    write_all(go_fd, "g");
    close(go_fd);
    const Medians cm = read_child(res_fd);
    close(res_fd);
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      std::fprintf(stderr, "bench_overhead: the timeline child failed (status %d)\n", status);
    m.insert(cm.begin(), cm.end());
  }
  if (g_ratios) print_ratios(m, col.repetitions(), g_real_time);
  std::fflush(stdout);
  benchmark::Shutdown();
  return 0;
}
