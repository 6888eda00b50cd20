// Timeline::append (preload/timeline.h), driven directly: what reaches the
// oplog file for an op, the link its cell is given once, the byte floor
// (errors always pass) and the flags.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/oplog_file.h"
#include "preload/inflight.h"
#include "preload/stats.h"
#include "preload/timeline.h"
#include "tests/unit/scratch_dir.h"

namespace fabtrace {
namespace {

class TimelineAppend : public ::testing::Test {
 protected:
  void SetUp() override {
    clock_init();
    dom_.name = "nic0";
    ep_.domain = &dom_;
    ep_.type = FI_EP_RDM;
  }
  std::string path() const { return dir_.path() + "/a.oplog"; }
  void start(Timeline& t, uint64_t min_bytes) {
    TimelineConfig c;
    c.on = true;
    c.min_bytes = min_bytes;
    c.mb = 4;
    c.flush_ms = 5;
    ASSERT_TRUE(t.start(c, path(), OplogMeta{"h", "0", 1}));
  }
  // An op issued at `at` (records are not copyable: filled in place).
  OpRecord& rec(OpKind kind, uint64_t at) {
    OpRecord& r = r_;
    r.kind = kind;
    r.tid = 42;
    r.start = at;
    return r;
  }
  std::vector<oplog::OpEntry> read_ops(std::map<uint32_t, OplogLink>* links = nullptr) {
    std::vector<oplog::OpEntry> ops;
    OplogReader rd;
    std::string err;
    EXPECT_TRUE(rd.open(path(), &err)) << err;
    EXPECT_TRUE(
        rd.read_all([&](const oplog::OpEntry* e, size_t n) { ops.insert(ops.end(), e, e + n); },
                    [](const oplog::OpEntry*, size_t) {}, &err))
        << err;
    if (links) *links = rd.links();
    return ops;
  }

  test::ScratchDir dir_;
  DomainWrap dom_;
  EpWrap ep_;
  OpRecord r_;
};

TEST_F(TimelineAppend, AnOpReachesTheFileWithItsCellsLink) {
  Timeline t;
  start(t, 0);
  Shard* s = my_shard();
  Cell c;
  c.key = CellKey{&ep_, 5, 4096, OpKind::kTsend};
  EXPECT_EQ(c.link_id, Cell::kLinkUnset);
  OpRecord& r = rec(OpKind::kTsend, 100);
  t.append(s, &c, &r, 150, 4096, false);  // names the link (the slow path)
  const uint32_t link = c.link_id;
  EXPECT_LT(link, Timeline::kMaxLinks);
  rec(OpKind::kTsend, 200);
  t.append(s, &c, &r, 260, 4096, false);  // the inline path
  EXPECT_EQ(c.link_id, link);
  t.finish();
  std::map<uint32_t, OplogLink> links;
  const std::vector<oplog::OpEntry> ops = read_ops(&links);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].start_ticks, 100u);
  EXPECT_EQ(ops[0].end_ticks, 150u);
  EXPECT_EQ(ops[1].start_ticks, 200u);
  EXPECT_EQ(ops[1].end_ticks, 260u);
  for (const oplog::OpEntry& e : ops) {
    EXPECT_EQ(e.bytes, 4096u);
    EXPECT_EQ(e.link_id, link);
    EXPECT_EQ(e.tid, 42u);
    EXPECT_EQ(e.kind, static_cast<uint8_t>(OpKind::kTsend));
    EXPECT_EQ(e.error, 0);
    EXPECT_EQ(e.flags, 0);
  }
  ASSERT_EQ(links.count(link), 1u);
  EXPECT_EQ(links.at(link).local, "nic0");
}

TEST_F(TimelineAppend, BelowTheByteFloorOnlyErrorsAreKept) {
  Timeline t;
  start(t, 4096);
  Shard* s = my_shard();
  OpRecord& r = rec(OpKind::kSend, 10);
  t.append(s, nullptr, &r, 20, 4095, false);  // below: counted, not written
  EXPECT_EQ(s->timeline.filtered, 1u);
  rec(OpKind::kSend, 30);
  t.append(s, nullptr, &r, 40, 64, true);  // an error always passes
  rec(OpKind::kRecv, 50);
  t.append(s, nullptr, &r, 60, 4096, false, oplog::kOpSizeUnknown);  // at the floor
  EXPECT_EQ(s->timeline.filtered, 1u);
  t.finish();
  const std::vector<oplog::OpEntry> ops = read_ops();
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].bytes, 64u);
  EXPECT_EQ(ops[0].error, 1);
  EXPECT_EQ(ops[0].link_id, Timeline::kNoLink);  // no cell: no link
  EXPECT_EQ(ops[1].bytes, 4096u);
  EXPECT_EQ(ops[1].error, 0);
  EXPECT_EQ(ops[1].flags, oplog::kOpSizeUnknown);
  EXPECT_EQ(ops[1].kind, static_cast<uint8_t>(OpKind::kRecv));
}

TEST_F(TimelineAppend, NoShardWritesNothing) {
  Timeline t;
  start(t, 0);
  OpRecord& r = rec(OpKind::kSend, 10);
  t.append(nullptr, nullptr, &r, 20, 4096, false);
  t.finish();
  EXPECT_TRUE(read_ops().empty());
}

}  // namespace
}  // namespace fabtrace
