// Running programs under the preload and reading what they and it wrote.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace fabtrace::test {

using Env = std::vector<std::pair<std::string, std::string>>;

struct RunResult {
  int exit_code = -1;  // 128+signal when killed
  std::string output;  // stdout and stderr, interleaved
};

// A fresh empty directory under the build's temp area.
std::string make_temp_dir(const std::string& tag);

// Runs argv with extra environment (LD_PRELOAD set to the preload unless `preload` is false).
RunResult run(const std::vector<std::string>& argv, const Env& env, bool preload = true,
              int timeout_s = 120);
// Starts argv in the background (posix_spawn: safe while the test runs threads);
// returns its pid, or -1 when it cannot be started (the reason is in the log).
int spawn(const std::vector<std::string>& argv, const Env& env, const std::string& log_path,
          bool preload = true);
// Waits until something on this host listens on TCP `port` (a server started
// with spawn() is ready for its client). False after timeout_s.
bool wait_listening(int port, int timeout_s = 60);
// Waits for a spawned process; returns its exit code.
int wait_for(int pid, int timeout_s = 120);

nlohmann::json load_json(const std::string& path);
std::string slurp(const std::string& path);  // a file's bytes ("" when unreadable)

// `fabtrace report DIR -o OUT`, its stdout and stderr apart.
struct Cli {
  int rc = -1;
  std::string out, err;
};
Cli report_cli(const std::string& dir, const std::string& out);
std::vector<std::string> list_files(const std::string& dir, const std::string& prefix,
                                    const std::string& suffix);

// The reports the preload wrote in `dir` for rank `rank` ("0", "1", "NA").
std::vector<nlohmann::json> reports_of_rank(const std::string& dir, const std::string& rank);

// Totals per op name over every link of a report.
struct OpTotals {
  uint64_t count = 0, errors = 0, untimed = 0, ring_full = 0, unfinished = 0, eagain = 0,
           refused = 0;
  uint64_t issued() const { return count + errors + untimed + ring_full + unfinished; }
};
std::map<std::string, OpTotals> op_totals(const nlohmann::json& report);

int free_port();

// A `fabtrace record` session runs on this node: it holds the node's session
// lock (common/session_lock.h; a kernel lock, released when it exits however it
// dies). Every preload on the node then leaves the NIC counters to the session,
// every traced process is seen by it, and no other session can start. A test
// that assumes no session runs (the preload's own sampler, its quiet output,
// the node to itself, a session of its own) starts with
// SKIP_IF_RECORD_SESSION("what it needs"): the one place that rule lives, so
// that a sysadmin running the suite beside a session gets skips that name the
// cause, never red tests that don't.
bool record_session_on_node();
long record_session_pid();  // its collector's pid, 0 when none
#define SKIP_IF_RECORD_SESSION(needs)                                          \
  do {                                                                         \
    if (::fabtrace::test::record_session_on_node())                            \
      GTEST_SKIP() << "a fabtrace record session runs on this node, and this " \
                      "test needs "                                            \
                   << (needs) << " (stop the session to run it)";              \
  } while (0)
// What most of those tests need: with a session, the preloads leave the NIC
// counters to it, so the preload's own sampler is never exercised.
inline constexpr const char kNeedsOwnSampler[] = "the preload's own NIC counter sampler";
// What every test that starts a session needs: one session per node.
inline constexpr const char kNeedsOwnSession[] = "to start a session of its own (one per node)";

// A parameterized test's name from free text: every character that is not a
// letter or digit becomes '_' ("tcp;ofi_rxm" -> "tcp_ofi_rxm").
std::string test_name(std::string text);

}  // namespace fabtrace::test
