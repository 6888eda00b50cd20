// The slowest individual ops of `fabtrace report` on the synthetic job, with
// per-op timelines written here with known durations: the top N per class,
// their ratio to the row's p50, their times on the job's clock, the timelines'
// coverage, and the CSV, summary and HTML outputs.
#include "userspace/report/analysis/slowest_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>

#include "common/op_kinds.h"
#include "common/oplog_file.h"
#include "fixtures/synthetic_job.h"
#include "userspace/report/job/job.h"

namespace fabtrace::report {
namespace {

using test::SyntheticJob;

struct Planted {
  int rank;
  OpKind kind;
  uint64_t start_off_ns;  // after the rank's start
  uint64_t dur_ns;
  bool error = false;
};

// Writes rank g's oplog: `fill` ops of 10 us + (i % 997) ns on its link to the
// next rank, then the planted ones; optionally a capture window with changes.
void write_oplog(const std::string& dir, const ProcessReport& r, int g, int n, size_t fill,
                 const std::vector<Planted>& planted, const std::string& capture = "",
                 const std::vector<std::pair<uint8_t, uint64_t>>& changes = {}) {
  OplogFileWriter w;
  ASSERT_TRUE(w.open(dir + "/" + test::oplog_name(r), OplogMeta{r.host, r.rank, r.pid}));
  OplogCalib cal;
  cal.ns_per_tick = 1.0;
  cal.tick0 = r.start_mono_ns;
  cal.mono0_ns = r.start_mono_ns;
  cal.real0_ns = r.start_wall_ns;
  cal.pairs = 2;
  ASSERT_TRUE(w.write_calib(cal));
  if (!capture.empty() || !changes.empty()) {
    ASSERT_TRUE(w.write_capture(OplogCaptureSpec{capture, "SIGUSR2"}));
  }
  const int next = (g + 1) % n;
  ASSERT_TRUE(w.write_links({OplogLink{0, SyntheticJob::address(g), SyntheticJob::address(next)},
                             OplogLink{1, SyntheticJob::address(g), "(any)"}}));
  std::vector<oplog::OpEntry> ops;
  for (size_t i = 0; i < fill; ++i) {
    oplog::OpEntry e{};
    e.start_ticks = r.start_mono_ns + 1000 + i * 5000;
    e.end_ticks = e.start_ticks + 10000 + i % 997;
    e.bytes = 65536;
    e.kind = static_cast<uint8_t>(OpKind::kTsend);
    e.tid = 77;
    ops.push_back(e);
  }
  for (const Planted& p : planted) {
    if (p.rank != g) continue;
    oplog::OpEntry e{};
    e.start_ticks = r.start_mono_ns + p.start_off_ns;
    e.end_ticks = e.start_ticks + p.dur_ns;
    e.bytes = 65536;
    e.kind = static_cast<uint8_t>(p.kind);
    e.link_id = op_is_recv(p.kind) ? 1 : 0;
    e.error = p.error;
    e.tid = 78;
    ops.push_back(e);
  }
  ASSERT_TRUE(w.write_ops(ops.data(), ops.size()));
  std::vector<oplog::OpEntry> marks;
  for (const auto& c : changes) {
    oplog::OpEntry m{};
    m.start_ticks = m.end_ticks = r.start_mono_ns + c.second;
    m.kind = c.first;
    m.link_id = oplog::kNoMarkName;
    marks.push_back(m);
  }
  ASSERT_TRUE(w.write_marks(marks.data(), marks.size()));
  ASSERT_TRUE(w.write_end(ops.size(), 0, 0, 5));
}

class SlowestOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sj_ = test::make_synthetic_job(test::reports_only());
    dir_ = test::make_fixture_dir("slowest");
    test::write_synthetic_job(sj_, dir_);
  }
  void TearDown() override { test::remove_tree(dir_); }
  void load() {
    std::string err;
    ASSERT_TRUE(load_job(dir_, &job_, &err)) << err;
    ASSERT_EQ(job_.ranks.size(), 4u);
  }
  SyntheticJob sj_;
  std::string dir_;
  Job job_;
};

const std::vector<Planted> kPlanted = {
    {3, OpKind::kTsend, 2000000000, 7000000},
    {0, OpKind::kTsend, 3000000000, 6000000},
    {3, OpKind::kTsend, 4000000000, 5000000},
    {2, OpKind::kTsend, 5000000000, 4000000},
    {1, OpKind::kTrecv, 1000000000, 50000000},                   // a receive: listed apart
    {2, OpKind::kTsend, 6000000000, 100000000, /*error=*/true},  // an error: no latency
};

TEST_F(SlowestOpsTest, TopNPerClassWithRatiosAndTimes) {
  for (int g = 0; g < 4; ++g) write_oplog(dir_, sj_.reports[g], g, 4, 2000, kPlanted);
  load();
  const SlowestOps s = find_slowest_ops(job_, 3);
  ASSERT_EQ(s.ops.size(), 3u);
  EXPECT_EQ(s.ops[0].rank, "3");
  EXPECT_DOUBLE_EQ(s.ops[0].dur_ns, 7e6);
  EXPECT_EQ(s.ops[1].rank, "0");
  EXPECT_DOUBLE_EQ(s.ops[1].dur_ns, 6e6);
  EXPECT_EQ(s.ops[2].rank, "3");
  EXPECT_DOUBLE_EQ(s.ops[2].dur_ns, 5e6);
  EXPECT_EQ(s.ops_seen, 4u * 2000 + kPlanted.size());
  const SlowOp& top = s.ops[0];
  EXPECT_EQ(top.op, "fi_tsend");
  EXPECT_EQ(top.tid, 78u);
  EXPECT_EQ(top.local, SyntheticJob::address(3));
  EXPECT_EQ(top.remote, SyntheticJob::address(0));
  // The row of rank 3's fi_tsend 64 KiB to rank 0: p50 10 us + 100 ns x 3.
  EXPECT_DOUBLE_EQ(top.row_p50_ns, 10300);
  EXPECT_NEAR(top.ratio, 7e6 / 10300, 1e-6);
  // Rank 3 (node02, local rank 1) started 0.5 s + 1 ms into the job; the op 2 s later.
  const ProcessReport& r3 = sj_.reports[3];
  EXPECT_EQ(top.start_mono_ns, static_cast<int64_t>(r3.start_mono_ns + 2000000000));
  EXPECT_EQ(top.start_wall_ns, static_cast<int64_t>(r3.start_wall_ns + 2000000000));
  EXPECT_NEAR(top.start_job_s, 2.501, 1e-9);
  ASSERT_EQ(s.recvs.size(), 1u);
  EXPECT_EQ(s.recvs[0].rank, "1");
  EXPECT_EQ(s.recvs[0].op, "fi_trecv");
  EXPECT_EQ(s.recvs[0].remote, "(any)");
  EXPECT_DOUBLE_EQ(s.recvs[0].ratio, 50e6 / 15000);
  ASSERT_EQ(s.covers.size(), 4u);
  for (const TimelineCover& c : s.covers) EXPECT_TRUE(c.whole);
}

// The heap keeps exactly the N longest of many ops (checked against a sort).
TEST_F(SlowestOpsTest, HeapAgreesWithAFullSort) {
  std::mt19937_64 rng(42);
  std::vector<Planted> many;
  for (int i = 0; i < 20000; ++i)
    many.push_back({i % 4, OpKind::kTsend, 1000000ull * static_cast<uint64_t>(i + 1),
                    20000 + rng() % 5000000});
  for (int g = 0; g < 4; ++g) write_oplog(dir_, sj_.reports[g], g, 4, 0, many);
  load();
  const SlowestOps s = find_slowest_ops(job_, 25);
  std::vector<double> want;
  for (const Planted& p : many) want.push_back(static_cast<double>(p.dur_ns));
  std::sort(want.rbegin(), want.rend());
  ASSERT_EQ(s.ops.size(), 25u);
  for (size_t i = 0; i < 25; ++i) EXPECT_DOUBLE_EQ(s.ops[i].dur_ns, want[i]) << i;
}

// The captured spans from the capture changes, and the window asked for.
TEST_F(SlowestOpsTest, CoverageOfWindowedTimelines) {
  write_oplog(dir_, sj_.reports[0], 0, 4, 10, {}, "mark:iteration 2",
              {{oplog::kCaptureOn, 2000000000}, {oplog::kCaptureOff, 3000000000}});
  write_oplog(dir_, sj_.reports[1], 1, 4, 10, {}, "",
              {{oplog::kCaptureOff, 1000000000}, {oplog::kCaptureOn, 4000000000}});
  write_oplog(dir_, sj_.reports[2], 2, 4, 10, {}, "3600:10",
              {{oplog::kCaptureOn, 3600000000000}, {oplog::kCaptureOff, 3610000000000}});
  load();
  const SlowestOps s = find_slowest_ops(job_, 10);
  ASSERT_EQ(s.covers.size(), 3u);
  const uint64_t w0 = sj_.reports[0].start_wall_ns, w1 = sj_.reports[1].start_wall_ns;
  const TimelineCover& c0 = s.covers[0];
  EXPECT_FALSE(c0.whole);
  EXPECT_EQ(c0.spec, "mark:iteration 2");
  ASSERT_EQ(c0.spans.size(), 1u);
  EXPECT_EQ(c0.spans[0].from, static_cast<int64_t>(w0 + 2000000000));
  EXPECT_EQ(c0.spans[0].to, static_cast<int64_t>(w0 + 3000000000));
  EXPECT_EQ(c0.outside, 5u);
  const TimelineCover& c1 = s.covers[1];  // on from the start, toggled off, on to the end
  ASSERT_EQ(c1.spans.size(), 2u);
  EXPECT_EQ(c1.spans[0].from, static_cast<int64_t>(w1));
  EXPECT_EQ(c1.spans[0].to, static_cast<int64_t>(w1 + 1000000000));
  EXPECT_EQ(c1.spans[1].from, static_cast<int64_t>(w1 + 4000000000));
  EXPECT_EQ(c1.spans[1].to, 0);
  EXPECT_TRUE(s.covers[2].spans.empty());  // an hour after its 10 s run
  const std::string text = slowest_ops_text(s, 5);
  EXPECT_NE(text.find("window mark:iteration 2, captured t+2.000 .. t+3.000 s"), std::string::npos)
      << text;
  EXPECT_NE(text.find("window 3600:10, nothing captured"), std::string::npos) << text;
}

TEST_F(SlowestOpsTest, SummaryHtmlAndCsv) {
  for (int g = 0; g < 4; ++g) write_oplog(dir_, sj_.reports[g], g, 4, 100, kPlanted);
  load();
  const SlowestOps s = find_slowest_ops(job_, 2);
  const std::string text = slowest_ops_text(s, 5);
  EXPECT_NE(text.find("slowest ops"), std::string::npos);
  EXPECT_NE(text.find("node02 r3 tid 78"), std::string::npos) << text;
  EXPECT_NE(text.find("fi_tsend 64 KiB  7.00 ms (679.6x p50)"), std::string::npos) << text;
  EXPECT_NE(text.find("slowest receives"), std::string::npos);
  EXPECT_NE(text.find("4 ranks the whole run"), std::string::npos) << text;

  const std::string html = slowest_ops_html(s);
  EXPECT_NE(html.find("id=\"slowest-ops\""), std::string::npos);
  EXPECT_NE(html.find("id=\"slowest-recvs\""), std::string::npos);
  const int64_t ts = s.ops[0].start_wall_ns;
  std::string href = perfetto_link(ts, 7e6);
  for (size_t at = href.find('&'); at != std::string::npos; at = href.find('&', at + 5))
    href.replace(at, 1, "&amp;");
  EXPECT_NE(html.find("href=\"" + href + "\""), std::string::npos) << html;
  EXPECT_EQ(perfetto_link(ts, 7e6),
            "https://ui.perfetto.dev/?visStart=" + std::to_string(ts - 7000000) + "&visEnd=" +
                std::to_string(ts + 14000000) + "&ts=" + std::to_string(ts) + "&dur=7000000");

  const std::string csv = dir_ + "/slowest_ops.csv";
  std::string err;
  ASSERT_TRUE(write_slowest_ops_csv(s, csv, &err)) << err;
  std::ifstream f(csv);
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(f, line)) lines.push_back(line);
  ASSERT_EQ(lines.size(), 1u + 2 + 1);
  EXPECT_EQ(lines[0].rfind("class,host,rank,pid,tid,local,remote,op,bytes,", 0), 0u);
  EXPECT_EQ(lines[1].rfind("op,node02,3,1003,78,", 0), 0u) << lines[1];
  EXPECT_NE(lines[1].find(",7000000,"), std::string::npos) << lines[1];
  EXPECT_EQ(lines[3].rfind("recv,node01,1,", 0), 0u) << lines[3];
}

TEST_F(SlowestOpsTest, NoTimelinesNoSection) {
  load();
  const SlowestOps s = find_slowest_ops(job_, 10);
  EXPECT_TRUE(s.covers.empty());
  EXPECT_EQ(slowest_ops_text(s, 5), "");
  EXPECT_NE(slowest_ops_html(s).find("No rank has a per-op timeline"), std::string::npos);
}

}  // namespace
}  // namespace fabtrace::report
