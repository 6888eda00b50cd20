// Issue 28, rows 7, 9 and 11: what a reader keeps of a kernel log is bounded
// whatever the log holds (a crafted log of 3M distinct CQs made the report
// hold 3.29 GB), a breakdown or error code out of range is counted as malformed
// and never explained, and the periodic --uprobes rows of a killed session are
// read back.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <map>
#include <string>

#include "common/kernel_explain.h"
#include "common/kernel_log.h"
#include "fixtures/kernel_records.h"
#include "fixtures/synthetic_job.h"
#include "userspace/report/analysis/kernel_join.h"

namespace fabtrace {
namespace {

ft_breakdown breakdown(uint64_t start, uint64_t end) {
  ft_breakdown w{};
  w.start = start;
  w.end = end;
  w.on_cpu_ns = end > start ? end - start : 0;
  return w;
}

TEST(KernelBounds, BreakdownsOutOfRangeAreMalformed) {
  EXPECT_TRUE(breakdown_valid(breakdown(1000, 5000)));
  ft_breakdown w = breakdown(5000, 1000);  // reversed
  EXPECT_FALSE(breakdown_valid(w));
  EXPECT_EQ(breakdown_verdict(w), kMalformedBreakdown);
  w = breakdown(1000, 5000);
  w.on_cpu_ns = 18446744072056100000ULL;  // a part longer than the window
  EXPECT_FALSE(breakdown_valid(w));
  w = breakdown(1000, 5000);
  w.runnable_ns = 3000;  // parts adding up to more than the window
  EXPECT_FALSE(breakdown_valid(w));
  w = breakdown(1000, 5000);
  w.on_cpu_ns = 1000;
  w.runnable_ns = 3000;
  w.irq_ns = 500;  // inside on-CPU
  EXPECT_TRUE(breakdown_valid(w));
  EXPECT_TRUE(op_error_valid(5));
  EXPECT_FALSE(op_error_valid(INT32_MIN));
  EXPECT_FALSE(op_error_valid(0));
}

// A log of `n` stalls on distinct CQs, IRQs on `n` distinct CPUs and names,
// and malformed breakdowns and error codes.
std::string crafted_log(const std::string& dir, uint32_t n, uint32_t malformed) {
  const std::string path = dir + "/fabtrace_kernel.crafted.p1.klog";
  KernelLogWriter w;
  EXPECT_TRUE(w.create(path, test::sample_meta())) << w.error();
  for (uint32_t i = 0; i < n; ++i) {
    ft_stall s{};
    s.h = test::make_hdr(FT_EV_STALL, sizeof(s), 2000 + i, 0, 7, 7);
    s.cq = i;
    s.w = breakdown(1000, 2000 + i);
    w.append(&s, sizeof(s));
    ft_irq q{};
    q.h = test::make_hdr(FT_EV_IRQ, sizeof(q), 3000 + i, i, 7, 7);
    q.start = 2000 + i;
    test::set_str(q.name, ("irq" + std::to_string(i)).c_str());
    w.append(&q, sizeof(q));
    ft_offcpu o{};
    o.h = test::make_hdr(FT_EV_OFFCPU, sizeof(o), 4000 + i, 0, 7, 7);
    o.start = 3000;
    o.off_kind = FT_OFF_SLEEP;
    o.syscall = static_cast<int32_t>(100000 + i);  // "sleep:syscall N": a cause of its own
    w.append(&o, sizeof(o));
  }
  for (uint32_t i = 0; i < malformed; ++i) {
    ft_stall s{};
    s.h = test::make_hdr(FT_EV_STALL, sizeof(s), 9000, 0, 8, 8);
    s.w = breakdown(9000, 1000);  // reversed: 18446744073.7 s when taken as it is
    w.append(&s, sizeof(s));
    ft_op o{};
    o.h = test::make_hdr(FT_EV_OP_ERROR, sizeof(o), 9000, 0, 8, 8);
    o.err = INT32_MIN;
    o.w = breakdown(1000, 9000);
    w.append(&o, sizeof(o));
  }
  EXPECT_TRUE(w.write_end(1));
  EXPECT_TRUE(w.close());
  return path;
}

TEST(KernelBounds, TheReportKeepsABoundedPartOfACraftedLog) {
  const std::string dir = test::make_fixture_dir("kernel-bounds");
  constexpr uint32_t kKeys = 6000, kMalformed = 10;
  const std::string path = crafted_log(dir, kKeys, kMalformed);
  report::KernelNode n;
  std::string why;
  ASSERT_TRUE(report::load_kernel_node(path, &n, &why)) << why;
  EXPECT_EQ(n.stalls.size(), report::kKernelStallKeys);  // one stall per (process, CQ) kept
  EXPECT_EQ(n.irq_per_cpu.size(), report::kKernelCpus);
  EXPECT_EQ(n.irq_by_name.size(), report::kKernelIrqNames);
  EXPECT_EQ(n.offcpu_by_cause.size(), report::kKernelCauses);
  // Every record past a bound counted: stalls, CPUs, names and causes.
  EXPECT_EQ(n.over_bounds, (kKeys - report::kKernelStallKeys) + (kKeys - report::kKernelCpus) +
                               (kKeys - report::kKernelIrqNames) + (kKeys - report::kKernelCauses));
  EXPECT_EQ(n.malformed, 2u * kMalformed);
  for (const report::KernelExplanation& s : n.stalls) EXPECT_NE(s.pid, 8u);
  EXPECT_TRUE(n.op_errors.empty());
}

// A killed --uprobes session: no end block and no final rows, only the
// periodic ones (kUprobeRows), of which each row's latest is read.
TEST(KernelBounds, AKilledSessionsPeriodicUprobeRowsAreReadBack) {
  const std::string dir = test::make_fixture_dir("kernel-uprobe-rows");
  const std::string path = dir + "/fabtrace_kernel.killed.p1.klog";
  KernelLogWriter w;
  ASSERT_TRUE(w.create(path, test::sample_meta())) << w.error();
  auto row = [](uint32_t pid, uint64_t calls) {
    ft_uprobe_ops r{};
    r.h = test::make_hdr(FT_EV_UPROBE_OPS, sizeof(r), calls, 0, pid, 0);
    r.op = 1;
    r.ep = 0x1000;
    r.s.calls = calls;
    return r;
  };
  const ft_uprobe_ops first[2] = {row(10, 5), row(11, 7)};
  ASSERT_TRUE(w.write_uprobe_rows(first, 2, sizeof(ft_uprobe_ops)));
  const ft_uprobe_ops later[1] = {row(10, 50)};  // pid 10's row grew; 11's did not change
  ASSERT_TRUE(w.write_uprobe_rows(later, 1, sizeof(ft_uprobe_ops)));
  w.close();  // no end block: killed

  KernelLogReader r;
  std::string err;
  ASSERT_TRUE(r.open(path, &err)) << err;
  std::map<uint32_t, uint64_t> calls;
  ASSERT_TRUE(r.read_all(
      [&](const ft_hdr& h, const uint8_t* rec) {
        ASSERT_EQ(h.kind, FT_EV_UPROBE_OPS);
        calls[h.pid] += kernel_log::record_as<ft_uprobe_ops>(rec).s.calls;
      },
      &err))
      << err;
  EXPECT_EQ(calls, (std::map<uint32_t, uint64_t>{{10, 50}, {11, 7}}));

  // With the final rows (a clean stop), the periodic ones are not read.
  const std::string path2 = dir + "/fabtrace_kernel.clean.p1.klog";
  KernelLogWriter w2;
  ASSERT_TRUE(w2.create(path2, test::sample_meta())) << w2.error();
  ASSERT_TRUE(w2.write_uprobe_rows(first, 2, sizeof(ft_uprobe_ops)));
  const ft_uprobe_ops final_row = row(10, 60);
  w2.append(&final_row, sizeof(final_row));
  ASSERT_TRUE(w2.write_end(1));
  w2.close();
  KernelLogReader r2;
  ASSERT_TRUE(r2.open(path2, &err)) << err;
  calls.clear();
  ASSERT_TRUE(r2.read_all(
      [&](const ft_hdr& h, const uint8_t* rec) {
        calls[h.pid] += kernel_log::record_as<ft_uprobe_ops>(rec).s.calls;
      },
      &err));
  EXPECT_EQ(calls, (std::map<uint32_t, uint64_t>{{10, 60}}));
}

// A write error is counted: the records it kept out of the log are lost, not
// written, and the writer says why.
TEST(KernelBounds, AWriteErrorCountsTheRecordsItLost) {
  if (access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no /dev/full";
  KernelLogWriter w;
  const int fd = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_FALSE(w.create(fd, "/dev/full", test::sample_meta()));
  ft_mark m{};
  m.h = test::make_hdr(FT_EV_MARK, sizeof(m), 1, 0, 1, 1);
  for (int i = 0; i < 10; ++i) w.append(&m, sizeof(m));
  EXPECT_FALSE(w.flush());
  EXPECT_EQ(w.records(), 0u);
  EXPECT_EQ(w.records_lost(), 10u);
  EXPECT_TRUE(w.failed());
  EXPECT_NE(w.error().find("No space left on device"), std::string::npos) << w.error();
}

}  // namespace
}  // namespace fabtrace
