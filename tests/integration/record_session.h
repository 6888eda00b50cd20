// A `fabtrace record` session from a test: starting one, reading its kernel log
// back through `fabtrace export kernel --csv`, and the /proc facts the tests
// check it against. Shared by test_record.cpp and the Uprobes tests (test_uprobes_*.cpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness.h"

namespace fabtrace::test {

bool is_root();

#define REQUIRE_ROOT() \
  if (!::fabtrace::test::is_root()) GTEST_SKIP() << "fabtrace record needs root (CI runs as root)"
// A test that starts a session: root, and the node's one session slot free
// (another session, not the test's own, makes it skip, naming the cause).
#define REQUIRE_SESSION_SLOT() \
  REQUIRE_ROOT();              \
  SKIP_IF_RECORD_SESSION(::fabtrace::test::kNeedsOwnSession)

// One row of `fabtrace export kernel --csv`.
struct Event {
  uint64_t ts = 0, start = 0, dur = 0;
  std::string kind, cause, other_comm;
  uint32_t cpu = 0, pid = 0, tid = 0, other_pid = 0;
  std::map<std::string, std::string> detail;
  uint64_t num(const std::string& k) const {
    const auto it = detail.find(k);
    return it == detail.end() ? 0 : std::stoull(it->second);
  }
};

// The session's kernel log in `dir` ("" when none).
std::string kernel_log_of(const std::string& dir);

// The log read back through the CLI. `ok` says whether the export succeeded.
// kinds: only those ("mark,stall"; "" for every kind), for a test that polls a
// growing log for one record (a whole export of a flood is slow under ASan).
std::vector<Event> export_kernel(const std::string& log, bool* ok = nullptr,
                                 const std::string& kinds = "");

// The children of `pid` (/proc/PID/task/PID/children).
std::vector<int> children_of(int pid);

// Polls until `pred` holds, up to `seconds`.
template <typename P>
bool eventually(P pred, int seconds = 120) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// The preload to give `fabtrace record` (the sanitizer runtime first in the
// ASan build, for the uninstrumented programs it may start).
std::string preload_list();

// Starts `fabtrace record -o DIR ARGS...` (its output in DIR/LOG) and waits
// until the log shows `ready` (the session attached); the session's pid, or -1.
int start_record(const std::string& dir, const std::string& log,
                 const std::vector<std::string>& args, const char* ready);

// Starts `fabtrace record -o DIR --uprobes ARGS...` (its output in DIR/LOG) and
// waits until its probes are attached; the session's pid, or -1.
int start_uprobe_session(const std::string& dir, const std::string& log,
                         std::vector<std::string> args = {});

// The state letter of /proc/PID/stat ('T': stopped), 0 when unreadable.
char proc_state(int pid);

}  // namespace fabtrace::test
