// The Cassini counter sampler inside the preload, against a fake cxi tree the
// test creates and advances while a real traced program runs.
#include <gtest/gtest.h>

#include <set>

#include "common/counter_csv.h"
#include "tests/integration/harness.h"
#include "tests/integration/sample_stepper.h"
#include "tests/unit/fake_cxi_tree.h"

namespace fabtrace::test {
namespace {

std::string counters_of_rank(const std::string& dir, const std::string& rank) {
  for (const auto& f : list_files(dir, "fabtrace_nic.", ".csv"))
    if (f.find(".r" + rank + ".p") != std::string::npos) return f;
  return "";
}

TEST(Counters, TracedRankSamplesItsNicOnTheReportClock) {
  SKIP_IF_RECORD_SESSION(kNeedsOwnSampler);
  FakeCxiTree tree;
  tree.populate_standard();
  const std::string dir = make_temp_dir("nic");
  // The tree moves one step per read of the watched counter; the ranks stay up
  // until 8 steps were read, so each rank's series exists whatever the load, and
  // at least one of the two (both sample cxi0) saw the counter change.
  SampleStepper stepper(tree, tree.telemetry_path("cxi0", "hni_sts_tx_ok_octets"), 8,
                        make_temp_dir("nic-release") + "/release");
  ASSERT_TRUE(stepper.watching()) << stepper.error();
  // Rank 0 is local rank 0: it samples cxi0 only.
  const RunResult r = run_sampled_tagged(tree, stepper, dir, 300);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(stepper.steps_taken(), 8);
  std::set<uint64_t> distinct;  // over both ranks

  for (const std::string rank : {"0", "1"}) {
    SCOPED_TRACE("rank " + rank);
    const auto reps = reports_of_rank(dir, rank);
    ASSERT_EQ(reps.size(), 1u);
    const std::string path = counters_of_rank(dir, rank);
    ASSERT_FALSE(path.empty()) << r.output;
    CounterSeries cs;
    std::string err;
    ASSERT_TRUE(read_counter_csv(path, &cs, &err)) << err;
    EXPECT_EQ(cs.rank, rank);
    ASSERT_EQ(cs.devices, std::vector<std::string>{"cxi0"});
    ASSERT_GT(cs.rows.size(), 0u);
    const int col = cs.column("cxi0:hni_sts_tx_ok_octets");
    ASSERT_GE(col, 0);
    // Every sampled value is one the tree wrote, and values never go back.
    uint64_t prev = 0;
    for (const auto& row : cs.rows) {
      const uint64_t v = row[static_cast<size_t>(col)];
      bool known = false;
      for (int k = 0; k <= FakeCxiTree::kMaxSteps && !known; ++k)
        known = v == tree.value_at("cxi0:hni_sts_tx_ok_octets", k);
      EXPECT_TRUE(known) << v;
      EXPECT_GE(v, prev);
      prev = v;
      distinct.insert(v);
    }
    // Sample times are CLOCK_MONOTONIC, the clock of the rank's report.
    const uint64_t t0 = reps[0].at("start_mono_ns").get<uint64_t>();
    const uint64_t t1 = t0 + static_cast<uint64_t>(reps[0].at("duration_s").get<double>() * 1e9);
    const int tcol = cs.column("t_mono_ns");
    ASSERT_GE(tcol, 0);
    EXPECT_GE(cs.rows.front()[static_cast<size_t>(tcol)] + 5000000, t0);
    // The sampler stops before the report takes its end time: the last sample
    // lies inside the run (the slack covers the microsecond rounding of
    // duration_s and the TSC-to-monotonic calibration, not scheduling).
    EXPECT_LE(cs.rows.back()[static_cast<size_t>(tcol)], t1 + 20000);
  }
  EXPECT_GE(distinct.size(), 2u) << "the samplers never saw the counter move";
}

// Where the node has no cxi devices, the sampler costs nothing and says nothing.
TEST(Counters, NoCxiNoFileNoNoise) {
  // With a session, the preload says it leaves the counters to it: noise.
  SKIP_IF_RECORD_SESSION("a preload that samples (or not) on its own");
  const std::string dir = make_temp_dir("nonic");
  const std::string empty = make_temp_dir("nocxi");
  const RunResult r = run(
      {FT_APP, "--prov", "tcp;ofi_rxm", "--test", "tagged", "--count", "20"},
      {{"FABTRACE_DIR", dir}, {"FABTRACE_CXI_SYSFS_ROOT", empty}, {"FABTRACE_CXI_RUN_ROOT", empty}},
      true, 240);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(list_files(dir, "fabtrace_nic.", "").empty());
  EXPECT_EQ(r.output.find("NIC counters"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("cxi"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace fabtrace::test
