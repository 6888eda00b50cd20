// Who made whom wait: `fabtrace report`'s root causes of waiting against the
// waits that a chain of ranks measured itself (tests/apps/wait_chain.cpp):
// ranks N-1 -> ... -> 0, each receiving from the next and sending to the
// previous, one rank delayed by a planted sleep in the measured round.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cmath>

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "fixtures/perfetto_decode.h"
#include "tests/integration/harness.h"
#include "tests/integration/waits_truth.h"

namespace fabtrace::test {
namespace {

Env chain_env(const std::string& dir) {
  return {{"FABTRACE_DIR", dir},
          {"FABTRACE_OPS_RANKS", "all"},
          {"FABTRACE_OPS_MIN_BYTES", "0"},
          {"FABTRACE_OPS_WINDOW", "mark:measured"}};
}

class WaitChain : public ::testing::TestWithParam<const char*> {};

// Runs the chain with rank `delayed` sleeping 200 ms in the measured round
// (the last of 3); the summary's roots and the program's waits of that round.
void run_chain(const char* prov, int delayed, const char* delay, const std::string& tag,
               std::vector<RootLine>* roots, std::map<int, int64_t>* waits, std::string* summary,
               std::string* out_dir = nullptr) {
  const std::string dir = make_temp_dir(tag);
  if (out_dir) *out_dir = dir + "/out";
  const RunResult r = run({WAIT_CHAIN, "--provider", prov, "--ranks", "4", "--delay", delay,
                           "--delay-rank", std::to_string(delayed), "--delay-ms", "200"},
                          chain_env(dir));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  *waits = chain_waits(r.output, 2);
  ASSERT_EQ(waits->size(), 3u) << r.output;
  const Cli cli = report_cli(dir, dir + "/out");
  ASSERT_EQ(cli.rc, 0) << cli.err;
  *summary = cli.out;
  *roots = root_lines(cli.out);
}

// Each rank that waited because of the root: the report accounts for its whole
// wait (the parts charged to every root named) within 1% of what it measured
// (its own wait runs from its receive's post to the completion read), and the
// root carries at least 90% of it: on a loaded machine a rank in between can
// be held up too (descheduled between its receive and its send), and that part
// is rightly its own. The root's cost is the sum of what it was charged.
void expect_attributed(const std::vector<RootLine>& roots, const std::map<int, int64_t>& waits,
                       const std::vector<int>& waiters, const std::string& summary) {
  const RootLine& root = roots[0];
  double sum = 0;
  for (int k : waiters) {
    ASSERT_TRUE(root.by_waiter.count(k)) << "r" << k << " not listed\n" << summary;
    const double measured = static_cast<double>(waits.at(k));
    double charged = 0;
    for (const RootLine& r : roots)
      if (r.by_waiter.count(k)) charged += r.by_waiter.at(k);
    EXPECT_NEAR(charged, measured, 0.01 * measured) << "r" << k << "\n" << summary;
    EXPECT_GE(root.by_waiter.at(k), 0.9 * measured) << "r" << k << "\n" << summary;
    sum += root.by_waiter.at(k);
  }
  EXPECT_EQ(root.by_waiter.size(), waiters.size()) << summary;
  EXPECT_NEAR(root.cost_ns, sum, 0.001 * sum + 0.1e6) << summary;
  EXPECT_EQ(root.waits, waiters.size()) << summary;
}

// The tail of a 4-rank chain sleeps: r2 waits on it, r1 on r2, r0 on r1, and
// every one of those waits has the tail as its root.
TEST_P(WaitChain, TheDelayedTailIsTheRootOfEveryWait) {
  std::vector<RootLine> roots;
  std::map<int, int64_t> waits;
  std::string summary;
  run_chain(GetParam(), 3, "sleep", "waits-tail", &roots, &waits, &summary);
  if (HasFatalFailure()) return;
  for (const auto& [k, ns] : waits) EXPECT_GE(ns, 190000000) << "r" << k << " did not wait";
  ASSERT_FALSE(roots.empty()) << summary;
  EXPECT_EQ(roots[0].rank, 3) << summary;
  EXPECT_EQ(roots[0].cause.rfind("late to post", 0), 0u) << summary;
  expect_attributed(roots, waits, {0, 1, 2}, summary);
}

// r2 delayed in the middle: r1 waits on r2 and r0 on r1; the root is r2, not
// r1 (whose own wait on r2 was the delay it passed on), and r3 waits on no one.
TEST_P(WaitChain, TheRootOfAChainIsItsFirstRankNotWaiting) {
  std::vector<RootLine> roots;
  std::map<int, int64_t> waits;
  std::string summary;
  run_chain(GetParam(), 2, "sleep", "waits-mid", &roots, &waits, &summary);
  if (HasFatalFailure()) return;
  ASSERT_FALSE(roots.empty()) << summary;
  EXPECT_EQ(roots[0].rank, 2) << summary;
  expect_attributed(roots, waits, {0, 1}, summary);
  for (size_t i = 1; i < roots.size(); ++i)
    EXPECT_LT(roots[i].cost_ns, 20e6) << "a second root\n" << summary;
}

// No planted delay: no false root. A loaded machine can still hold a rank up
// (descheduled for 100 ms before it posts): then the programs measured that
// wait too. So no root costs more than the programs waited in all (+1%), and
// when they waited under 5 ms in all, no root costs 5 ms.
TEST_P(WaitChain, NoPlantedDelayNoFalseRoot) {
  std::vector<RootLine> roots;
  std::map<int, int64_t> waits;
  std::string summary;
  run_chain(GetParam(), 3, "none", "waits-none", &roots, &waits, &summary);
  if (HasFatalFailure()) return;
  double measured = 0;
  for (const auto& [k, ns] : waits) measured += static_cast<double>(ns);
  double charged = 0;
  for (const RootLine& r : roots) charged += r.cost_ns;
  EXPECT_LE(charged, measured * 1.01 + 1e6) << summary;
  if (measured < 5e6) {
    for (const RootLine& r : roots) EXPECT_LT(r.cost_ns, 5e6) << summary;
  }
}

// `fabtrace report --mpi` (the timelines matched on process 0) names the same
// roots with the same costs as the single process.
TEST(WaitChainMpi, TheSameRootsAsOneProcess) {
  if (!FABTRACE_HAVE_MPI) GTEST_SKIP() << "fabtrace was built without MPI";
  const std::string dir = make_temp_dir("waits-mpi");
  const RunResult r = run(
      {WAIT_CHAIN, "--provider", "shm", "--ranks", "4", "--delay", "sleep", "--delay-ms", "100"},
      chain_env(dir));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Cli single = report_cli(dir, dir + "/out");
  ASSERT_EQ(single.rc, 0) << single.err;
  const RunResult mpi =
      run({MPIRUN, "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,vader", "-np",
           "2", FABTRACE_CLI, "report", dir, "-o", dir + "/out-mpi", "--mpi"},
          {}, false, 240);
  ASSERT_EQ(mpi.exit_code, 0) << mpi.output;
  const auto a = root_lines(single.out), b = root_lines(mpi.output);
  ASSERT_FALSE(a.empty()) << single.out;
  ASSERT_EQ(a.size(), b.size()) << mpi.output;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].rank, b[i].rank);
    EXPECT_EQ(a[i].cost_ns, b[i].cost_ns);
    EXPECT_EQ(a[i].by_waiter, b[i].by_waiter);
    EXPECT_EQ(a[i].cause, b[i].cause);
  }
}

// The Perfetto trace: a flow from each send to its matched receive, and one
// from each wait to its root. The measured round's timeline holds 3 messages
// (r3 -> r2 -> r1 -> r0), so 3 message flows, each starting on an fi_tsend
// slice of 64 bytes of rank k and ending on an fi_trecv slice of 64 bytes of
// rank k - 1. r3 sleeps before it sends: r2, r1 and r0 each wait (the programs
// measured it), so 3 wait flows, each starting on a "waiting for rank k + 1"
// slice of rank k that lasts as long as the wait the rank measured (within
// 1%), and all three ending on r3's "root cause: late to post" instant, after
// the waits began.
TEST_P(WaitChain, PerfettoFlowsFromEachSendToItsReceiveAndEachWaitToItsRoot) {
  std::vector<RootLine> roots;
  std::map<int, int64_t> waits;
  std::string summary, out;
  run_chain(GetParam(), 3, "sleep", "waits-flows", &roots, &waits, &summary, &out);
  if (HasFatalFailure()) return;
  const Decoded d = decode_trace(out + "/trace.pftrace");
  ASSERT_TRUE(d.ok) << d.problem;
  EXPECT_EQ(check_tracks(d), "");
  // Each track's rank: its process descriptor's pid, up the parents.
  const auto process_of = [&d](uint64_t track) { return process_name_of(d, track); };
  const auto rank_of = [&](uint64_t track) {
    const std::string p = process_of(track);
    EXPECT_EQ(p.rfind("rank ", 0), 0u) << p;
    return p.rfind("rank ", 0) == 0 ? std::stoi(p.substr(5)) : -1;
  };
  // Slices (BEGIN) start flows; a message's and a wait's end on a slice or an
  // instant. (The kernel's flows need a session: none here.)
  std::map<uint64_t, const TraceEvent*> starts, ends;
  std::map<const TraceEvent*, uint64_t> slice_end;  // BEGIN -> its END's ts
  std::map<uint64_t, const TraceEvent*> open;       // track -> its open BEGIN
  for (const TraceEvent& e : d.events) {
    if (e.type == 1) open[e.track] = &e;
    if (e.type == 2 && open.count(e.track)) slice_end[open[e.track]] = e.ts;
    for (uint64_t f : e.flows) EXPECT_TRUE(starts.emplace(f, &e).second) << "flow " << f;
    for (uint64_t f : e.flow_ends) EXPECT_TRUE(ends.emplace(f, &e).second) << "flow " << f;
  }
  size_t messages = 0, wait_flows = 0;
  std::set<int> senders, waiters;
  for (const auto& [f, from] : starts) {
    ASSERT_TRUE(ends.count(f)) << "flow " << f << " never ends";
    const TraceEvent& to = *ends.at(f);
    ASSERT_EQ(from->type, 1u) << from->name;
    if (from->name == "fi_tsend") {
      ++messages;
      EXPECT_EQ(to.name, "fi_trecv");
      EXPECT_EQ(from->args.at("bytes"), "64");
      EXPECT_EQ(to.args.at("bytes"), "64");
      EXPECT_EQ(rank_of(from->track) - 1, rank_of(to.track));
      senders.insert(rank_of(from->track));
      continue;
    }
    ++wait_flows;
    const int k = rank_of(from->track);
    EXPECT_EQ(from->name.rfind("waiting for rank " + std::to_string(k + 1) + " (", 0), 0u)
        << from->name;
    ASSERT_TRUE(waits.count(k)) << "rank " << k << " measured no wait";
    ASSERT_TRUE(slice_end.count(from));
    const double len = static_cast<double>(slice_end.at(from) - from->ts);
    EXPECT_NEAR(len, static_cast<double>(waits.at(k)), 0.01 * static_cast<double>(waits.at(k)))
        << "r" << k;
    waiters.insert(k);
    // The root: r3's delay, marked after the wait began.
    EXPECT_EQ(rank_of(to.track), 3) << to.name;
    EXPECT_EQ(to.type, 3u) << to.name;
    EXPECT_EQ(to.name.rfind("root cause: late to post", 0), 0u) << to.name;
    EXPECT_GT(to.ts, from->ts);
    EXPECT_EQ(to.args.at("waits"), "3");
  }
  EXPECT_EQ(messages, 3u) << summary;
  EXPECT_EQ(senders, (std::set<int>{1, 2, 3}));
  EXPECT_EQ(wait_flows, 3u) << summary;
  EXPECT_EQ(waiters, (std::set<int>{0, 1, 2}));
}

// The OTF2 archive: each matched message as an MPI send on its sender's
// location "messages" and an MPI receive on its receiver's, with its size, as
// otf2-print shows them: 3 of each, r(k) sending to r(k-1).
TEST_P(WaitChain, Otf2MessageEventsForEachMatchedPair) {
  if (access("/usr/bin/otf2-print", X_OK) != 0) GTEST_SKIP() << "no otf2-print (otf2-tools)";
  const std::string dir = make_temp_dir("waits-otf2");
  const RunResult r = run({WAIT_CHAIN, "--provider", GetParam(), "--ranks", "4", "--delay", "sleep",
                           "--delay-ms", "20"},
                          chain_env(dir));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const RunResult rep = run({FABTRACE_CLI, "report", dir, "-o", dir + "/out", "--otf2"}, {}, false);
  ASSERT_EQ(rep.exit_code, 0) << rep.output;
  const RunResult p = run({"otf2-print", dir + "/out/otf2/trace.otf2"}, {}, false);
  ASSERT_EQ(p.exit_code, 0) << p.output;
  // "MPI_SEND  <location>  <time>  Receiver: 2 ("...") , Communicator: ..., Tag: 0, Length: 64"
  std::istringstream in(p.output);
  std::string line;
  size_t sends = 0, recvs = 0;
  const std::regex send_re("^MPI_SEND +(\\d+) .*Receiver: (\\d+).*Length: (\\d+)");
  const std::regex recv_re("^MPI_RECV +(\\d+) .*Sender: (\\d+).*Length: (\\d+)");
  std::smatch m;
  std::set<std::string> pairs;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, send_re)) {
      ++sends;
      EXPECT_EQ(m[3], "64") << line;
      pairs.insert("to " + m[2].str());
    } else if (std::regex_search(line, m, recv_re)) {
      ++recvs;
      EXPECT_EQ(m[3], "64") << line;
      pairs.insert("from " + m[2].str());
    }
  }
  EXPECT_EQ(sends, 3u) << p.output.substr(0, 3000);
  EXPECT_EQ(recvs, 3u) << p.output.substr(0, 3000);
  // The ranks are the job's, sorted: r0 .. r3 are 0 .. 3.
  EXPECT_EQ(pairs, (std::set<std::string>{"to 0", "to 1", "to 2", "from 1", "from 2", "from 3"}));
}

INSTANTIATE_TEST_SUITE_P(Providers, WaitChain, ::testing::Values("tcp;ofi_rxm", "shm"),
                         [](const auto& p) { return test_name(p.param); });

}  // namespace
}  // namespace fabtrace::test
