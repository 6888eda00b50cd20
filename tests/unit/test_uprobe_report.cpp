// uprobe_process_report: a process's kernel rows as the preload's per-rank
// report (one link, one row per op kind), written and read back through the
// report's own JSON writer and reader.
#include "userspace/record/uprobe_report.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "bpf/uprobe_ops.h"
#include "common/op_kinds.h"
#include "common/report_writer.h"
#include "userspace/report/report_reader.h"

namespace fabtrace {
namespace {

UprobeRow row(uint32_t pid, OpKind op, uint64_t completions, uint64_t bytes_each) {
  UprobeRow r;
  r.pid = pid;
  r.op = static_cast<uint32_t>(op);
  r.s.calls = completions + 3;
  r.s.refused = 3;
  r.s.completions = completions;
  r.s.bytes = completions * bytes_each;
  r.s.lat_sum_ns = completions * 10000;
  r.s.lat_min_ns = 5000;
  r.s.lat_max_ns = 40000;
  r.s.hist[13] = completions;  // 8192..16383 ns
  return r;
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
  UprobeReportContext ctx;
  ctx.host = "h";
  ctx.start_mono_ns = 1000;
  ctx.start_wall_ns = 2000;
  ctx.duration_s = 2.5;
  const ProcessReport r = uprobe_process_report(7, rows, ctx);
  EXPECT_EQ(r.source, "uprobes");
  EXPECT_EQ(r.rank, "NA");
  EXPECT_EQ(r.pid, 7);
  ASSERT_EQ(r.links.size(), 1u);
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
  EXPECT_TRUE(uprobe_process_report(9, rows, ctx).links.empty());

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
  EXPECT_EQ(back.links[0].rows[0].count, 300u);
  EXPECT_EQ(back.links[0].rows[1].count, 301u);
}

}  // namespace
}  // namespace fabtrace
