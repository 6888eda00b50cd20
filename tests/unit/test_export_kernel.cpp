// `fabtrace export kernel` (userspace/export_kernel.cpp) on logs written by the
// real writer: CSV and text output, refusals, cut files and malformed records.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "fixtures/kernel_records.h"
#include "tests/unit/scratch_dir.h"
#include "userspace/commands.h"

namespace fabtrace {
namespace {

using test::make_hdr;
using test::set_str;

constexpr uint64_t kMono = 123456789012ULL;  // sample_meta().mono_ns
constexpr uint64_t kS = 1000000000ULL;

template <typename T>
T rec(uint16_t kind, uint64_t ts) {
  T r{};
  r.h = make_hdr(kind, sizeof(T), ts, 3, 100, 101);
  return r;
}

template <typename T>
void append(KernelLogWriter* w, const T& r) {
  ASSERT_TRUE(w->append(&r, sizeof(r))) << w->error();
}

// Five records in two blocks, with names, tasks and stats between them.
// `second_block_at` receives the file offset where the second events block starts.
void write_log(const std::string& path, bool with_end, uint64_t* second_block_at = nullptr) {
  KernelLogWriter w;
  ASSERT_TRUE(w.create(path, test::sample_meta())) << w.error();
  auto poll = rec<ft_poll>(FT_EV_POLL, kMono + 3 * kS / 2);
  poll.enter = poll.h.ts - 700;
  poll.cq = 4;
  poll.ret = -11;
  poll.polls = 9;
  poll.busy_ns = 450;
  append(&w, poll);
  auto thread = rec<ft_thread>(FT_EV_THREAD, kMono + 2 * kS);
  set_str(thread.comm, "a,b\"c");
  set_str(thread.rank, "0");
  append(&w, thread);
  auto drop = rec<ft_net>(FT_EV_DROP, kMono + 5 * kS / 2);
  drop.t.family = AF_INET;
  ASSERT_EQ(inet_pton(AF_INET, "10.0.0.1", drop.t.saddr), 1);
  ASSERT_EQ(inet_pton(AF_INET, "10.0.0.2", drop.t.daddr), 1);
  drop.t.sport = 5000;
  drop.t.dport = 6000;
  drop.state = 1;
  drop.reason = 2;
  drop.owner_pid = 100;
  append(&w, drop);
  auto work = rec<ft_work>(FT_EV_WORK, kMono + 3 * kS);
  work.start = work.h.ts - 40000;
  work.func = 0xffffffffc0a01230ULL;
  append(&w, work);
  ASSERT_TRUE(w.flush());
  ASSERT_TRUE(w.write_tasks({{4100, 4100, "app", "0", "/usr/bin/app", true},
                             {4200, 4200, "fi_server", "", "/opt/fi_server", false}}));
  ASSERT_TRUE(w.write_symbols(
      {{0xffffffffc0a01230ULL, "error_irq_worker", "error"}, {2, "NO_SOCKET", "drop_reason"}}));
  KernelStats s;
  s.lost[FT_EV_OFFCPU] = 5;
  s.lost[FT_EV_POLL] = 2;
  s.recursion_misses = 2;
  s.in_without_out = 3;
  s.in_unseen = 4;
  s.untraced_retrans = 6;
  s.untraced_drops = 8;
  ASSERT_TRUE(w.write_stats(s));
  if (second_block_at) *second_block_at = w.bytes_written();
  auto off = rec<ft_offcpu>(FT_EV_OFFCPU, kMono + 4 * kS);
  off.start = off.h.ts - 5000000;
  off.syscall = -1;
  off.cpu_out = 2;
  off.off_kind = FT_OFF_PREEMPTED;
  off.out_pid = 555;
  set_str(off.out_comm, "hog");
  append(&w, off);
  if (with_end)
    ASSERT_TRUE(w.write_end(5 * kS));
  else
    ASSERT_TRUE(w.flush());
  w.close();
}

struct Export {
  int rc = -1;
  std::string out, err;
};

Export run_export(const std::string& path, bool csv) {
  Export e;
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  EXPECT_NE(f, nullptr);
  if (!f) return e;
  testing::internal::CaptureStderr();
  e.rc = export_kernel(path, csv, f);
  e.err = testing::internal::GetCapturedStderr();
  std::fclose(f);
  e.out.assign(buf, len);
  std::free(buf);
  return e;
}

// The export of a fresh log from write_log().
Export export_new_log(bool with_end, bool csv) {
  test::ScratchDir dir;
  const std::string path = dir.path("k.klog");
  write_log(path, with_end);
  return run_export(path, csv);
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> v;
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l)) v.push_back(l);
  return v;
}

const std::vector<std::string> kCsvRows = {
    "124956789012,poll,3,100,101,124956788312,700,poll,0,,cq=4;ret=-11;polls=9;busy_ns=450",
    "125456789012,thread,3,100,101,125456789012,0,first fabric activity,0,\"a,b\"\"c\",rank=0",
    "125956789012,drop,3,100,101,125956789012,0,NO_SOCKET,0,,"
    "src=10.0.0.1:5000;dst=10.0.0.2:6000;owner=100;tcp_state=1",
    "126456789012,cxi_work,3,100,101,126456749012,40000,error_irq_worker,0,,class=error",
    "127456789012,offcpu,3,100,101,127451789012,5000000,preempted,555,hog,"
    "taken_by=hog[555];cpu_out=2;cpu_in=3;state=0x0",
};

TEST(ExportKernel, Csv) {
  const Export e = export_new_log(/*with_end=*/true, /*csv=*/true);
  EXPECT_EQ(e.rc, 0);
  EXPECT_EQ(e.err, "");
  const std::vector<std::string> l = lines(e.out);
  ASSERT_EQ(l.size(), 2 + kCsvRows.size()) << e.out;
  EXPECT_EQ(l[0],
            "# fabtrace kernel log host=node-07 kernel=6.1.0-test collector_pid=4242 "
            "mono_ns=123456789012 real_ns=1700000000123456789");
  EXPECT_EQ(l[1], "ts_ns,kind,cpu,pid,tid,start_ns,dur_ns,cause,other_pid,other_comm,detail");
  for (size_t i = 0; i < kCsvRows.size(); ++i) EXPECT_EQ(l[2 + i], kCsvRows[i]);
}

TEST(ExportKernel, Text) {
  const Export e = export_new_log(/*with_end=*/true, /*csv=*/false);
  EXPECT_EQ(e.rc, 0);
  EXPECT_EQ(e.err, "");
  const std::vector<std::string> want = {
      "# host node-07, kernel 6.1.0-test, collector pid 4242, command: fabtrace record -- "
      "./app \"a,b\"",
      "# cxi tp/cass/cass_err absent: no cass tracepoints (cxi driver not loaded)",
      "# probes usdt:fabtrace:poll failed: Operation not permitted",
      "# task pid 4100 tid 4100 app rank 0 (preload)",
      "# task pid 4200 tid 4200 fi_server rank -",
      "# time (s since the session started)  event  pid/tid  cpu  duration  what",
      "    1.500000 poll           100/101     cpu3         700 ns  poll  "
      "cq=4;ret=-11;polls=9;busy_ns=450",
      "    2.000000 thread         100/101     cpu3              -  first fabric activity [a,b\"c] "
      " "
      "rank=0",
      "    2.500000 drop           100/101     cpu3              -  NO_SOCKET  "
      "src=10.0.0.1:5000;dst=10.0.0.2:6000;owner=100;tcp_state=1",
      "    3.000000 cxi_work       100/101     cpu3        40.0 us  error_irq_worker  class=error",
      "    4.000000 offcpu         100/101     cpu3       5.000 ms  preempted [hog:555]  "
      "taken_by=hog[555];cpu_out=2;cpu_in=3;state=0x0",
      "# 5 events; 7 lost in the kernel (ring buffer full), 2 program runs missed; 3 returns to "
      "a CPU without a departure seen, 4 without an arrival seen; 6 retransmits and 8 drops on "
      "sockets not traced",
  };
  EXPECT_EQ(lines(e.out), want) << e.out;
}

TEST(ExportKernel, NoEndBlockIsSaid) {
  const Export e = export_new_log(/*with_end=*/false, /*csv=*/false);
  EXPECT_EQ(e.rc, 0);
  EXPECT_EQ(e.err, "");
  const std::vector<std::string> l = lines(e.out);
  ASSERT_FALSE(l.empty());
  EXPECT_NE(l.back().find("; no end block: the collector did not stop cleanly"), std::string::npos)
      << l.back();
}

TEST(ExportKernel, UnusableFilesExitOne) {
  test::ScratchDir dir;
  const std::string missing = dir.path("missing.klog");
  Export e = run_export(missing, true);
  EXPECT_EQ(e.rc, 1);
  EXPECT_EQ(e.out, "");
  EXPECT_EQ(e.err.rfind("fabtrace: " + missing + ": cannot open: ", 0), 0u) << e.err;
  EXPECT_EQ(lines(e.err).size(), 1u);

  const std::string junk = dir.write("junk.klog", "this is not a kernel log at all\n");
  e = run_export(junk, false);
  EXPECT_EQ(e.rc, 1);
  EXPECT_EQ(e.out, "");
  EXPECT_EQ(e.err, "fabtrace: " + junk + ": not a FTKLOG file\n");

  e = run_export(dir.path(), true);
  EXPECT_EQ(e.rc, 1);
  EXPECT_EQ(e.err, "fabtrace: " + dir.path() + ": not a regular file\n");
}

TEST(ExportKernel, CutFileExportsItsWholeBlocks) {
  test::ScratchDir dir;
  const std::string full_path = dir.path("full.klog");
  uint64_t second = 0;
  write_log(full_path, true, &second);
  const std::string full = test::read_file_bytes(full_path);
  // Into the second events block's payload.
  const std::string cut = dir.write("cut.klog", full.substr(0, second + 40));
  const Export e = run_export(cut, true);
  EXPECT_EQ(e.rc, 0);
  const std::vector<std::string> l = lines(e.out);
  ASSERT_EQ(l.size(), 2u + 4u) << e.out;
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(l[2 + i], kCsvRows[i]);
  EXPECT_EQ(e.err, "fabtrace: " + cut + ": cut short (incomplete block at byte " +
                       std::to_string(second) + "); the events before it are shown\n");
}

TEST(ExportKernel, MalformedRecordsAreCounted) {
  test::ScratchDir dir;
  const std::string path = dir.path("m.klog");
  BlockFileWriter bw;
  ASSERT_TRUE(test::start_raw_log(&bw, path));
  test::Bytes good = test::patterned_record(FT_EV_EXIT, 1);
  test::Bytes bad = test::patterned_record(FT_EV_EXIT, 2);
  test::set_record_size(&bad, 4096);  // far past the block
  const test::Bytes p = test::concat({good, bad, good});
  ASSERT_TRUE(bw.write_block(kernel_log::kEvents, 3, p.data(), p.size()));
  bw.close();
  const Export e = run_export(path, true);
  EXPECT_EQ(e.rc, 0);
  EXPECT_EQ(lines(e.out).size(), 2u + 1u) << e.out;
  EXPECT_EQ(e.err, "fabtrace: " + path + ": 2 malformed records skipped\n");
}

TEST(ExportKernel, FailingOutputExitsOne) {
  if (::access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no /dev/full";
  test::ScratchDir dir;
  const std::string path = dir.path("k.klog");
  write_log(path, true);
  std::FILE* f = std::fopen("/dev/full", "w");
  ASSERT_NE(f, nullptr);
  testing::internal::CaptureStderr();
  const int rc = export_kernel(path, true, f);
  const std::string err = testing::internal::GetCapturedStderr();
  std::fclose(f);
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(err, "fabtrace: writing the export failed\n");
}

}  // namespace
}  // namespace fabtrace
