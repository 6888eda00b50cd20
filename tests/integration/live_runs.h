// What the live-snapshot tests share (test_live.cpp, test_live_record.cpp):
// a traced ft_app held after its ops, the snapshots it publishes read the way
// `fabtrace top` reads them, and `fabtrace top` run in a tmux pane of the
// test's own (its own server socket, so another tmux on the node is never
// touched).
#pragma once

#include <sys/types.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/live_read.h"
#include "tests/integration/harness.h"

namespace fabtrace::test {

// A two-rank ft_app (tcp;ofi_rxm) under the preload whose ranks wait for
// `release` after their ops: `family` with `count` ops, its outputs in dir,
// its live snapshots in live_dir (every 100 ms), as `uid` (0: as this process).
struct HeldApp {
  std::string dir, live_dir, release, result_prefix;
  int pid = 0;  // rank 0 (ft_app's parent); -1 when it could not be started
  HeldApp(const std::string& tag, const std::string& family, int count, uid_t uid = 0,
          const std::string& live_path = "", Env env = {});
  // Both ranks wrote their own results (after their last op): the program's counts.
  bool wait_results(int timeout_s = 120) const;
  nlohmann::json result(int rank) const;  // {} when absent
  void release_and_wait(int* rc);
};

// The snapshots in `dir` read as root reads them (every user's).
std::vector<live::Snapshot> snapshots_in(const std::string& dir,
                                         std::vector<live::Skipped>* skipped = nullptr);
// The snapshot of `pid` in `dir`, once it has published `after` + 2 times
// (a snapshot taken wholly after whatever came before the call); false on timeout.
bool settled_snapshot(const std::string& dir, pid_t pid, uint64_t after, live::Snapshot* out,
                      int timeout_s = 60);
// Successful completions (or, `untimed`, ops issued without a completion to
// time) per op name over a snapshot's link rows.
std::map<std::string, uint64_t> live_ops_by_name(const live::Snapshot& s, bool untimed = false);
// The same per (local, remote, op) in a rank's report JSON.
std::map<std::string, uint64_t> report_ops_by_link(const nlohmann::json& report);
std::map<std::string, uint64_t> live_ops_by_link(const live::Snapshot& s);

// argv run as `uid` (setpriv; group the same number, no supplementary groups).
std::vector<std::string> as_uid(uid_t uid, std::vector<std::string> argv);

// A tmux server of the test's own with one window running `command` (a shell
// command line), `width` x `height`.
class TmuxPane {
 public:
  TmuxPane(const std::string& command, int width = 220, int height = 60);
  ~TmuxPane();  // kills the server
  TmuxPane(const TmuxPane&) = delete;
  TmuxPane& operator=(const TmuxPane&) = delete;
  bool started() const { return started_; }
  std::string capture() const;                         // the pane's text now
  void keys(const std::vector<std::string>& k) const;  // tmux send-keys
  bool alive() const;                                  // the window's command still runs

 private:
  std::string socket_;
  bool started_ = false;
};

}  // namespace fabtrace::test
