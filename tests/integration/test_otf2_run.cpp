// fabtrace report --otf2 on a real traced run (ft_app's marks family over
// tcp;ofi_rxm, per-op timelines on both ranks, NIC counters sampled from a fake
// cxi tree), read back with otf2-print: one enter and one leave per timeline
// record, the marks, the counters as metrics, locations grouped by rank.
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <sstream>

#include "common/counter_csv.h"
#include "common/oplog_file.h"
#include "tests/integration/harness.h"
#include "tests/integration/sample_stepper.h"
#include "tests/support/require_program.h"
#include "userspace/report/otf2/otf2_export.h"

namespace fabtrace::test {
namespace {

uint64_t timeline_records(const std::string& dir, uint64_t* marks) {
  uint64_t ops = 0;
  for (const auto& f : list_files(dir, "fabtrace_ops.", ".oplog")) {
    OplogReader r;
    std::string err;
    EXPECT_TRUE(r.open(f, &err) && r.scan(&err)) << err;
    ops += r.ops_read();
    *marks += r.marks_read();
  }
  return ops;
}

struct Printed {
  std::map<std::string, uint64_t> enters, leaves;  // by region name
  uint64_t metrics = 0;
  std::vector<std::string> defs;  // LOCATION / LOCATION_GROUP / SYSTEM_TREE_NODE lines
};

// Region name of an event line: Region: "fi_tsend" <13>
std::string region_of(const std::string& line) {
  const size_t a = line.find("Region: \"");
  if (a == std::string::npos) return "";
  const size_t b = line.find('"', a + 9);
  return line.substr(a + 9, b - a - 9);
}

// otf2-print's events, then (-G) its global definitions.
Printed otf2_print(const std::string& archive) {
  Printed p;
  const RunResult events = run({"otf2-print", archive}, {}, false);
  const RunResult defs = run({"otf2-print", "-G", archive}, {}, false);
  EXPECT_EQ(events.exit_code, 0) << events.output;
  EXPECT_EQ(defs.exit_code, 0) << defs.output;
  const std::string all = events.output + defs.output;
  EXPECT_EQ(all.find("warning"), std::string::npos) << all.substr(0, 2000);
  std::istringstream in(all);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("ENTER ", 0) == 0) ++p.enters[region_of(line)];
    if (line.rfind("LEAVE ", 0) == 0) ++p.leaves[region_of(line)];
    if (line.rfind("METRIC ", 0) == 0) ++p.metrics;
    if (line.rfind("LOCATION", 0) == 0 || line.rfind("SYSTEM_TREE_NODE", 0) == 0)
      p.defs.push_back(line);
  }
  return p;
}

TEST(Otf2Run, EveryTimelineRecordIsAnEnterAndALeave) {
  SKIP_IF_RECORD_SESSION(kNeedsOwnSampler);
  ASSERT_TRUE(report::otf2_built())
      << "built without OTF2: scripts/install-deps installs libopen-trace-format2-dev";
  REQUIRE_PROGRAM("otf2-print", "otf2-tools");
  const std::string dir = make_temp_dir("otf2-run");
  FakeCxiTree tree;
  tree.populate_standard();
  // Sampled every 5 ms while the ranks run (not held for a number of samples:
  // a `fabtrace record` session elsewhere on the node, e.g. a concurrent
  // test, takes the sampling over; the metrics are then compared with none).
  const RunResult r = run({FT_APP, "--prov", "tcp;ofi_rxm", "--test", "marks", "--count", "20"},
                          sampled_env(tree, {{"FABTRACE_DIR", dir},
                                             {"FABTRACE_OPS_RANKS", "all"},
                                             {"FABTRACE_OPS_MIN_BYTES", "0"}}),
                          true, 240);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  uint64_t samples = 0, counter_files = 0;
  for (const auto& f : list_files(dir, "fabtrace_nic.", ".csv")) {
    CounterSeries cs;
    std::string err;
    ASSERT_TRUE(read_counter_csv(f, &cs, &err)) << err;
    samples += cs.rows.size();
    ++counter_files;
  }
  const RunResult rep = run({FABTRACE_CLI, "report", dir, "-o", dir + "/out", "--otf2"}, {}, false);
  ASSERT_EQ(rep.exit_code, 0) << rep.output;
  const std::string archive = dir + "/out/otf2/trace.otf2";
  EXPECT_NE(rep.output.find(archive), std::string::npos) << rep.output;

  uint64_t marks = 0;
  const uint64_t records = timeline_records(dir, &marks);
  ASSERT_GT(records, 0u);
  const Printed p = otf2_print(archive);
  uint64_t op_enters = 0, op_leaves = 0;
  for (const auto& kv : p.enters)
    if (kv.first.rfind("fi_", 0) == 0) op_enters += kv.second;
  for (const auto& kv : p.leaves)
    if (kv.first.rfind("fi_", 0) == 0) op_leaves += kv.second;
  EXPECT_EQ(op_enters, records);
  EXPECT_EQ(op_leaves, records);
  // Both ranks marked 20 iterations, each with an "exchange" phase, and "done".
  EXPECT_EQ(p.enters.at("exchange"), 40u);
  EXPECT_EQ(p.leaves.at("exchange"), 40u);
  EXPECT_EQ(p.enters.at("iteration 7"), 2u);
  EXPECT_EQ(p.enters.at("done"), 2u);
  EXPECT_EQ(p.metrics, samples);  // the counters: one metric event per sample row
  // Locations grouped by rank: a thread location and a metric location in each group.
  // (and, where the timelines matched messages, a "messages" location per rank)
  size_t groups = 0, threads = 0, metric_locs = 0, message_locs = 0;
  for (const std::string& d : p.defs) {
    if (d.rfind("LOCATION_GROUP", 0) == 0) ++groups;
    const bool messages = d.find("\"messages\"") != std::string::npos;
    message_locs += d.rfind("LOCATION ", 0) == 0 && messages;
    if (d.rfind("LOCATION ", 0) == 0 && d.find("Type: CPU_THREAD") != std::string::npos &&
        d.find("marks") == std::string::npos && d.find("lane") == std::string::npos && !messages)
      ++threads;
    if (d.rfind("LOCATION ", 0) == 0 && d.find("Type: METRIC") != std::string::npos) ++metric_locs;
  }
  EXPECT_EQ(groups, 2u);
  EXPECT_EQ(threads, 2u);  // one traced thread per rank
  EXPECT_TRUE(message_locs == 0 || message_locs == 2u) << message_locs;
  EXPECT_EQ(metric_locs, counter_files);
}

}  // namespace
}  // namespace fabtrace::test
