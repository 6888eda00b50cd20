// Who made whom wait, with the kernel's cause: a chain of 4 ranks
// (tests/apps/wait_chain.cpp) under `fabtrace record`, its tail stopped with
// SIGSTOP for 200 ms in the measured round. The report names the stopped rank
// as the root of every wait, with the kernel's "stopped", and charges it the
// waits the ranks measured.
#include <gtest/gtest.h>

#include <string>

#include "tests/integration/harness.h"
#include "tests/integration/record_session.h"
#include "tests/integration/waits_truth.h"

namespace fabtrace::test {
namespace {

TEST(Record, AStoppedRankIsTheRootOfTheChainsWaitsWithTheKernelsCause) {
  REQUIRE_SESSION_SLOT();
  const std::string dir = make_temp_dir("rec-waits");
  const RunResult r = run({FABTRACE_CLI, "record", "-o", dir, "--", WAIT_CHAIN, "--provider",
                           "tcp;ofi_rxm", "--ranks", "4", "--delay", "stop", "--delay-ms", "200"},
                          {{"FABTRACE_PRELOAD", preload_list()},
                           {"FABTRACE_OPS_RANKS", "all"},
                           {"FABTRACE_OPS_MIN_BYTES", "0"},
                           {"FABTRACE_OPS_WINDOW", "mark:measured"}},
                          false, 240);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto waits = chain_waits(r.output, 2);
  ASSERT_EQ(waits.size(), 3u) << r.output;
  const Cli cli = report_cli(dir, dir + "/out");
  ASSERT_EQ(cli.rc, 0) << cli.err;
  const auto roots = root_lines(cli.out);
  ASSERT_FALSE(roots.empty()) << cli.out;
  const RootLine& root = roots[0];
  EXPECT_EQ(root.rank, 3) << cli.out;
  // Stopped is the largest part unless a loaded machine kept it waiting for a
  // CPU longer; the verdict names the stop either way.
  EXPECT_NE(root.cause.find("stopped (SIGSTOP or a debugger) "), std::string::npos) << cli.out;
  // The waits add up to what the ranks measured (1%), the stopped rank
  // carrying at least 90% of each (test_waits.cpp says why not all).
  double sum = 0;
  for (const auto& [k, ns] : waits) {
    ASSERT_TRUE(root.by_waiter.count(k)) << "r" << k << "\n" << cli.out;
    const double measured = static_cast<double>(ns);
    double charged = 0;
    for (const RootLine& x : roots)
      if (x.by_waiter.count(k)) charged += x.by_waiter.at(k);
    EXPECT_NEAR(charged, measured, 0.01 * measured) << "r" << k << "\n" << cli.out;
    EXPECT_GE(root.by_waiter.at(k), 0.9 * measured) << "r" << k << "\n" << cli.out;
    sum += root.by_waiter.at(k);
  }
  EXPECT_NEAR(root.cost_ns, sum, 0.001 * sum + 0.1e6) << cli.out;
}

}  // namespace
}  // namespace fabtrace::test
