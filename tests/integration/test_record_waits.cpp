// Who made whom wait, with the kernel's cause: a chain of 4 ranks
// (tests/apps/wait_chain.cpp) under `fabtrace record`, its tail stopped with
// SIGSTOP for 200 ms in the measured round. The report names the stopped rank
// as the root of every wait, with the kernel's "stopped", and charges it the
// waits the ranks measured. And the demo's planted stop (scripts/demo-record):
// the client's gap reads as waiting for the stopped server, with the cause,
// in the summary and as a flow in the Perfetto trace.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "fixtures/perfetto_decode.h"
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

// The lines of the summary's "longest CQ poll gaps" under each gap of a rank:
// "host rK CQ#N" -> the lines under it.
std::map<std::string, std::vector<std::string>> gap_lines(const std::string& summary) {
  std::map<std::string, std::vector<std::string>> out;
  std::istringstream in(summary);
  std::string line, cur;
  bool in_section = false;
  const std::regex gap("^  (\\S+ r\\d+ CQ#\\d+)  .*");
  std::smatch m;
  while (std::getline(in, line)) {
    if (line.rfind("longest CQ poll gaps", 0) == 0) {
      in_section = true;
      continue;
    }
    if (!in_section) continue;
    if (line.empty() || line[0] != ' ') break;
    if (std::regex_match(line, m, gap)) {
      cur = m[1];
      out[cur];
    } else if (!cur.empty()) {
      out[cur].push_back(line);
    }
  }
  return out;
}

// The demo's node-wide run, as scripts/demo runs it: fi_pingpong over
// tcp;ofi_rxm on loopback under a session, the server (rank 1) stopped with
// SIGSTOP while the client (rank 0) polls for its pong. The stop is 1 s here
// (the demo's is 200 ms): the summary shows each CQ's longest gap, and on a
// loaded machine a preemption may outlast 200 ms. The client's gap over the
// stop says it waited for the server, stopped; the server is a root of the
// client's waiting, charged at least 750 ms of it (the stop less the time the
// client took to take the last pong and send its ping, which a loaded machine
// stretches), with the stop as its cause; and in the Perfetto trace a flow
// runs from the client's wait to the server's "root cause: stopped" instant.
TEST(Record, DemoClientWaitsForTheStoppedServer) {
  REQUIRE_SESSION_SLOT();
  const std::string dir = make_temp_dir("rec-demo") + "/record";
  const RunResult r = run(
      {"bash", DEMO_RECORD, BUILD_DIR, dir},
      {{"FABTRACE_DEMO_PRELOAD", preload_list()}, {"FABTRACE_DEMO_STOP_MS", "1000"}}, false, 600);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const size_t at = r.output.find("== fabtrace report ");
  ASSERT_NE(at, std::string::npos) << r.output;
  const std::string summary = r.output.substr(at);
  // The client's gaps (its transmit CQ and its receive CQ both span the stop)
  // whose line under them names whom they waited for, and the kernel's verdict
  // of the server then (stopped is its largest part unless a loaded machine
  // kept it waiting for a CPU longer; the verdict names the stop either way).
  const std::regex waited(
      "^      waiting for (\\S+) r1 \\(\\1 r1 .*stopped \\(SIGSTOP or a debugger\\) .*\\)$");
  size_t named = 0;
  for (const auto& [gap, lines] : gap_lines(summary)) {
    if (gap.find(" r0 CQ#") == std::string::npos) continue;
    for (const std::string& l : lines) named += std::regex_match(l, waited);
  }
  EXPECT_GE(named, 1u) << summary;
  const auto roots = root_lines(summary);
  const RootLine* server = nullptr;
  for (const RootLine& line : roots)
    if (line.rank == 1) server = &line;
  ASSERT_NE(server, nullptr) << summary;
  // The stop is its cause, or, where a loaded machine's preemptions of it
  // cost more, among its other causes with at least 750 ms.
  std::smatch also;
  const bool first = server->cause.rfind("stopped (SIGSTOP or a debugger) ", 0) == 0;
  const bool listed =
      std::regex_search(server->cause, also, std::regex("; also .*\\bstopped ([0-9.]+ [a-z]+)")) &&
      parse_duration_ns(also[1]) >= 750e6;
  EXPECT_TRUE(first || listed) << summary;
  ASSERT_TRUE(server->by_waiter.count(0)) << summary;
  EXPECT_GE(server->by_waiter.at(0), 750e6) << summary;

  // Perfetto: the client's wait slice flows to the server's root instant.
  const Decoded d = decode_trace(dir + "/report/trace.pftrace");
  ASSERT_TRUE(d.ok) << d.problem;
  const auto process_of = [&d](uint64_t track) { return process_name_of(d, track); };
  std::map<uint64_t, const TraceEvent*> ends;
  for (const TraceEvent& e : d.events)
    for (uint64_t f : e.flow_ends) ends[f] = &e;
  // Every wait's flow ends at a root's instant; the client's waits over the
  // stop flow to the server's (a loaded machine adds waits of other roots).
  size_t to_stop = 0;
  for (const TraceEvent& e : d.events) {
    if (e.type != 1 || e.name.rfind("waiting for rank 1 ", 0) != 0) continue;
    if (process_of(e.track).rfind("rank 0 ", 0) != 0) continue;
    for (uint64_t f : e.flows) {
      ASSERT_TRUE(ends.count(f)) << "flow " << f << " never ends";
      const TraceEvent& to = *ends.at(f);
      EXPECT_EQ(to.name.rfind("root cause: ", 0), 0u) << to.name;
      EXPECT_GE(to.ts, e.ts);
      to_stop += process_of(to.track).rfind("rank 1 ", 0) == 0 &&
                 to.name.find("stopped (SIGSTOP or a debugger) ") != std::string::npos;
    }
  }
  EXPECT_GE(to_stop, 1u) << summary;
}

}  // namespace
}  // namespace fabtrace::test
