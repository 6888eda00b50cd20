// Issue 35 under a `fabtrace record` session: `fabtrace top` shows a rank the
// test stops with SIGSTOP as stopped while it is, and, once it runs again, its
// CQ's stall with the kernel's cause within two refreshes. Ground truth: the
// stop the test planted (its pid, and how long it lasted at least).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "tests/integration/harness.h"
#include "tests/integration/live_runs.h"
#include "tests/integration/record_session.h"
#include "tests/support/require_program.h"

namespace fabtrace::test {
namespace {

// "fabtrace top  12:34:56 UTC ...": the refresh's time, "" when not on screen.
std::string refresh_time(const std::string& screen) {
  static const std::regex head(R"(^fabtrace top  (\d\d:\d\d:\d\d) UTC)");
  std::smatch m;
  std::istringstream in(screen);
  std::string line;
  while (std::getline(in, line))
    if (std::regex_search(line, m, head)) return m[1];
  return "";
}

// The stalls pane's line of `pid`'s CQ stall whose verdict names the stop.
std::string stop_line(const std::string& screen, int pid) {
  std::istringstream in(screen);
  std::string line;
  while (std::getline(in, line))
    if (line.find(" pid " + std::to_string(pid) + " ") != std::string::npos &&
        line.find(" stall ") != std::string::npos &&
        line.find("stopped (SIGSTOP or a debugger)") != std::string::npos)
      return line;
  return "";
}

TEST(Record, LiveTopShowsAStoppedRankAndItsStallWithTheCauseWithinTwoRefreshes) {
  REQUIRE_SESSION_SLOT();
  REQUIRE_PROGRAM("tmux", "tmux");
  const std::string dir = make_temp_dir("rec-live");
  const std::string stop = dir + "/stop";
  const int record =
      spawn({FABTRACE_CLI, "record", "-o", dir, "--", FT_APP, "--prov", "tcp;ofi_rxm", "--test",
             "stream", "--timeout", "100", "--until", stop, "--count", "1000000"},
            {{"FABTRACE_PRELOAD", preload_list()}}, dir + "/record.log", false);
  ASSERT_GT(record, 0);
  struct Stopper {
    std::string stop;
    int record;
    ~Stopper() {
      std::ofstream(stop).put('x');
      wait_for(record, 240);
    }
  } stopper{stop, record};
  // Rank 0 (ft_app's parent) polls, registered with the session, and publishes.
  int rank0 = -1;
  ASSERT_TRUE(eventually([&] {
    if (rank0 < 0) {
      const auto c = children_of(record);
      if (c.empty()) return false;
      rank0 = c.front();
    }
    const std::string log = kernel_log_of(dir);
    if (log.empty()) return false;
    int threads = 0;
    for (const Event& e : export_kernel(log))
      if (e.kind == "thread" && static_cast<int>(e.tid) == rank0) ++threads;
    if (threads < 2) return false;
    for (const live::Snapshot& s : snapshots_in(live::kDefaultDir))
      if (s.pid() == rank0) return true;
    return false;
  })) << slurp(dir + "/record.log");

  TmuxPane pane(std::string(FABTRACE_CLI) + " top --pid " + std::to_string(rank0));
  ASSERT_TRUE(pane.started());
  std::string screen;
  ASSERT_TRUE(eventually(
      [&] {
        screen = pane.capture();
        return screen.find("record session pid " + std::to_string(record)) != std::string::npos &&
               screen.find(" " + std::to_string(rank0) + " ") != std::string::npos;
      },
      60))
      << screen;

  ASSERT_EQ(::kill(rank0, SIGSTOP), 0);
  ASSERT_TRUE(eventually([&] { return proc_state(rank0) == 'T'; }, 30));
  const auto stopped_at = std::chrono::steady_clock::now();
  // While it is stopped, its row says so.
  EXPECT_TRUE(eventually(
      [&] {
        screen = pane.capture();
        return screen.find("stopped") != std::string::npos;
      },
      10))
      << screen;
  std::this_thread::sleep_for(std::chrono::milliseconds(1000) -
                              (std::chrono::steady_clock::now() - stopped_at));
  const double stop_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - stopped_at)
          .count();
  const std::string before = refresh_time(pane.capture());
  ASSERT_EQ(::kill(rank0, SIGCONT), 0);

  // The refreshes after the stop ended, counted by their time on screen,
  // until the stall is there.
  std::set<std::string> refreshes;
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    screen = pane.capture();
    const std::string t = refresh_time(screen);
    if (!t.empty() && t != before) refreshes.insert(t);
    line = stop_line(screen, rank0);
    if (!line.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(line.empty()) << "no stall of pid " << rank0 << " with its cause on screen:\n"
                             << screen;
  EXPECT_LE(refreshes.size(), 2u) << "shown only after " << refreshes.size() << " refreshes";
  // "stopped (SIGSTOP or a debugger) for X of Y ms": at least the planted stop.
  static const std::regex stopped(R"(stopped \(SIGSTOP or a debugger\)(?: for)? ([\d.]+))");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(line, m, stopped)) << line;
  EXPECT_GE(std::stod(m[1]), 0.99 * stop_ms) << line;
  pane.keys({"q"});
}

}  // namespace
}  // namespace fabtrace::test
