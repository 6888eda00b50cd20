// Files that someone else placed in a job directory: one regression test per
// defect found by planting and fuzzing (issue 12). Each reader must skip the
// bad file (or value) with one message; none may crash, hang, allocate what
// the file merely claims, or reach undefined behaviour.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "common/counter_csv.h"
#include "common/oplog_file.h"
#include "common/report_writer.h"
#include "fixtures/synthetic_job.h"
#include "userspace/commands.h"
#include "userspace/report/job/job.h"
#include "userspace/report/job/report_reader.h"
#include "userspace/report/text/summary.h"

namespace fabtrace {
namespace {

std::string json_of(const ProcessReport& r) { return test::report_json_text(r); }

void put(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// A report of the synthetic job with one field's JSON text replaced.
std::string report_with(const std::string& field, const std::string& value) {
  std::string j = json_of(test::make_synthetic_job().reports[0]);
  const std::string key = "\"" + field + "\":";
  const size_t at = j.find(key);
  EXPECT_NE(at, std::string::npos) << field;
  size_t b = at + key.size();
  while (j[b] == ' ') ++b;
  size_t e = b;
  if (j[b] == '"') {
    e = j.find('"', b + 1) + 1;
  } else {
    while (e < j.size() && j[e] != ',' && j[e] != '}' && j[e] != '\n') ++e;
  }
  return j.replace(b, e - b, value);
}

bool parses(const std::string& text, std::string* why) {
  ProcessReport out;
  return report::parse_process_report(text, &out, why);
}

// Peak resident memory since the last reset, in MiB (/proc/self/clear_refs 5
// resets the peak: Linux 4.0 and later).
long peak_rss_mib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6) / 1024;
  return -1;
}
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

class HostileInputs : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::make_fixture_dir("hostile"); }
  void TearDown() override { test::remove_tree(dir_); }
  std::string dir_;
};

// 3. A 140 KB report whose "format" is 70,000 nested arrays took `fabtrace
// report` down (recursion in dump()).
TEST_F(HostileInputs, DeeplyNestedJsonIsRejectedNotRecursedInto) {
  const std::string deep =
      "{\"format\":" + std::string(70000, '[') + std::string(70000, ']') + ",\"version\":1}";
  std::string why;
  EXPECT_FALSE(parses(deep, &why));
  EXPECT_NE(why.find("nested deeper"), std::string::npos) << why;
  // One level short of the limit is fine as far as depth goes.
  const std::string shallow = "{\"x\":" + std::string(60, '[') + std::string(60, ']') + "}";
  EXPECT_FALSE(parses(shallow, &why));
  EXPECT_EQ(why.find("nested deeper"), std::string::npos) << why;
}

// 4. Extreme times and counts: signed overflow and float-cast UB downstream.
TEST_F(HostileInputs, ExtremeTimesAndCountsInAReportAreRejected) {
  const struct {
    const char* field;
    const char* value;
    const char* said;
  } cases[] = {
      {"start_wall_ns", "9223372036854775807", "beyond any clock"},
      {"start_mono_ns", "18446744073709551615", "beyond any clock"},
      {"count", "1e20", "not a count"},
      {"bytes", "18446744073709551615", "out of range"},
      {"duration_s", "1e300", "out of range"},
      {"max_gap_end_s", "-1e300", "out of range"},
      {"p99_ns", "1e300", "out of range"},
      {"ns_per_tick", "1e300", "out of range"},
      {"ns_per_tick", "0", "out of range"},
  };
  for (const auto& c : cases) {
    std::string why;
    EXPECT_FALSE(parses(report_with(c.field, c.value), &why)) << c.field << "=" << c.value;
    EXPECT_NE(why.find(c.said), std::string::npos) << c.field << ": " << why;
  }
  std::string why;
  EXPECT_TRUE(parses(report_with("count", "12"), &why)) << why;  // the edit itself is harmless
}

TEST_F(HostileInputs, AnOplogCalibrationOutOfRangeIsNotUsed) {
  const std::string p = dir_ + "/fabtrace_ops.h.r0.p1.oplog";
  OplogFileWriter w;
  ASSERT_TRUE(w.open(p, OplogMeta{"h", "0", 1}));
  Calibration c;
  c.tsc = true;
  c.ns_per_tick = 1e300;
  c.tick0 = 1;
  c.mono0_ns = 1000;
  ASSERT_TRUE(w.write_calib(c));
  oplog::OpEntry e{};
  e.start_ticks = 10;
  e.end_ticks = 20;
  ASSERT_TRUE(w.write_ops(&e, 1));
  w.close();
  OplogReader r;
  std::string err;
  ASSERT_TRUE(r.open(p, &err)) << err;
  ASSERT_TRUE(r.scan(&err)) << err;
  EXPECT_FALSE(r.has_calib());
  EXPECT_TRUE(r.truncated());
  EXPECT_NE(r.stop_reason().find("calibration"), std::string::npos) << r.stop_reason();
}

// 5. Sizes a file claims are checked against what it holds before allocating.
TEST_F(HostileInputs, AnOplogClaimingAHugeBlockAllocatesNothing) {
  oplog::FileHeader fh{};
  std::memcpy(fh.magic, oplog::kMagic, sizeof(fh.magic));
  fh.version = oplog::kVersion;
  fh.header_bytes = sizeof(fh);
  oplog::BlockHeader bh{};
  bh.magic = oplog::kBlockMagic;
  bh.type = oplog::kMeta;
  bh.payload_bytes = 256u << 20;
  const std::string p = dir_ + "/fabtrace_ops.h.r0.p1.oplog";
  put(p, std::string(reinterpret_cast<const char*>(&fh), sizeof(fh)) +
             std::string(reinterpret_cast<const char*>(&bh), sizeof(bh)));
  ASSERT_EQ(sizeof(fh) + sizeof(bh), 40u);
  reset_peak_rss();
  const long before = peak_rss_mib();
  ASSERT_GE(before, 0);
  OplogReader r;
  std::string err;
  EXPECT_FALSE(r.open(p, &err));
  EXPECT_NE(err.find(p), std::string::npos) << err;
  EXPECT_LT(peak_rss_mib() - before, 64) << "allocated what a 40-byte file claimed";
}

TEST_F(HostileInputs, AHugeReportFileIsNotReadWhole) {
  const std::string p = dir_ + "/fabtrace.h.r0.p1.json";
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 2ll << 30), 0);  // 2 GiB, sparse
  ::close(fd);
  reset_peak_rss();
  const long before = peak_rss_mib();
  ProcessReport out;
  std::string why;
  EXPECT_FALSE(report::read_process_report(p, &out, &why));
  EXPECT_NE(why.find("too large"), std::string::npos) << why;
  EXPECT_LT(peak_rss_mib() - before, 64);
}

TEST_F(HostileInputs, HugeStringsAreRejected) {
  const std::string host(30u << 20, 'h');
  std::string why;
  EXPECT_FALSE(parses(report_with("host", "\"" + host + "\""), &why));
  EXPECT_NE(why.find("host is 31457280 bytes long"), std::string::npos) << why.substr(0, 200);

  const std::string csv = dir_ + "/fabtrace_nic.h.r0.p1.csv";
  put(csv, "# fabtrace-counters v1 host=" + host + " rank=0 pid=1\nt_mono_ns,wall_ns\n1,2\n");
  CounterSeries cs;
  EXPECT_FALSE(read_counter_csv(csv, &cs, &why));
  EXPECT_NE(why.find("bytes long"), std::string::npos) << why.substr(0, 200);
  EXPECT_TRUE(cs.host.empty());
}

// 6. One rule for the rank token: the old preload wrote "1,2" in the JSON and
// "1_2" in the counter CSV, and the CSV was dropped as "no report beside them".
TEST_F(HostileInputs, CountersMeetTheirReportWhateverTheRankText) {
  ProcessReport rep = test::make_synthetic_job().reports[0];
  rep.host = "node01";
  rep.rank = "1,2";
  rep.pid = 77;
  put(dir_ + "/fabtrace.node01.r1,2.p77.json", json_of(rep));
  put(dir_ + "/fabtrace_nic.node01.r1_2.p77.csv",
      "# fabtrace-counters v1 host=node01 rank=1_2 pid=77\n"
      "# interval_ms=5 achieved_mean_ms=5.000 devices=cxi0 counters=1 samples=2 dropped=0 "
      "read_errors=0\n"
      "t_mono_ns,wall_ns,cxi0:telemetry_wall_ns,cxi0:hni_sts_tx_ok_octets\n"
      "1000,2000,0,5\n2000,3000,0,9\n");
  report::Job job;
  std::string err;
  ASSERT_TRUE(report::load_job(dir_, &job, &err)) << err;
  for (const report::Skipped& s : job.skipped) ADD_FAILURE() << s.path << ": " << s.why;
  ASSERT_EQ(job.ranks.size(), 1u);
  EXPECT_FALSE(job.ranks[0].counters_path.empty());
}

// 7. A rank that did no data ops leaves an oplog with an end record and no
// report: that is what to say, not "did not exit cleanly?".
TEST_F(HostileInputs, ARankWithoutDataOpsIsSaidSo) {
  const std::string p = dir_ + "/fabtrace_ops.h.r3.p9.oplog";
  OplogFileWriter w;
  ASSERT_TRUE(w.open(p, OplogMeta{"h", "3", 9}));
  ASSERT_TRUE(w.write_end(0, 0, 0));
  w.close();
  report::Job job;
  std::string err;
  ASSERT_TRUE(report::load_job(dir_, &job, &err)) << err;
  ASSERT_EQ(job.skipped.size(), 1u);
  EXPECT_NE(job.skipped[0].why.find("no data-path ops"), std::string::npos) << job.skipped[0].why;
  EXPECT_EQ(job.skipped[0].why.find("did not exit cleanly"), std::string::npos);
}

// 10. Terminal controls from host or address strings reach the terminal raw.
TEST_F(HostileInputs, ControlCharactersAreEscapedInTheSummary) {
  ProcessReport rep = test::make_synthetic_job().reports[0];
  rep.host = "node\x1b]0;pwned\a\x1b[2J";
  ASSERT_FALSE(rep.links.empty());
  rep.links[0].local = "10.0.0.1:5\r\n\x1b[31mFAKE LINE";
  report::Job job;
  job.ranks.push_back(report::make_rank(rep));
  report::build_job_tables(&job);
  const std::string s = report::summary_text(job, report::SummaryOptions());
  EXPECT_EQ(s.find('\x1b'), std::string::npos);
  EXPECT_EQ(s.find('\a'), std::string::npos);
  EXPECT_EQ(s.find('\r'), std::string::npos);
  EXPECT_NE(s.find("node\\x1b]0;pwned\\x07"), std::string::npos) << s;
}

// 11. `fabtrace export ops FIFO` blocked forever in open(2).
TEST_F(HostileInputs, ExportRefusesAFifo) {
  const std::string fifo = dir_ + "/fabtrace_ops.h.r0.p1.oplog";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::alarm(60);  // a watchdog for the old behaviour, never reached by the fixed one
    std::FILE* sink = std::fopen("/dev/null", "w");
    _exit(export_ops_csv(fifo, sink));
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "export hung on a FIFO (killed by signal "
                                 << (WIFSIGNALED(status) ? WTERMSIG(status) : 0) << ")";
  EXPECT_EQ(WEXITSTATUS(status), 1);
}

}  // namespace
}  // namespace fabtrace
