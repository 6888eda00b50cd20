// The per-thread statistics shard (preload/stats.h): one cell per (link, op,
// size), the cell limit, the reset of a forked child, and the limit a new
// thread's shard is given.
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>
#include <vector>

#include "preload/stats.h"
#include "tests/unit/local_shard.h"

namespace fabtrace {
namespace {

using test::LocalShard;

const EpWrap* fake_ep(uintptr_t n) { return reinterpret_cast<const EpWrap*>(n * 64); }

TEST(Shard, OneCellPerLinkOpAndSize) {
  LocalShard ls;
  Shard& s = ls.s;
  const CellKey a{fake_ep(1), 3, 4096, OpKind::kSend};
  Cell* ca = s.cell(a);
  ASSERT_NE(ca, nullptr);
  EXPECT_EQ(ca->key, a);
  EXPECT_EQ(s.cell(a), ca);  // found again (the last one used)
  // Every part of the key makes another cell.
  const CellKey others[] = {
      {fake_ep(2), 3, 4096, OpKind::kSend},       {fake_ep(1), 4, 4096, OpKind::kSend},
      {fake_ep(1), 3, 8192, OpKind::kSend},       {fake_ep(1), 3, 4096, OpKind::kTsend},
      {fake_ep(1), 3, 4096, OpKind::kSend, true},
  };
  for (const CellKey& k : others) {
    Cell* c = s.cell(k);
    ASSERT_NE(c, nullptr);
    EXPECT_NE(c, ca);
    EXPECT_EQ(c->key, k);
  }
  EXPECT_EQ(s.used, 6u);
  EXPECT_EQ(s.cell(a), ca);  // found again, not the last one used
  EXPECT_EQ(s.used, 6u);
  EXPECT_EQ(s.cells_full, 0u);
}

TEST(Shard, PastTheLimitOpsAreCountedNotAggregated) {
  LocalShard ls;
  Shard& s = ls.s;
  s.max_cells = 20;  // a limit that is not a growth point of the table
  std::vector<Cell*> made;
  for (uint64_t b = 0; b < 20; ++b)
    made.push_back(s.cell(CellKey{fake_ep(1), 0, b, OpKind::kSend}));
  for (Cell* c : made) ASSERT_NE(c, nullptr);
  for (uint64_t b = 20; b < 40; ++b)
    EXPECT_EQ(s.cell(CellKey{fake_ep(1), 0, b, OpKind::kSend}), nullptr) << b;
  EXPECT_EQ(s.used, 20u);
  EXPECT_EQ(s.cells_full, 20u);
  // Full, the shard still finds every cell it has, not only the last one used.
  for (uint64_t b = 0; b < 20; ++b)
    EXPECT_EQ(s.cell(CellKey{fake_ep(1), 0, b, OpKind::kSend}), made[b]) << b;
  EXPECT_EQ(s.cells_full, 20u);
}

TEST(Shard, ResetEmptiesTheBooksAndKeepsTheKeys) {
  LocalShard ls;
  Shard& s = ls.s;
  const CellKey k{fake_ep(1), 7, 64, OpKind::kWrite};
  Cell* c = s.cell(k);
  ASSERT_NE(c, nullptr);
  c->lat.record(100);
  c->ok_bytes = 64;
  c->errors = c->eagain = c->refused = c->untimed = c->ring_full = c->unfinished = 1;
  c->within_50us = 1;
  s.cells_full = 3;
  s.cq[0].polls = 5;
  s.cq[0].gaps[2] = 1;
  s.timeline.dropped = s.timeline.filtered = 2;
  s.reset();
  EXPECT_EQ(s.cell(k), c);
  EXPECT_EQ(c->key, k);
  EXPECT_EQ(c->lat.count(), 0u);
  EXPECT_EQ(c->ok_bytes + c->errors + c->eagain + c->refused + c->untimed + c->ring_full +
                c->unfinished + c->within_50us,
            0u);
  EXPECT_EQ(s.cells_full, 0u);
  EXPECT_EQ(s.cq[0].polls, 0u);
  EXPECT_EQ(s.cq[0].gaps[2], 0u);
  EXPECT_EQ(s.timeline.chunk.load(), nullptr);
  EXPECT_EQ(s.timeline.dropped + s.timeline.filtered, 0u);
  EXPECT_EQ(s.used, 1u);
}

// A NIC past the thread's kMaxNics has no thread ring: its intervals go to
// the NIC's shared ring, or its totals while another thread holds that.
TEST(Shard, ANicPastTheThreadsTableIsCountedEvenWhileHeld) {
  LocalShard ls;
  DomainWrap d;
  d.id = kMaxNics;
  d.nic.lock.store(1);
  nic_interval(&ls.s, &d, 10, 40, 100);
  EXPECT_EQ(d.nic.busy_ticks(), 30u);
  d.nic.lock.store(0);
  nic_interval(&ls.s, &d, 50, 60, 1);
  EXPECT_EQ(d.nic.busy_ticks(), 40u);
  EXPECT_EQ(d.nic.shared_ring.n, 1u);
}

TEST(Shard, ANewThreadsShardTakesTheConfiguredLimit) {
  set_shard_max_cells(1234);
  Shard* mine = nullptr;
  std::thread([&mine] { mine = my_shard(); }).join();
  set_shard_max_cells(Shard::kDefaultMaxCells);
  ASSERT_NE(mine, nullptr);
  EXPECT_EQ(mine->max_cells, 1234u);
  // On the list of all shards, which the report walks.
  bool listed = false;
  for (Shard* s = all_shards(); s; s = s->next) listed = listed || s == mine;
  EXPECT_TRUE(listed);
}

}  // namespace
}  // namespace fabtrace
