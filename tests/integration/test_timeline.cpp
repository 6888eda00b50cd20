// The per-op timeline on real providers: what the preload streams to the oplog
// file, read back through `fabtrace export ops`.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/integration/cli_csv.h"
#include "tests/integration/harness.h"

namespace fabtrace::test {
namespace {

struct Row {
  uint64_t start, end, dur, bytes, error, tid;
  std::string op, local, remote;
};

// Exports one oplog through the CLI and parses its CSV.
std::vector<Row> export_rows(const std::string& oplog, std::string* stderr_out = nullptr) {
  const RunResult r = run({FABTRACE_CLI, "export", "ops", oplog, "--csv"}, {}, false);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  if (stderr_out) *stderr_out = r.output;
  std::vector<Row> rows;
  bool header = false;
  for (const std::string& line : csv_data_lines(
           r.output, "start_ns,end_ns,dur_ns,op,bytes,local_nic,remote_nic,error,tid,size_known",
           &header)) {
    if (line.find(',') == std::string::npos || line.rfind("[fabtrace]", 0) == 0) continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string x;
    while (std::getline(ss, x, ',')) f.push_back(x);
    if (f.size() != 10) continue;
    rows.push_back(Row{std::stoull(f[0]), std::stoull(f[1]), std::stoull(f[2]), std::stoull(f[4]),
                       std::stoull(f[7]), std::stoull(f[8]), f[3], f[5], f[6]});
  }
  EXPECT_TRUE(header) << r.output;
  return rows;
}

std::string oplog_of_rank(const std::string& dir, const std::string& rank) {
  auto files = list_files(dir, "fabtrace_ops.", ".oplog");
  for (const auto& f : files)
    if (f.find(".r" + rank + ".p") != std::string::npos) return f;
  return "";
}

uint64_t timed_total(const nlohmann::json& rep) {
  uint64_t n = 0;
  for (const auto& kv : op_totals(rep)) n += kv.second.count + kv.second.errors;
  return n;
}

RunResult run_app(const std::string& dir, const std::string& test, const Env& extra,
                  const std::vector<std::string>& more = {}) {
  std::vector<std::string> argv = {FT_APP, "--prov", "tcp;ofi_rxm", "--test", test};
  argv.insert(argv.end(), more.begin(), more.end());
  Env env = {{"FABTRACE_DIR", dir}};
  env.insert(env.end(), extra.begin(), extra.end());
  return run(argv, env, true, 240);
}

// Every completed op of a selected rank becomes one row, with its kind, size,
// link and monotonic times inside the run.
TEST(Timeline, EveryCompletedOpIsExported) {
  const std::string dir = make_temp_dir("tl-all");
  const RunResult r =
      run_app(dir, "tagged", {{"FABTRACE_OPS_RANKS", "all"}, {"FABTRACE_OPS_MIN_BYTES", "0"}},
              {"--count", "200", "--size", "2048"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const std::string rank : {"0", "1"}) {
    SCOPED_TRACE("rank " + rank);
    const auto reps = reports_of_rank(dir, rank);
    ASSERT_EQ(reps.size(), 1u);
    const std::string f = oplog_of_rank(dir, rank);
    ASSERT_FALSE(f.empty());
    const auto rows = export_rows(f);
    EXPECT_EQ(rows.size(), timed_total(reps[0]));
    std::map<std::string, uint64_t> by_op;
    const uint64_t t0 = reps[0].at("start_mono_ns").get<uint64_t>();
    const uint64_t t1 =
        t0 + static_cast<uint64_t>(reps[0].at("duration_s").get<double>() * 1e9) + 1000000;
    for (const Row& row : rows) {
      ++by_op[row.op];
      EXPECT_LE(row.start, row.end);
      EXPECT_EQ(row.dur, row.end - row.start);
      EXPECT_GE(row.start + 1000000, t0);  // calibration residual allowance: 1 ms
      EXPECT_LE(row.end, t1);
      EXPECT_EQ(row.bytes, 2048u);
      EXPECT_NE(row.local, "?");
      EXPECT_GT(row.tid, 0u);
    }
    for (const auto& kv : op_totals(reps[0]))
      EXPECT_EQ(by_op[kv.first], kv.second.count + kv.second.errors) << kv.first;
  }
}

// FABTRACE_OPS_RANKS selects ranks; the byte floor drops small ops but never errors.
TEST(Timeline, RankSelectionAndByteFloor) {
  const std::string dir = make_temp_dir("tl-sel");
  const RunResult r = run_app(dir, "cancel", {{"FABTRACE_OPS_RANKS", "1"}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(oplog_of_rank(dir, "0").empty());
  const std::string f = oplog_of_rank(dir, "1");
  ASSERT_FALSE(f.empty());
  const auto rows = export_rows(f);
  const auto reps = reports_of_rank(dir, "1");
  ASSERT_EQ(reps.size(), 1u);
  uint64_t errors = 0;
  for (const auto& kv : op_totals(reps[0])) errors += kv.second.errors;
  ASSERT_GT(errors, 0u);
  // The cancel test's messages are small: only the cancelled (error) ops pass the 64 KiB floor.
  EXPECT_EQ(rows.size(), errors);
  for (const Row& row : rows) EXPECT_EQ(row.error, 1u);
}

TEST(Timeline, NicFilterMatchesOrSaysSoLoudly) {
  {
    const std::string dir = make_temp_dir("tl-nic");
    const RunResult r =
        run_app(dir, "tagged",
                {{"FABTRACE_OPS_NIC", "fi_sockaddr_in://"}, {"FABTRACE_OPS_MIN_BYTES", "0"}});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    for (const std::string rank : {"0", "1"}) {
      const auto reps = reports_of_rank(dir, rank);
      ASSERT_EQ(reps.size(), 1u);
      EXPECT_EQ(export_rows(oplog_of_rank(dir, rank)).size(), timed_total(reps[0]));
    }
  }
  {
    const std::string dir = make_temp_dir("tl-nonic");
    const RunResult r = run_app(
        dir, "tagged", {{"FABTRACE_OPS_NIC", "0xdeadbeef"}, {"FABTRACE_OPS_MIN_BYTES", "0"}});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("0 ops matched FABTRACE_OPS_NIC=0xdeadbeef"), std::string::npos)
        << r.output;
    EXPECT_TRUE(export_rows(oplog_of_rank(dir, "0")).empty());
  }
}

// A writer that cannot keep up (tiny buffer, no flush until exit) drops and
// counts; the program is never blocked and its result is unchanged.
TEST(Timeline, WriterBehindDropsAndCounts) {
  const std::string dir = make_temp_dir("tl-drop");
  const RunResult r = run_app(dir, "tagged",
                              {{"FABTRACE_OPS_RANKS", "0"},
                               {"FABTRACE_OPS_MIN_BYTES", "0"},
                               {"FABTRACE_OPS_MB", "1"},
                               {"FABTRACE_OPS_FLUSH_MS", "60000"}},
                              {"--count", "8000", "--size", "64"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("per-op records dropped"), std::string::npos) << r.output;
  const auto reps = reports_of_rank(dir, "0");
  ASSERT_EQ(reps.size(), 1u);
  const auto rows = export_rows(oplog_of_rank(dir, "0"));
  EXPECT_LT(rows.size(), timed_total(reps[0]));
  EXPECT_GT(rows.size(), 10000u);  // 1 MiB holds ~26k records: what fit was kept
}

// Killed mid-run: the file reads up to its last flushed block.
TEST(Timeline, KilledProcessLeavesAReadableFile) {
  const std::string dir = make_temp_dir("tl-kill");
  const int pid = spawn(
      {FT_APP, "--prov", "tcp;ofi_rxm", "--test", "pingpong", "--count", "1000000", "--size", "64"},
      {{"FABTRACE_DIR", dir},
       {"FABTRACE_OPS_RANKS", "all"},
       {"FABTRACE_OPS_MIN_BYTES", "0"},
       {"FABTRACE_OPS_FLUSH_MS", "50"}},
      dir + "/app.log");
  // Killed once a block has reached the file (not after a fixed time: under load
  // the ranks may not have started by then).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string f = oplog_of_rank(dir, "0");
    // Quietly: an export of a file not yet written may fail, which is no failure here.
    const RunResult e =
        f.empty() ? RunResult{} : run({FABTRACE_CLI, "export", "ops", f, "--csv"}, {}, false);
    std::istringstream lines(e.output);
    std::string line;
    bool row = false;  // a data row: starts with the op's start time
    while (!row && std::getline(lines, line)) row = !line.empty() && isdigit(line[0]);
    if (e.exit_code == 0 && row) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
  wait_for(pid, 30);
  const std::string f = oplog_of_rank(dir, "0");
  ASSERT_FALSE(f.empty());
  const auto rows = export_rows(f);
  EXPECT_GT(rows.size(), 0u);
  for (const Row& row : rows) EXPECT_LE(row.start, row.end);
}

}  // namespace
}  // namespace fabtrace::test
