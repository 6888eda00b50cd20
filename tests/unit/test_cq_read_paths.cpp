// The four CQ read shims (fi_cq_read, fi_cq_readfrom, fi_cq_sread,
// fi_cq_sreadfrom) are one poll each, with the same rules: with the gap
// statistics on, every poll (empty or not) is counted once and stamps the
// CQ's latest poll; with them off (FABTRACE_CQGAP=0) none is counted or
// stamped; either way every completion returned is timed and handed back
// with the application's context. They once drifted apart (the blocking
// reads stamped and read the clock where the others did not), so each
// expectation below runs on every read, on a plain CQ and on one whose
// fi_cq_read and fi_cq_sread call fi_cq_readfrom through the op table, as
// libfabric's utility CQ does.
//
// Driven through the null provider of the overhead benchmarks
// (bench/null_provider.h), wrapped the way the preload wraps an application's
// objects.
#include <gtest/gtest.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <cstdlib>
#include <string>

#include "bench/null_provider.h"
#include "common/clock.h"
#include "preload/activate.h"
#include "preload/objects.h"
#include "preload/runtime.h"
#include "preload/stats.h"

namespace fabtrace {
namespace {

enum class Read { kRead, kReadfrom, kSread, kSreadfrom };

struct ReadCase {
  Read read;
  bool util;  // the CQ reads through its own op table (kNullUtilCq)
};

void PrintTo(const ReadCase& c, std::ostream* os) {
  static const char* const names[] = {"read", "readfrom", "sread", "sreadfrom"};
  *os << names[static_cast<int>(c.read)] << (c.util ? " util" : "");
}

std::string case_name(const ::testing::TestParamInfo<ReadCase>& info) {
  static const char* const names[] = {"Read", "Readfrom", "Sread", "Sreadfrom"};
  return std::string(names[static_cast<int>(info.param.read)]) + (info.param.util ? "Util" : "");
}

// One wrapped endpoint bound to one wrapped CQ (per process: the runtime's
// activation is once per process).
struct Objects {
  struct fid_ep* ep = nullptr;
  struct fid_cq* cq = nullptr;
};

Objects open_objects(bool util) {
  static bool activated = [] {
    // The report written at exit goes to stderr: no files left behind.
    setenv("FABTRACE_DIR", "stderr", 1);
    if (!runtime_configure()) return false;
    runtime_activate();
    return true;
  }();
  static struct fid_domain* dom = [] {
    struct fid_fabric* fab = nullptr;
    struct fid_domain* d = nullptr;
    if (fabtrace_bench::null_fabric_open(&fab) != 0 || !wrap_fabric(fab, "null")) return d;
    if (fi_domain(fab, fabtrace_bench::null_info(FI_THREAD_COMPLETION), &d, nullptr) != 0)
      d = nullptr;
    return d;
  }();
  Objects o;
  if (!activated || !dom) return o;
  struct fi_cq_attr attr = {};
  attr.format = FI_CQ_FORMAT_TAGGED;
  attr.flags = util ? fabtrace_bench::kNullUtilCq : 0;
  if (fi_cq_open(dom, &attr, &o.cq, nullptr) != 0) return Objects{};
  if (fi_endpoint(dom, fabtrace_bench::null_info(FI_THREAD_COMPLETION), &o.ep, nullptr) != 0 ||
      fi_ep_bind(o.ep, &o.cq->fid, FI_TRANSMIT | FI_RECV) != 0 || fi_enable(o.ep) != 0)
    return Objects{};
  return o;
}

ssize_t read_cq(Read r, struct fid_cq* cq, struct fi_cq_tagged_entry* e, size_t n) {
  fi_addr_t src[4];
  switch (r) {
    case Read::kRead:
      return fi_cq_read(cq, e, n);
    case Read::kReadfrom:
      return fi_cq_readfrom(cq, e, n, src);
    case Read::kSread:
      return fi_cq_sread(cq, e, n, nullptr, 0);
    case Read::kSreadfrom:
      return fi_cq_sreadfrom(cq, e, n, src, nullptr, 0);
  }
  return -FI_EINVAL;
}

// Bytes of the successful completions filed, over every thread's shard (only
// the test's thread polls). Walked from all_shards(), not read through
// my_shard(): UBSan takes the test's own read of the initial-exec t_shard for
// a null load.
uint64_t ok_bytes() {
  uint64_t b = 0;
  for (const Shard* s = all_shards(); s; s = s->next)
    for (uint64_t i = 0; i < s->cap; ++i)
      if (s->slots[i]) b += s->slots[i]->ok_bytes;
  return b;
}

// Polls of CQ `id` counted, over every thread's shard.
uint64_t polls_of(uint32_t id) {
  uint64_t n = 0;
  for (const Shard* s = all_shards(); s; s = s->next) n += s->cq[id].polls;
  return n;
}

class CqReadPaths : public ::testing::TestWithParam<ReadCase> {
 protected:
  void SetUp() override {
    o_ = open_objects(GetParam().util);
    if (!o_.cq) GTEST_SKIP() << "the null provider's objects could not be opened and wrapped";
    w_ = cq_wrap_of(&o_.cq->fid);
    ASSERT_NE(w_, nullptr);
    ASSERT_NE(w_->id, kNoCq);
    saved_gap_ = runtime().cfg.cqgap;
  }
  void TearDown() override { runtime().cfg.cqgap = saved_gap_; }

  uint64_t polls() const { return polls_of(w_->id); }
  uint64_t last_poll() const { return w_->last_poll.load(); }
  ssize_t read(struct fi_cq_tagged_entry* e, size_t n) const {
    return read_cq(GetParam().read, o_.cq, e, n);
  }

  // One fi_tsend of `len` bytes, then one read that returns its completion.
  void send_and_read(size_t len) {
    static char buf[4096];
    int ctx = 0;
    ASSERT_EQ(fi_tsend(o_.ep, buf, len, nullptr, 0, 7, &ctx), 0);
    ASSERT_NE(fabtrace_bench::null_ep_last_context(o_.ep), &ctx) << "the send was not timed";
    struct fi_cq_tagged_entry e[4];
    ASSERT_EQ(read(e, 4), 1);
    EXPECT_EQ(e[0].op_context, &ctx) << "the application's context was not handed back";
    EXPECT_EQ(e[0].len, len);
  }

  Objects o_;
  CqWrap* w_ = nullptr;
  bool saved_gap_ = true;
};

TEST_P(CqReadPaths, WithGapsEveryPollIsCountedOnceAndStamped) {
  runtime().cfg.cqgap = true;
  struct fi_cq_tagged_entry e[4];
  const uint64_t p0 = polls();
  EXPECT_EQ(read(e, 4), -FI_EAGAIN);
  EXPECT_EQ(polls(), p0 + 1) << "an empty poll";
  const uint64_t stamp = last_poll();
  EXPECT_NE(stamp, 0u);
  const uint64_t b0 = ok_bytes();
  send_and_read(100);
  EXPECT_EQ(polls(), p0 + 2) << "a poll that returned a completion";
  EXPECT_GE(last_poll(), stamp);
  EXPECT_EQ(ok_bytes(), b0 + 100);
}

TEST_P(CqReadPaths, WithGapsOffNoPollIsCountedOrStampedAndCompletionsAreTimed) {
  runtime().cfg.cqgap = false;
  struct fi_cq_tagged_entry e[4];
  const uint64_t p0 = polls();
  const uint64_t stamp = last_poll();
  EXPECT_EQ(read(e, 4), -FI_EAGAIN);
  const uint64_t b0 = ok_bytes();
  send_and_read(200);
  EXPECT_EQ(polls(), p0);
  EXPECT_EQ(last_poll(), stamp);
  EXPECT_EQ(ok_bytes(), b0 + 200);
}

// The gap classes: a poll's gap goes to exactly one class, whichever path
// (the common first-class case inline, the rest out of line) counts it, and
// the longest gap is kept. The gaps are planted by setting the CQ's previous
// poll to a time the test chose, so the expected class is the test's own; a
// step during which the thread was held up long enough to move its gap to
// another class (a loaded machine) is taken again.
TEST_P(CqReadPaths, EachGapIsCountedInItsClassAndTheLongestIsKept) {
  runtime().cfg.cqgap = true;
  const Runtime& rt = runtime();
  const uint64_t e0 = rt.gap_edges[0], e1 = rt.gap_edges[1];
  ASSERT_GT(e0, 0u);
  struct fi_cq_tagged_entry e[4];
  const auto gaps = [&] {
    PollStats sum;
    for (const Shard* s = all_shards(); s; s = s->next) {
      const PollStats& p = s->cq[w_->id];
      for (int k = 0; k < PollStats::kClasses; ++k) sum.gaps[k] += p.gaps[k];
      if (p.max_gap > sum.max_gap) sum.max_gap = p.max_gap;
    }
    return sum;
  };
  // One poll after a planted previous poll `ago` ticks back (0: none before);
  // `slack` is how much longer than planted the gap may be and stay in its
  // class. Returns the counts and the longest gap after it.
  const auto poll_after = [&](uint64_t ago, uint64_t slack, PollStats* before) {
    for (int attempt = 0; attempt < 50; ++attempt) {
      *before = gaps();
      const uint64_t t0 = now_ticks();
      w_->last_poll.store(ago ? t0 - ago : 0);
      EXPECT_EQ(read(e, 4), -FI_EAGAIN);
      if (now_ticks() - t0 < slack) break;
    }
    return gaps();
  };
  PollStats b;
  PollStats g = poll_after(0, UINT64_MAX, &b);  // no previous poll: no gap
  for (int k = 0; k < PollStats::kClasses; ++k) EXPECT_EQ(g.gaps[k], b.gaps[k]) << k;
  // A gap in the second class, longer than any before it on this CQ here.
  const uint64_t long_gap = e0 + (e1 - e0) / 2;
  g = poll_after(long_gap, (e1 - e0) / 2, &b);
  EXPECT_EQ(g.gaps[1], b.gaps[1] + 1);
  for (int k = 0; k < PollStats::kClasses; ++k) {
    if (k != 1) {
      EXPECT_EQ(g.gaps[k], b.gaps[k]) << k;
    }
  }
  EXPECT_GE(g.max_gap, long_gap);
  // First-class gaps, shorter than the longest: counted in class 0 (the
  // inline path), the longest unchanged.
  for (const uint64_t ago : {e0 / 4, e0 / 8}) {
    g = poll_after(ago, e0 / 2, &b);
    EXPECT_EQ(g.gaps[0], b.gaps[0] + 1) << ago;
    for (int k = 1; k < PollStats::kClasses; ++k) EXPECT_EQ(g.gaps[k], b.gaps[k]) << k;
    EXPECT_EQ(g.max_gap, b.max_gap);
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllFour, CqReadPaths,
    ::testing::Values(ReadCase{Read::kRead, false}, ReadCase{Read::kReadfrom, false},
                      ReadCase{Read::kSread, false}, ReadCase{Read::kSreadfrom, false},
                      ReadCase{Read::kRead, true}, ReadCase{Read::kReadfrom, true},
                      ReadCase{Read::kSread, true}, ReadCase{Read::kSreadfrom, true}),
    case_name);

}  // namespace
}  // namespace fabtrace
