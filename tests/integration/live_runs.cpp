#include "tests/integration/live_runs.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "common/op_kinds.h"

namespace fabtrace::test {

HeldApp::HeldApp(const std::string& tag, const std::string& family, int count, uid_t uid,
                 const std::string& live_path, Env env) {
  dir = make_temp_dir(tag);
  live_dir = live_path.empty() ? make_temp_dir(tag + "-shm") : live_path;
  release = dir + "/release";
  result_prefix = dir + "/app";
  if (uid) {
    // The user's own output directory (the preload refuses another user's).
    for (const std::string& d : live_path.empty() ? std::vector<std::string>{dir, live_dir}
                                                  : std::vector<std::string>{dir})
      if (::chown(d.c_str(), uid, uid) != 0 || ::chmod(d.c_str(), 0755) != 0) pid = -1;
  }
  std::vector<std::string> argv = {FT_APP,
                                   "--prov",
                                   "tcp;ofi_rxm",
                                   "--test",
                                   family,
                                   "--count",
                                   std::to_string(count),
                                   "--size",
                                   "4096",
                                   "--timeout",
                                   "100",
                                   "--hold-until",
                                   release,
                                   "--result",
                                   result_prefix};
  if (uid) argv = as_uid(uid, argv);
  env.push_back({"FABTRACE_DIR", dir});
  env.push_back({"FABTRACE_LIVE_DIR", live_dir});
  env.push_back({"FABTRACE_LIVE_INTERVAL_MS", "100"});
  if (pid == 0) pid = spawn(argv, env, dir + "/app.log");
}

nlohmann::json HeldApp::result(int rank) const {
  const std::string text = slurp(result_prefix + ".r" + std::to_string(rank) + ".json");
  if (text.empty()) return {};
  try {
    return nlohmann::json::parse(text);
  } catch (const std::exception&) {
    return {};  // still being written
  }
}

bool HeldApp::wait_results(int timeout_s) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!result(0).empty() && !result(1).empty()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

void HeldApp::release_and_wait(int* rc) {
  std::ofstream(release).put('x');
  *rc = wait_for(pid, 120);
}

std::vector<live::Snapshot> snapshots_in(const std::string& dir,
                                         std::vector<live::Skipped>* skipped) {
  live::ReadOptions o;
  o.dir = dir;
  o.caller = 0;
  std::vector<live::Snapshot> out;
  std::string err;
  live::read_snapshots(o, &out, skipped, &err);
  return out;
}

bool settled_snapshot(const std::string& dir, pid_t pid, uint64_t after, live::Snapshot* out,
                      int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    for (live::Snapshot& s : snapshots_in(dir))
      if (s.pid() == pid && s.proc[live::kp_publishes] >= after + 2) {
        *out = std::move(s);
        return true;
      }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

std::map<std::string, uint64_t> live_ops_by_name(const live::Snapshot& s, bool untimed) {
  std::map<std::string, uint64_t> m;
  for (const live::Link& l : s.links) {
    const uint64_t n = l.c[untimed ? live::kl_untimed : live::kl_ops];
    if (n) m[op_name(static_cast<OpKind>(l.c[live::kl_op]))] += n;
  }
  return m;
}

std::map<std::string, uint64_t> live_ops_by_link(const live::Snapshot& s) {
  std::map<std::string, uint64_t> m;
  for (const live::Link& l : s.links)
    m[l.local + " -> " + l.remote + " " + op_name(static_cast<OpKind>(l.c[live::kl_op]))] +=
        l.c[live::kl_ops];
  return m;
}

std::map<std::string, uint64_t> report_ops_by_link(const nlohmann::json& report) {
  std::map<std::string, uint64_t> m;
  for (const auto& link : report.at("links"))
    for (const auto& o : link.at("ops")) {
      const uint64_t n = o.at("count").get<uint64_t>();
      if (n)
        m[link.at("local").get<std::string>() + " -> " + link.at("remote").get<std::string>() +
          " " + o.at("op").get<std::string>()] += n;
    }
  return m;
}

std::vector<std::string> as_uid(uid_t uid, std::vector<std::string> argv) {
  const std::string u = std::to_string(uid);
  argv.insert(argv.begin(), {"setpriv", "--reuid=" + u, "--regid=" + u, "--clear-groups", "--"});
  return argv;
}

TmuxPane::TmuxPane(const std::string& command, int width, int height) {
  socket_ = "fabtrace-test-" + std::to_string(::getpid()) + "-" +
            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  const RunResult r = run({"tmux", "-L", socket_, "-f", "/dev/null", "new-session", "-d", "-x",
                           std::to_string(width), "-y", std::to_string(height), command},
                          {{"TERM", "xterm"}}, false, 30);
  started_ = r.exit_code == 0;
}

TmuxPane::~TmuxPane() { run({"tmux", "-L", socket_, "kill-server"}, {}, false, 30); }

std::string TmuxPane::capture() const {
  return run({"tmux", "-L", socket_, "capture-pane", "-p"}, {}, false, 30).output;
}

void TmuxPane::keys(const std::vector<std::string>& k) const {
  std::vector<std::string> argv = {"tmux", "-L", socket_, "send-keys"};
  argv.insert(argv.end(), k.begin(), k.end());
  run(argv, {}, false, 30);
}

bool TmuxPane::alive() const {
  return run({"tmux", "-L", socket_, "has-session"}, {}, false, 30).exit_code == 0;
}

}  // namespace fabtrace::test
