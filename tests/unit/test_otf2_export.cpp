// The OTF2 archive of the synthetic multi-node job (2 nodes x 2 ranks, each
// host with its own CLOCK_MONOTONIC): the system tree, a location group per
// rank under its host, the thread and counter locations, every timeline record
// as an enter and a leave, the clock aligned across hosts; read back with
// otf2-print (skipped when it is not installed).
#include "userspace/report/otf2/otf2_export.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <regex>
#include <sstream>

#include "fixtures/synthetic_job.h"
#include "tests/support/require_program.h"

namespace fabtrace::report {
namespace {

std::string command_output(const std::string& cmd) {
  std::string out;
  if (std::FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
    ::pclose(p);
  }
  return out;
}

class Otf2Export : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(otf2_built())
        << "built without OTF2: scripts/install-deps installs libopen-trace-format2-dev";
    sj_ = test::make_synthetic_job();
    dir_ = test::make_fixture_dir("otf2");
    test::write_synthetic_job(sj_, dir_ + "/job", /*per_node_dirs=*/true);
    std::string err;
    ASSERT_TRUE(load_job(dir_ + "/job", &job_, &err)) << err;
  }
  void TearDown() override {
    if (!dir_.empty()) test::remove_tree(dir_);
  }
  test::SyntheticJob sj_;
  std::string dir_;
  Job job_;
};

TEST_F(Otf2Export, SyntheticMultiNodeJob) {
  std::string archive, err;
  Otf2Stats st;
  ASSERT_TRUE(write_otf2(job_, dir_ + "/out", &archive, &st, &err)) << err;
  EXPECT_EQ(archive, dir_ + "/out/otf2/trace.otf2");
  EXPECT_EQ(st.ranks, 4u);
  EXPECT_EQ(st.enters, 4 * sj_.oplog_ops_per_rank);
  EXPECT_EQ(st.leaves, st.enters);
  EXPECT_EQ(st.thread_locations, 4u);  // one traced thread per rank
  EXPECT_EQ(st.metric_events, 4u * static_cast<uint64_t>(sj_.opt.counter_samples));
  EXPECT_EQ(st.overlap_dropped, 0u);
  EXPECT_TRUE(st.warnings.empty());
  // Written again over the first: a fresh archive.
  ASSERT_TRUE(write_otf2(job_, dir_ + "/out", &archive, &st, &err)) << err;

  REQUIRE_PROGRAM("otf2-print", "otf2-tools");
  const std::string defs = command_output("otf2-print -G '" + archive + "' 2>&1");
  EXPECT_EQ(defs.find("warning"), std::string::npos) << defs;
  for (const char* host : {"node01", "node02"})
    EXPECT_TRUE(std::regex_search(
        defs, std::regex(std::string("SYSTEM_TREE_NODE +[0-9]+  Name: \"") + host +
                         "\" <[0-9]+>, Class: \"node\" <[0-9]+>, "
                         "Parent: \"machine::job\"")))
        << host;
  for (int g = 0; g < 4; ++g) {
    const ProcessReport& r = sj_.reports[g];
    const std::string group = "rank " + r.rank + " pid " + std::to_string(r.pid);
    EXPECT_TRUE(std::regex_search(
        defs, std::regex("LOCATION_GROUP +[0-9]+  Name: \"" + group +
                         "\" <[0-9]+>, Type: PROCESS, Parent: \"node::" + r.host + "\"")))
        << group;
    // Its thread (the synthetic ops' tid is the pid) and its counters.
    EXPECT_TRUE(std::regex_search(
        defs, std::regex("LOCATION +[0-9]+  Name: \"tid " + std::to_string(r.pid) +
                         "\" <[0-9]+>, Type: CPU_THREAD, # Events: [0-9]+, Group: \"" + group)))
        << group;
    EXPECT_TRUE(std::regex_search(
        defs, std::regex("LOCATION +[0-9]+  Name: \"NIC counters\" <[0-9]+>, Type: METRIC, # "
                         "Events: " +
                         std::to_string(sj_.opt.counter_samples) + ", Group: \"" + group)))
        << group;
  }
  // The hosts' clocks are 48000 s apart; aligned, the trace spans the job's ~10.5 s.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(defs, m, std::regex("Length: ([0-9]+)"))) << defs;
  EXPECT_LT(std::stoull(m[1]), 12000000000ull);
  const std::string events = command_output("otf2-print '" + archive + "' 2>&1");
  std::istringstream in(events);
  std::string line;
  uint64_t enters = 0, metrics = 0;
  while (std::getline(in, line)) {
    if (line.rfind("ENTER ", 0) == 0) ++enters;
    if (line.rfind("METRIC ", 0) == 0) ++metrics;
  }
  EXPECT_EQ(enters, 4 * sj_.oplog_ops_per_rank);
  EXPECT_EQ(metrics, st.metric_events);
}

TEST_F(Otf2Export, OutputDirectoryThatCannotBeMade) {
  std::string archive, err;
  Otf2Stats st;
  EXPECT_FALSE(write_otf2(job_, "/proc/none/out", &archive, &st, &err));
  EXPECT_FALSE(err.empty());
}

}  // namespace
}  // namespace fabtrace::report
