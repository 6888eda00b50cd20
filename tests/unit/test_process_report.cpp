// build_process_report (preload/process_report.h): every thread's shard
// folded into one report: cells of one (endpoint, peer, op, size) summed
// across threads, merged by readable link, NIC totals from the non-receive
// ops of the domain's endpoints, CQs with polls, and nothing at all for a
// process that did no fabric I/O.
#include <gtest/gtest.h>

#include <initializer_list>

#include "preload/process_report.h"
#include "tests/unit/local_shard.h"

namespace fabtrace {
namespace {

// One timed op of `bytes` per entry of `lat` (ticks), into a cell of `ls`.
void ops(test::LocalShard& ls, const EpWrap* ep, fi_addr_t peer, OpKind kind, uint64_t bytes,
         std::initializer_list<uint64_t> lat) {
  Cell* c = ls.s.cell(CellKey{ep, peer, bytes, kind});
  ASSERT_NE(c, nullptr);
  for (uint64_t t : lat) {
    c->lat.record(t);
    c->ok_bytes += bytes;
  }
}

class ProcessReportTest : public ::testing::Test {
 protected:
  ProcessReportTest() {
    fabric_.prov_name = "tcp";
    other_fabric_.prov_name = "shm";
    domain_.name = "nic0";
    domain_.fabric = &fabric_;
    ep_.domain = &domain_;
    ep_.type = FI_EP_RDM;
    ep_.local_name = "10.0.0.1:7000";
    cq_.id = 2;
    in_.cal.ns_per_tick = 2.0;  // a tick is 2 ns
    in_.start_ticks = 1000;
    in_.now_ticks = 1000 + 2'000'000'000;  // four seconds later
    in_.host = "h";
    in_.rank = "3";
    in_.pid = 42;
    in_.fabrics = {&fabric_, &other_fabric_};
    in_.domains = {&domain_};
    in_.cqs = {&cq_};
  }

  FabricWrap fabric_, other_fabric_;
  DomainWrap domain_;
  EpWrap ep_;
  CqWrap cq_;
  ReportInputs in_;
};

TEST_F(ProcessReportTest, NoFabricIoNoReport) {
  test::LocalShard a;
  a.s.cq[2].polls = 5;  // polls alone are not fabric I/O
  in_.shards = {&a.s};
  ProcessReport rep;
  EXPECT_FALSE(build_process_report(in_, &rep));
}

TEST_F(ProcessReportTest, ThreadsFoldIntoOneRowPerLinkOpAndSize) {
  test::LocalShard a, b;
  ops(a, &ep_, 3, OpKind::kTsend, 4096, {100, 300});
  ops(b, &ep_, 3, OpKind::kTsend, 4096, {200});
  ops(b, &ep_, 3, OpKind::kTrecv, 64, {50});  // a receive: not in the NIC's ops
  a.s.cq[2].polls = 7;
  a.s.cq[2].max_gap = 10;
  b.s.cq[2].polls = 3;
  b.s.cq[2].max_gap = 40;
  b.s.cq[2].max_gap_end = 1000 + 1'000'000'000;  // two seconds in
  b.s.cells_full = 1;
  in_.shards = {&a.s, &b.s};
  ProcessReport rep;
  ASSERT_TRUE(build_process_report(in_, &rep));

  EXPECT_EQ(rep.host, "h");
  EXPECT_EQ(rep.rank, "3");
  EXPECT_EQ(rep.pid, 42);
  EXPECT_EQ(rep.providers, "shm,tcp");
  EXPECT_DOUBLE_EQ(rep.duration_s, 4.0);
  EXPECT_EQ(rep.cells_full, 1u);

  ASSERT_EQ(rep.links.size(), 1u);
  const LinkReport& l = rep.links[0];
  EXPECT_EQ(l.local, "10.0.0.1:7000");
  EXPECT_EQ(l.remote, "fi_addr#3");
  ASSERT_EQ(l.rows.size(), 2u);
  const OpRow* send = l.rows[0].op == std::string("fi_tsend") ? &l.rows[0] : &l.rows[1];
  const OpRow* recv = send == &l.rows[0] ? &l.rows[1] : &l.rows[0];
  EXPECT_EQ(send->count, 3u);
  EXPECT_EQ(send->bytes, 4096u);
  EXPECT_FALSE(send->recv);
  EXPECT_DOUBLE_EQ(send->avg_ns, 400.0);  // 200 ticks
  EXPECT_EQ(recv->op, "fi_trecv");
  EXPECT_TRUE(recv->recv);
  EXPECT_EQ(recv->count, 1u);

  ASSERT_EQ(rep.nics.size(), 1u);
  EXPECT_EQ(rep.nics[0].domain, "nic0");
  EXPECT_EQ(rep.nics[0].ops, 3u);
  EXPECT_EQ(rep.nics[0].bytes, 3u * 4096);
  ASSERT_EQ(rep.nics[0].locals.size(), 1u);
  EXPECT_EQ(rep.nics[0].locals[0], "10.0.0.1:7000");

  ASSERT_EQ(rep.cqs.size(), 1u);
  EXPECT_EQ(rep.cqs[0].id, 2u);
  EXPECT_EQ(rep.cqs[0].polls, 10u);
  EXPECT_DOUBLE_EQ(rep.cqs[0].max_gap_ns, 80.0);
  EXPECT_DOUBLE_EQ(rep.cqs[0].max_gap_end_s, 2.0);
}

TEST_F(ProcessReportTest, ADomainWithoutOpsAndACqWithoutPollsAreLeftOut) {
  DomainWrap idle;
  idle.name = "nic1";
  CqWrap quiet;
  quiet.id = 5;
  CqWrap unnumbered;
  unnumbered.id = kNoCq;
  in_.domains = {&idle, &domain_};
  in_.cqs = {&quiet, &unnumbered, &cq_};
  test::LocalShard a;
  ops(a, &ep_, 3, OpKind::kSend, 8, {10});
  a.s.cq[2].polls = 1;
  in_.shards = {&a.s};
  ProcessReport rep;
  ASSERT_TRUE(build_process_report(in_, &rep));
  ASSERT_EQ(rep.nics.size(), 1u);
  EXPECT_EQ(rep.nics[0].domain, "nic0");
  ASSERT_EQ(rep.cqs.size(), 1u);
  EXPECT_EQ(rep.cqs[0].id, 2u);
}

}  // namespace
}  // namespace fabtrace
