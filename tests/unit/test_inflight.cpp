#include "preload/inflight.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

namespace fabtrace {
namespace {

// Out of line, so the compiler does not flag the (never taken) dereference of
// foreign pointers that owned() guards against.
__attribute__((noinline)) OpRecord* probe(const InflightRing& ring, void* p) {
  return ring.owned(p);
}

TEST(InflightRing, RoundsUpAndOwnsOnlyItsBusyRecords) {
  InflightRing ring;
  ring.init(100);
  EXPECT_EQ(ring.size(), 128u);
  OpRecord* r = ring.claim();
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(probe(ring, r), r);
  // Inside the ring but not at a record boundary, outside it, or not in flight.
  EXPECT_EQ(probe(ring, reinterpret_cast<char*>(r) + 8), nullptr);
  std::vector<char> elsewhere(sizeof(OpRecord) * 2);
  EXPECT_EQ(probe(ring, elsewhere.data()), nullptr);
  EXPECT_EQ(probe(ring, nullptr), nullptr);
  EXPECT_EQ(probe(ring, ring.end()), nullptr);
  InflightRing::release(r);
  EXPECT_EQ(probe(ring, r), nullptr);
}

TEST(InflightRing, ScratchComesFirstSoProvidersWriteOnlyThere) {
  // FI_CONTEXT2 providers write 64 bytes at the context address.
  EXPECT_EQ(offsetof(OpRecord, scratch), 0u);
  EXPECT_GE(offsetof(OpRecord, busy), sizeof(struct fi_context2));
  EXPECT_EQ(sizeof(OpRecord) % 64, 0u);
}

TEST(InflightRing, FullRingRefusesAndCounts) {
  InflightRing ring;
  ring.init(64);
  std::vector<OpRecord*> held;
  for (;;) {
    OpRecord* r = ring.claim();
    if (!r) break;
    held.push_back(r);
    ASSERT_LE(held.size(), 64u);
  }
  // Probing is bounded, so a claim may fail a little before every slot is
  // taken; but nearly all are, and every refusal is counted.
  EXPECT_GE(held.size(), 60u);
  EXPECT_EQ(ring.full.load(), 1u);
  std::set<OpRecord*> distinct(held.begin(), held.end());
  EXPECT_EQ(distinct.size(), held.size());
  for (OpRecord* r : held) InflightRing::release(r);
  EXPECT_NE(ring.claim(), nullptr);
}

// Many threads claim and release at once: a record is never handed out twice.
TEST(InflightRing, ConcurrentClaimsAreExclusive) {
  InflightRing ring;
  ring.init(1024);
  std::atomic<int> violations{0};
  std::atomic<int> claims{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        OpRecord* r = ring.claim();
        if (!r) continue;
        ++claims;
        // The owner stamps the record; nobody else may hold it meanwhile.
        r->bytes = static_cast<uint64_t>(t) << 32 | static_cast<uint64_t>(i);
        std::this_thread::yield();
        if (r->bytes != (static_cast<uint64_t>(t) << 32 | static_cast<uint64_t>(i))) ++violations;
        InflightRing::release(r);
      }
    });
  }
  for (auto& th : ts) th.join();
  // 4 threads of at most one record each in a ring of 1024: every claim succeeds.
  EXPECT_EQ(claims.load(), 4 * 20000);
  EXPECT_EQ(violations.load(), 0);
}

}  // namespace
}  // namespace fabtrace
