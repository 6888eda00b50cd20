// The slowest ops of `fabtrace report` on a real run: ft_app's stream family
// with --touch-mb makes rank 0's send of round trip #100 wait for 256 MiB of
// page faults, so that send is the job's slowest op, known in advance.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "common/op_kinds.h"
#include "common/oplog_file.h"
#include "tests/integration/harness.h"

namespace fabtrace::test {
namespace {

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> f;
  std::stringstream ss(line);
  std::string x;
  while (std::getline(ss, x, ',')) f.push_back(x);
  return f;
}

// The start (CLOCK_MONOTONIC ns) of rank `rank`'s n-th fi_tsend by start time.
int64_t nth_send_start(const std::string& dir, const std::string& rank, size_t n) {
  std::vector<int64_t> starts;
  for (const auto& f : list_files(dir, "fabtrace_ops.", ".oplog")) {
    if (f.find(".r" + rank + ".p") == std::string::npos) continue;
    OplogReader r;
    std::string err;
    EXPECT_TRUE(r.open(f, &err) && r.scan(&err)) << err;
    const OplogCalib cal = r.calib();
    r.read_all(
        [&](const oplog::OpEntry* e, size_t k) {
          for (size_t i = 0; i < k; ++i) {
            int64_t t = 0;
            if (e[i].kind == static_cast<uint8_t>(OpKind::kTsend) &&
                cal.mono_ns_checked(e[i].start_ticks, &t))
              starts.push_back(t);
          }
        },
        &err);
  }
  std::sort(starts.begin(), starts.end());
  return n < starts.size() ? starts[n] : -1;
}

TEST(SlowestOpsRun, ThePlantedSlowSendComesFirst) {
  const std::string dir = make_temp_dir("slowest-run");
  const RunResult r = run(
      {FT_APP, "--prov", "tcp;ofi_rxm", "--test", "stream", "--count", "300", "--touch-mb", "256"},
      {{"FABTRACE_DIR", dir}, {"FABTRACE_OPS_RANKS", "all"}, {"FABTRACE_OPS_MIN_BYTES", "0"}}, true,
      240);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string out = dir + "/out";
  const RunResult rep = run({FABTRACE_CLI, "report", dir, "-o", out, "--top", "3"}, {}, false);
  ASSERT_EQ(rep.exit_code, 0) << rep.output;
  EXPECT_NE(rep.output.find("slowest ops (per-op timelines"), std::string::npos) << rep.output;
  EXPECT_NE(rep.output.find("slowest receives"), std::string::npos) << rep.output;
  EXPECT_NE(rep.output.find("timeline  2 ranks the whole run (1,200 ops)"), std::string::npos)
      << rep.output;

  std::ifstream csv(out + "/slowest_ops.csv");
  ASSERT_TRUE(csv) << "no slowest_ops.csv";
  std::string line;
  std::getline(csv, line);
  const std::vector<std::string> head = split(line);
  std::vector<std::vector<std::string>> ops, recvs;
  while (std::getline(csv, line)) (line.rfind("op,", 0) == 0 ? ops : recvs).push_back(split(line));
  ASSERT_EQ(ops.size(), 3u);
  ASSERT_EQ(recvs.size(), 3u);
  const auto col = [&](const std::vector<std::string>& row, const std::string& name) {
    const size_t i = std::find(head.begin(), head.end(), name) - head.begin();
    return i < row.size() ? row[i] : std::string();
  };
  // Slowest first; the first is rank 0's fi_tsend of round trip #100.
  EXPECT_EQ(col(ops[0], "rank"), "0");
  EXPECT_EQ(col(ops[0], "op"), "fi_tsend");
  EXPECT_EQ(std::stoll(col(ops[0], "start_mono_ns")), nth_send_start(dir, "0", 100));
  for (size_t i = 1; i < ops.size(); ++i)
    EXPECT_GE(std::stod(col(ops[i - 1], "dur_ns")), std::stod(col(ops[i], "dur_ns")));
  // Its ratio is to the p50 of its row in links.csv.
  const double p50 = std::stod(col(ops[0], "row_p50_ns"));
  EXPECT_GT(p50, 0);
  EXPECT_NEAR(std::stod(col(ops[0], "ratio_to_p50")), std::stod(col(ops[0], "dur_ns")) / p50,
              0.01 * std::stod(col(ops[0], "ratio_to_p50")));
  for (const auto& rv : recvs) EXPECT_EQ(col(rv, "op"), "fi_trecv");

  const std::string html = slurp(out + "/report.html");
  EXPECT_NE(html.find("id=\"slowest-ops\""), std::string::npos);
  EXPECT_NE(html.find("https://ui.perfetto.dev/?visStart=" +
                      std::to_string(std::stoll(col(ops[0], "start_wall_ns")) -
                                     static_cast<int64_t>(std::stod(col(ops[0], "dur_ns"))))),
            std::string::npos);
}

}  // namespace
}  // namespace fabtrace::test
