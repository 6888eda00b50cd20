// complete_ok (preload/completion.h), driven directly: where a successful
// completion is filed, what it adds to its cell, and when it adds the NIC's
// busy interval itself or leaves it to the caller's batch.
#include <gtest/gtest.h>

#include <cstdlib>

#include "preload/completion.h"

namespace fabtrace {
namespace {

class CompleteOk : public ::testing::Test {
 protected:
  void SetUp() override {
    dom_.id = 2;
    other_.id = 3;
    ep_.domain = &dom_;
    saved_50us_ = runtime().within_50us_ticks;
    runtime().within_50us_ticks = 1000;
  }
  void TearDown() override {
    runtime().within_50us_ticks = saved_50us_;
    for (uint64_t i = 0; i < s_.cap; ++i) delete s_.slots[i];
    std::free(s_.slots);
  }
  // An op of ep_ issued at `start` (records are not copyable: filled in place).
  OpRecord& rec(OpKind kind, fi_addr_t peer, uint64_t bytes, uint64_t start) {
    OpRecord& r = r_;
    r.kind = kind;
    r.ep = &ep_;
    r.peer = peer;
    r.bytes = bytes;
    r.start = start;
    return r;
  }
  Cell* find(fi_addr_t peer, uint64_t bytes, OpKind kind, bool size_unknown = false) {
    for (uint64_t i = 0; i < s_.cap; ++i)
      if (Cell* c = s_.slots[i])
        if (c->key == CellKey{&ep_, peer, bytes, kind, size_unknown}) return c;
    return nullptr;
  }

  DomainWrap dom_, other_;
  EpWrap ep_;
  Shard s_;
  OpRecord r_;
  uint64_t saved_50us_ = 0;
};

TEST_F(CompleteOk, ASendIsTimedAndItsNicIntervalAdded) {
  OpRecord& r = rec(OpKind::kSend, 5, 4096, 1000);
  EXPECT_FALSE(complete_ok(&s_, &r, 1700, kLenUnknown, FI_ADDR_NOTAVAIL, nullptr, nullptr));
  Cell* c = find(5, 4096, OpKind::kSend);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->lat.count(), 1u);
  EXPECT_EQ(c->lat.sum(), 700u);
  EXPECT_EQ(c->ok_bytes, 4096u);
  EXPECT_EQ(c->within_50us, 0u);  // counted for receives only
  const NicLocal& l = s_.nic[dom_.id];
  EXPECT_EQ(l.nic, &dom_.nic);
  ASSERT_EQ(l.w.n, 1u);
  BusyPeriodRing<NicLocal::kLocal> w = l.w;
  EXPECT_EQ(w.s(0), 1000u);
  EXPECT_EQ(w.e(0), 1700u);
  EXPECT_EQ(w.b(0), 4096u);
}

TEST_F(CompleteOk, AnOpOfTheBatchedNicLeavesItsIntervalToTheCaller) {
  OpRecord& r = rec(OpKind::kWrite, 5, 64, 10);
  EXPECT_TRUE(complete_ok(&s_, &r, 20, kLenUnknown, FI_ADDR_NOTAVAIL, &dom_, nullptr));
  EXPECT_EQ(s_.nic[dom_.id].w.n, 0u);
  ASSERT_NE(find(5, 64, OpKind::kWrite), nullptr);
  // Another NIC's batch: this op adds its own.
  rec(OpKind::kWrite, 5, 64, 30);
  EXPECT_FALSE(complete_ok(&s_, &r, 40, kLenUnknown, FI_ADDR_NOTAVAIL, &other_, nullptr));
  EXPECT_EQ(s_.nic[dom_.id].w.n, 1u);
  EXPECT_EQ(find(5, 64, OpKind::kWrite)->lat.count(), 2u);
}

TEST_F(CompleteOk, AReceiveIsFiledUnderWhatArrivedAndFromWhom) {
  OpRecord& r = rec(OpKind::kTrecv, FI_ADDR_UNSPEC, 65536, 100);
  EXPECT_FALSE(complete_ok(&s_, &r, 600, 512, /*src=*/9, &dom_, nullptr));
  Cell* c = find(9, 512, OpKind::kTrecv);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->ok_bytes, 512u);
  EXPECT_EQ(c->within_50us, 1u);       // 500 ticks, under the 1000 of this test
  EXPECT_EQ(s_.nic[dom_.id].w.n, 0u);  // receives are not NIC busy time
  // Zero bytes is a size too; a late one is not within 50 us.
  rec(OpKind::kTrecv, FI_ADDR_UNSPEC, 65536, 100);
  complete_ok(&s_, &r, 5000, 0, FI_ADDR_NOTAVAIL, nullptr, nullptr);
  c = find(FI_ADDR_UNSPEC, 0, OpKind::kTrecv);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->within_50us, 0u);
  // A receive posted for one peer stays filed under it.
  rec(OpKind::kRecv, 4, 128, 0);
  complete_ok(&s_, &r, 10, 128, /*src=*/9, nullptr, nullptr);
  EXPECT_NE(find(4, 128, OpKind::kRecv), nullptr);
}

TEST_F(CompleteOk, AReceiveWithoutALengthStaysUnderItsPostedSize) {
  OpRecord& r = rec(OpKind::kRecv, FI_ADDR_UNSPEC, 8192, 0);
  complete_ok(&s_, &r, 10, kLenUnknown, FI_ADDR_NOTAVAIL, nullptr, nullptr);
  EXPECT_EQ(find(FI_ADDR_UNSPEC, 8192, OpKind::kRecv), nullptr);
  Cell* c = find(FI_ADDR_UNSPEC, 8192, OpKind::kRecv, /*size_unknown=*/true);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->ok_bytes, 8192u);
}

TEST_F(CompleteOk, NoShardIsHarmless) {
  OpRecord& r = rec(OpKind::kSend, 5, 4096, 1000);
  EXPECT_FALSE(complete_ok(nullptr, &r, 1700, kLenUnknown, FI_ADDR_NOTAVAIL, nullptr, nullptr));
  EXPECT_TRUE(complete_ok(nullptr, &r, 1700, kLenUnknown, FI_ADDR_NOTAVAIL, &dom_, nullptr));
}

}  // namespace
}  // namespace fabtrace
