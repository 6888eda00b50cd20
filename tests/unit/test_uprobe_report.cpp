// uprobe_process_report: a process's kernel rows as the preload's per-rank
// report (one link per endpoint and peer, one row per op kind and size class),
// written and read back through the report's own JSON writer and reader.
#include "userspace/record/uprobes/uprobe_report.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fabric.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "bpf/uprobe_ops.h"
#include "common/op_kinds.h"
#include "common/report_writer.h"
#include "userspace/report/job/report_reader.h"

namespace fabtrace {
namespace {

constexpr uint64_t kEp = 0x5000, kPeer = 3;

UprobeRow row(uint32_t pid, OpKind op, uint64_t completions, uint64_t bytes_each,
              uint64_t peer = kPeer) {
  UprobeRow r;
  r.pid = pid;
  r.op = static_cast<uint32_t>(op);
  r.ep = kEp;
  r.peer = peer;
  r.size_class = ft_up_size_class(bytes_each);
  r.s.calls = completions + 3;
  r.s.refused = 3;
  r.s.eagain = 3;
  r.s.completions = completions;
  r.s.bytes = completions * bytes_each;
  r.s.lat_sum_ns = completions * 10000;
  r.s.lat_min_ns = 5000;
  r.s.lat_max_ns = 40000;
  r.s.hist[13] = completions;  // 8192..16383 ns
  return r;
}

// An endpoint named by its getname (a sockaddr_in), its AV and one peer in it.
UprobeNames names_of(uint32_t pid) {
  UprobeNames n;
  sockaddr_in me{}, peer{};
  me.sin_family = peer.sin_family = AF_INET;
  me.sin_port = htons(5000);
  peer.sin_port = htons(6000);
  inet_pton(AF_INET, "10.0.0.1", &me.sin_addr);
  inet_pton(AF_INET, "10.0.0.2", &peer.sin_addr);
  n.ep_names[{pid, kEp}] = {std::string(reinterpret_cast<const char*>(&me), sizeof(me)),
                            FI_SOCKADDR_IN};
  n.ep_av[{pid, kEp}] = 0xa0;
  n.av_addrs[{pid, 0xa0, kPeer}] = {std::string(reinterpret_cast<const char*>(&peer), sizeof(peer)),
                                    FI_SOCKADDR_IN};
  return n;
}

TEST(UprobeReport, OneLinkOneRowPerOpKindOfThatProcess) {
  std::vector<UprobeRow> rows = {row(7, OpKind::kTsend, 300, 4096),
                                 row(7, OpKind::kTrecv, 301, 4096), row(8, OpKind::kSend, 5, 64)};
  UprobeRow polls;
  polls.pid = 7;
  polls.op = FT_UP_OP_POLLS;
  polls.s.calls = 9000;
  rows.push_back(polls);
  rows[1].pending = 1;
  rows[1].pending_bytes = 4096;
  rows[1].posted = true;  // its CQ has no length (FI_CQ_FORMAT_CONTEXT): sized as posted
  UprobeReportContext ctx;
  ctx.host = "h";
  ctx.start_mono_ns = 1000;
  ctx.start_wall_ns = 2000;
  ctx.duration_s = 2.5;
  const ProcessReport r = uprobe_process_report(7, rows, names_of(7), ctx);
  EXPECT_EQ(r.source, "uprobes");
  EXPECT_EQ(r.rank, "NA");
  EXPECT_EQ(r.pid, 7);
  ASSERT_EQ(r.links.size(), 1u);
  EXPECT_EQ(r.links[0].local, "fi_sockaddr_in://10.0.0.1:5000");
  EXPECT_EQ(r.links[0].remote, "fi_sockaddr_in://10.0.0.2:6000");
  ASSERT_EQ(r.links[0].rows.size(), 2u);  // not the polls row, not pid 8
  const OpRow& s = r.links[0].rows[0];
  EXPECT_EQ(s.op, "fi_tsend");
  EXPECT_EQ(s.count, 300u);
  EXPECT_EQ(s.bytes, 4096u);
  EXPECT_EQ(s.eagain, 3u);
  EXPECT_DOUBLE_EQ(s.avg_ns, 10000.0);
  EXPECT_DOUBLE_EQ(s.p50_ns, 16384.0);
  EXPECT_FALSE(s.recv);
  const OpRow& v = r.links[0].rows[1];
  EXPECT_TRUE(v.recv && v.size_unknown);
  EXPECT_EQ(v.unfinished, 1u);
  EXPECT_DOUBLE_EQ(v.gbps, 0.0);
  // No op row: no link.
  EXPECT_TRUE(uprobe_process_report(9, rows, names_of(9), ctx).links.empty());

  // The report's own writer and reader carry it, source included.
  char* text = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&text, &size);
  ASSERT_NE(f, nullptr);
  write_report_json(f, r);
  std::fclose(f);
  const std::string json(text, size);
  std::free(text);
  ProcessReport back;
  std::string err;
  ASSERT_TRUE(report::parse_process_report(json, &back, &err)) << err;
  EXPECT_EQ(back.source, "uprobes");
  ASSERT_EQ(back.links.size(), 1u);
  EXPECT_EQ(back.links[0].local, "fi_sockaddr_in://10.0.0.1:5000");
  EXPECT_EQ(back.links[0].rows[0].count, 300u);
  EXPECT_EQ(back.links[0].rows[1].count, 301u);
}

// One endpoint sending to two peers and receiving from any: three links, each
// with its own rows; two fi_addr_t values inserted with the same address are
// one link (the preload names links by their labels), their rows summed; an
// endpoint and a peer the session did not see named keep fallback labels.
TEST(UprobeReport, OneLinkPerEndpointAndPeer) {
  UprobeNames n = names_of(7);
  n.av_addrs[{7, 0xa0, 4}] = n.av_addrs[{7, 0xa0, kPeer}];  // the same address again
  std::vector<UprobeRow> rows = {row(7, OpKind::kTsend, 10, 64), row(7, OpKind::kTsend, 20, 64, 4),
                                 row(7, OpKind::kTsend, 5, 64, 9),
                                 row(7, OpKind::kTrecv, 35, 64, FT_UP_ADDR_UNSPEC),
                                 row(7, OpKind::kTrecv, 1, 64, kPeer)};
  rows.back().ep = 0x6000;  // an endpoint named before the session
  rows[2].pending = 2;
  rows[2].pending_bytes = 2 * 64;
  const ProcessReport r = uprobe_process_report(7, rows, n, UprobeReportContext{});
  // The row of `op` on the link named (local, remote); NULL when there is none.
  auto at = [&r](const std::string& local, const std::string& remote,
                 const std::string& op) -> const OpRow* {
    for (const LinkReport& l : r.links)
      if (l.local == local && l.remote == remote)
        for (const OpRow& o : l.rows)
          if (o.op == op) return &o;
    return nullptr;
  };
  const std::string me = "fi_sockaddr_in://10.0.0.1:5000", peer = "fi_sockaddr_in://10.0.0.2:6000";
  ASSERT_EQ(r.links.size(), 4u);
  const OpRow* to_peer = at(me, peer, "fi_tsend");  // peers 3 and 4: one address
  ASSERT_NE(to_peer, nullptr);
  EXPECT_EQ(to_peer->count, 30u);
  EXPECT_EQ(to_peer->eagain, 6u);
  const OpRow* unnamed = at(me, "fi_addr#9", "fi_tsend");  // not inserted in the session
  ASSERT_NE(unnamed, nullptr);
  EXPECT_EQ(unnamed->count, 5u);
  EXPECT_EQ(unnamed->unfinished, 2u);
  const OpRow* any = at(me, "(any)", "fi_trecv");
  ASSERT_NE(any, nullptr);
  EXPECT_EQ(any->count, 35u);
  // Its AV not known: the one address the process inserted under fi_addr 3.
  const OpRow* old_ep = at("pid 7 ep 0x6000", peer, "fi_trecv");
  ASSERT_NE(old_ep, nullptr);
  EXPECT_EQ(old_ep->count, 1u);
}

// Sizes: a row per (op kind, size class) of the link, as the preload keeps a
// row per size. Each row's size is the mean of its ops, paired or pending:
// the size itself where its class holds one (64 and 4096 bytes here), the
// mean where a class holds two (600 and 1000 bytes, both in [512, 1024)). A
// class whose ops are all pending is sized by them.
TEST(UprobeReport, OneRowPerSizeClass) {
  std::vector<UprobeRow> rows = {row(7, OpKind::kTsend, 10, 64), row(7, OpKind::kTsend, 20, 4096),
                                 row(7, OpKind::kTsend, 3, 600), row(7, OpKind::kTsend, 0, 65536)};
  rows[2].s.completions += 1;  // and one of 1000 bytes, in the same row
  rows[2].s.bytes += 1000;
  rows[3].pending = 2;
  rows[3].pending_bytes = 2 * 65536;
  ASSERT_EQ(rows[2].size_class, ft_up_size_class(1000));
  const ProcessReport r = uprobe_process_report(7, rows, names_of(7), UprobeReportContext{});
  ASSERT_EQ(r.links.size(), 1u);
  std::map<uint64_t, const OpRow*> by_size;
  for (const OpRow& o : r.links[0].rows) {
    EXPECT_EQ(o.op, "fi_tsend");
    EXPECT_TRUE(by_size.emplace(o.bytes, &o).second) << o.bytes;
  }
  ASSERT_EQ(by_size.size(), 4u);
  ASSERT_TRUE(by_size.count(64) && by_size.count(4096) && by_size.count(700) &&
              by_size.count(65536));
  EXPECT_EQ(by_size[64]->count, 10u);
  EXPECT_EQ(by_size[4096]->count, 20u);
  EXPECT_DOUBLE_EQ(by_size[4096]->gbps, 4096.0 / 10000.0);
  EXPECT_EQ(by_size[700]->count, 4u);  // (3 x 600 + 1000) / 4
  EXPECT_EQ(by_size[65536]->count, 0u);
  EXPECT_EQ(by_size[65536]->unfinished, 2u);
}

// Receives: a row per arrived size where the CQ entries have a length (as the
// preload files them), not size_unknown; the row of their posted size holds
// their calls, and shows only with something to say (one still pending here).
TEST(UprobeReport, ReceivesSizedAsArrived) {
  UprobeRow calls = row(7, OpKind::kTrecv, 0, 4096);
  calls.posted = true;
  calls.s.calls = 16;
  calls.s.refused = calls.s.eagain = 0;
  UprobeRow pending = calls;
  pending.ep = 0x7000;  // another endpoint: its posted row has a pending receive
  pending.pending = 1;
  pending.pending_bytes = 4096;
  std::vector<UprobeRow> rows = {calls, pending, row(7, OpKind::kTrecv, 10, 64),
                                 row(7, OpKind::kTrecv, 5, 4096)};
  for (UprobeRow& r : rows) r.s.refused = r.s.eagain = 0;
  const ProcessReport r = uprobe_process_report(7, rows, names_of(7), UprobeReportContext{});
  ASSERT_EQ(r.links.size(), 2u);
  size_t arrived = 0, as_posted = 0;
  for (const LinkReport& l : r.links)
    for (const OpRow& o : l.rows) {
      EXPECT_TRUE(o.recv);
      if (o.size_unknown) {
        ++as_posted;
        EXPECT_EQ(o.bytes, 4096u);
        EXPECT_EQ(o.count, 0u);
        EXPECT_EQ(o.unfinished, 1u);
      } else {
        ++arrived;
        EXPECT_EQ(o.count, o.bytes == 64 ? 10u : 5u) << o.bytes;
      }
    }
  EXPECT_EQ(arrived, 2u);
  EXPECT_EQ(as_posted, 1u);  // not the one with calls only
}

// A row with calls only that is not a receive's as posted (an inject's: no
// completion by design) is shown, as it was before receives had posted rows.
TEST(UprobeReport, RowsWithCallsOnlyAreShownButPostedOnes) {
  UprobeRow inj = row(7, OpKind::kInjectWrite, 0, 8);
  inj.s.calls = 12;
  inj.s.refused = inj.s.eagain = 0;
  const ProcessReport r = uprobe_process_report(7, {inj}, names_of(7), UprobeReportContext{});
  ASSERT_EQ(r.links.size(), 1u);
  ASSERT_EQ(r.links[0].rows.size(), 1u);
  EXPECT_EQ(r.links[0].rows[0].op, "fi_inject_write");
  EXPECT_EQ(r.links[0].rows[0].count, 0u);
}

// An inject's row as the preload writes it: its accepted calls untimed, its
// size theirs, its refusals as -FI_EAGAIN or other errors apart (the kernel
// row's refused holds both, eagain the first).
TEST(UprobeReport, InjectsUntimedWithTheirSizeAndRefusals) {
  UprobeRow inj = row(7, OpKind::kTinject, 0, 64);
  inj.s.calls = 25;
  inj.s.refused = 5;
  inj.s.eagain = 3;
  inj.s.untimed = 20;
  inj.s.untimed_bytes = 20 * 64;
  const ProcessReport r = uprobe_process_report(7, {inj}, names_of(7), UprobeReportContext{});
  ASSERT_EQ(r.links.size(), 1u);
  ASSERT_EQ(r.links[0].rows.size(), 1u);
  const OpRow& o = r.links[0].rows[0];
  EXPECT_EQ(o.op, "fi_tinject");
  EXPECT_EQ(o.count, 0u);
  EXPECT_EQ(o.untimed, 20u);
  EXPECT_EQ(o.bytes, 64u);
  EXPECT_EQ(o.eagain, 3u);
  EXPECT_EQ(o.refused, 2u);
  EXPECT_EQ(o.unfinished, 0u);
  // A receive's posted row with untimed ops (FI_MULTI_RECV) is shown.
  UprobeRow multi = row(7, OpKind::kRecvmsg, 0, 4096);
  multi.posted = true;
  multi.s.calls = 2;
  multi.s.refused = multi.s.eagain = 0;
  multi.s.untimed = 2;
  multi.s.untimed_bytes = 8192;
  EXPECT_EQ(uprobe_process_report(7, {multi}, names_of(7), UprobeReportContext{})
                .links.at(0)
                .rows.at(0)
                .untimed,
            2u);
}

// The process's CQs as the preload's CQ rows: in the order they were opened
// (those opened before the session after them), only the polled ones, the
// longest gap's end in seconds from the session's start; other processes'
// left out.
TEST(UprobeReport, CqRowsInOpenOrder) {
  std::vector<UprobeCq> cqs(4);
  cqs[0].pid = 7, cqs[0].cq = 0x30, cqs[0].opened = 0, cqs[0].polls = 4;  // before the session
  cqs[1].pid = 7, cqs[1].cq = 0x20, cqs[1].opened = 3000, cqs[1].polls = 10;
  cqs[1].gaps[1] = 8, cqs[1].gaps[5] = 1;
  cqs[1].max_gap_ns = 250000000, cqs[1].max_gap_end = 1000 + 2500000000ULL;
  cqs[2].pid = 7, cqs[2].cq = 0x10, cqs[2].opened = 2000, cqs[2].polls = 6;
  cqs[3].pid = 8, cqs[3].cq = 0x40, cqs[3].opened = 1000, cqs[3].polls = 6;
  UprobeReportContext ctx;
  ctx.start_mono_ns = 1000;
  const ProcessReport r =
      uprobe_process_report(7, {row(7, OpKind::kSend, 5, 64)}, names_of(7), ctx, cqs);
  ASSERT_EQ(r.cqs.size(), 3u);
  EXPECT_EQ(r.cqs[0].polls, 6u);  // opened first
  EXPECT_EQ(r.cqs[1].polls, 10u);
  EXPECT_EQ(r.cqs[2].polls, 4u);  // opened before the session
  for (uint32_t i = 0; i < 3; ++i) EXPECT_EQ(r.cqs[i].id, i);
  EXPECT_EQ(r.cqs[1].gaps[1], 8u);
  EXPECT_EQ(r.cqs[1].gaps[5], 1u);
  EXPECT_DOUBLE_EQ(r.cqs[1].max_gap_ns, 250e6);
  EXPECT_DOUBLE_EQ(r.cqs[1].max_gap_end_s, 2.5);
}

}  // namespace
}  // namespace fabtrace
