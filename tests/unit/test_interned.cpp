// Interned names (userspace/report/job/interned.h): one copy per value, whoever
// asks and from whichever thread, so that rows may compare and group them by
// address.
#include "userspace/report/job/interned.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "userspace/report/job/job.h"

namespace fabtrace::report {
namespace {

TEST(Interned, OneCopyPerValue) {
  const std::string a = "fi_sockaddr_in://10.0.0.1:4000";
  const Interned x = intern(a), y = intern(std::string("fi_sockaddr_in://10.0.0.1:") + "4000");
  EXPECT_EQ(x, y);
  EXPECT_EQ(&x.str(), &y.str());
  EXPECT_EQ(x.str(), a);
  EXPECT_NE(intern(a + "1"), x);
  EXPECT_EQ(Interned().str(), "");
  EXPECT_EQ(Interned(), intern(""));
}

TEST(Interned, OwnersAreOneValue) {
  const RowOwner& a = intern_owner("node1", "3", 77);
  EXPECT_EQ(&a, &intern_owner(std::string("node") + "1", "3", 77));
  EXPECT_NE(&a, &intern_owner("node1", "3", 78));
  EXPECT_NE(&a, &intern_owner("node1", "4", 77));
  EXPECT_EQ(a.host, "node1");
  EXPECT_EQ(a.rank, "3");
  EXPECT_EQ(a.pid, 77);
  EXPECT_EQ(no_owner().host, "");
}

TEST(Interned, ThreadsGetTheSameCopies) {
  constexpr int kThreads = 4, kValues = 2000;
  // got[t][v]: what thread t got for value v (threads ask in different orders).
  std::vector<std::vector<const std::string*>> got(kThreads,
                                                   std::vector<const std::string*>(kValues));
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t)
    pool.emplace_back([t, &got] {
      for (int i = 0; i < kValues; ++i) {
        const int v = t % 2 ? kValues - 1 - i : i;
        got[t][v] = &intern("thread-test-" + std::to_string(v)).str();
      }
    });
  for (std::thread& th : pool) th.join();
  for (int v = 0; v < kValues; ++v) {
    EXPECT_EQ(*got[0][v], "thread-test-" + std::to_string(v));
    for (int t = 1; t < kThreads; ++t) EXPECT_EQ(got[t][v], got[0][v]) << t << " " << v;
  }
}

TEST(Interned, LinkRowsReadTheirNamesBack) {
  LinkRow l;
  EXPECT_EQ(l.host(), "");
  EXPECT_EQ(l.op(), "");
  EXPECT_EQ(l.posted().unknown(), "");
  l.set_owner("node2", "NA", 4242);
  l.set_link("a", "b");
  l.set_op("fi_tsend");
  l.set_posted_unknown("not matched");
  EXPECT_EQ(l.host(), "node2");
  EXPECT_EQ(l.rank(), "NA");
  EXPECT_EQ(l.pid(), 4242);
  EXPECT_EQ(l.local(), "a");
  EXPECT_EQ(l.remote(), "b");
  EXPECT_EQ(l.op(), "fi_tsend");
  EXPECT_EQ(l.posted().unknown(), "not matched");
  // A job holds 4M of these: 464 bytes and 64 more of heap before the names
  // were interned, 232 before the receive evidence and kernel counts were
  // held apart (docs/performance.md, "`fabtrace report` at scale").
  EXPECT_LE(sizeof(LinkRow), 176u);
}

// What few rows have is held apart (LinkExtra): copies, moves and the
// shared reasons read back as the fields they replace.
TEST(Interned, LinkRowExtrasReadBackThroughCopiesAndMoves) {
  LinkRow a;
  EXPECT_FALSE(a.kernel_logged());
  EXPECT_EQ(a.retrans(), 0u);
  a.set_posted_not_read();
  EXPECT_EQ(a.posted().unknown(), kPostedNotRead);
  a.set_kernel(true, 0, 0);  // logged, nothing counted: still nothing of its own
  EXPECT_TRUE(a.kernel_logged());
  EXPECT_EQ(a.posted().unknown(), kPostedNotRead);
  LinkRow b = a;
  b.posted_mut().matched = 3;  // b's own now; a keeps the shared reason
  EXPECT_EQ(a.posted().matched, 0u);
  EXPECT_EQ(b.posted().matched, 3u);
  EXPECT_EQ(b.posted().unknown(), kPostedNotRead);
  EXPECT_TRUE(b.kernel_logged());
  b.set_kernel(false, 7, 8);
  LinkRow c = b;  // a deep copy
  b.posted_mut().late = 2;
  EXPECT_EQ(c.posted().late, 0u);
  EXPECT_EQ(c.retrans(), 7u);
  EXPECT_EQ(c.drops(), 8u);
  EXPECT_FALSE(c.kernel_logged());
  LinkRow d = std::move(c);
  EXPECT_EQ(d.posted().matched, 3u);
  EXPECT_EQ(d.retrans(), 7u);
  d.set_posted_unknown(kPostedNoTimeline);  // d owns its part: the reason is set there
  EXPECT_EQ(d.posted().unknown(), kPostedNoTimeline);
  EXPECT_EQ(d.posted().matched, 3u);
  d.clear_posted();
  EXPECT_EQ(d.posted().unknown(), "");
  EXPECT_EQ(d.posted().matched, 0u);
  EXPECT_EQ(d.drops(), 8u);
  a = d;
  EXPECT_EQ(a.drops(), 8u);
  EXPECT_FALSE(a.kernel_logged());
  std::vector<LinkRow> v(3, a);
  v.reserve(100);  // moved on growth
  for (const LinkRow& r : v) EXPECT_EQ(r.drops(), 8u);
}

}  // namespace
}  // namespace fabtrace::report
