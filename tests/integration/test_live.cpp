// Issue 35: the live snapshot (preload/live.h), `fabtrace top` and `fabtrace
// metrics` on real traced runs.
//
// Ground truth is what the traced programs say of themselves: ft_app's own
// counts of the ops it completed and the polls it made (its --result files),
// the rank's report at exit, the pids and users the test started them as, and
// for fi_pingpong (which says nothing while it runs) that every send of a
// ping-pong has its receive, so the two rates of one process agree.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "common/live_format.h"
#include "common/op_kinds.h"
#include "tests/integration/harness.h"
#include "tests/integration/live_runs.h"
#include "tests/integration/record_session.h"
#include "tests/support/require_program.h"

namespace fabtrace::test {
namespace {

std::vector<std::string> live_names(const std::string& dir) {
  return list_files(dir, live::kFilePrefix, "");
}

// The process has exited (a zombie its parent has not reaped counts: its
// descriptors, and so its lock, are gone).
bool eventually_gone(pid_t pid) {
  for (int i = 0; i < 600; ++i) {
    const char st = live::process_state(pid);
    if (st == 0 || st == 'Z') return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// A reader that keeps reading the snapshots while the program runs, as `top`
// does, and checks what a torn or reordered snapshot would break: the
// process's totals are the sums of its rows, an interval's figures are within
// the run's, and nothing goes backwards from one read to the next.
class ConcurrentReader {
 public:
  explicit ConcurrentReader(std::string dir) : dir_(std::move(dir)), thread_([this] { loop(); }) {}
  ~ConcurrentReader() { stop(); }
  void stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  std::vector<std::string> failures() const {
    std::lock_guard<std::mutex> lk(mu_);
    return failures_;
  }
  std::map<pid_t, uint64_t> reads() const {
    std::lock_guard<std::mutex> lk(mu_);
    return reads_;
  }

 private:
  void fail(const std::string& what) {
    std::lock_guard<std::mutex> lk(mu_);
    if (failures_.size() < 20) failures_.push_back(what);
  }
  void loop() {
    std::map<pid_t, live::Snapshot> last;
    while (!stop_.load()) {
      for (const live::Snapshot& s : snapshots_in(dir_)) {
        const std::string who = "pid " + std::to_string(s.pid()) + " snapshot " +
                                std::to_string(s.proc[live::kp_publishes]) + ": ";
        uint64_t ops = 0, bytes = 0, errors = 0, eagain = 0, untimed = 0;
        for (const live::Link& l : s.links) {
          ops += l.c[live::kl_ops];
          untimed += l.c[live::kl_untimed];
          bytes += l.c[live::kl_bytes];
          errors += l.c[live::kl_errors];
          eagain += l.c[live::kl_eagain];
          if (l.c[live::kl_ops_iv] > l.c[live::kl_ops] ||
              l.c[live::kl_bytes_iv] > l.c[live::kl_bytes])
            fail(who + "an interval larger than the run");
          if (l.c[live::kl_ops] && (l.c[live::kl_p50_ns] > l.c[live::kl_p99_ns] ||
                                    l.c[live::kl_p99_ns] > l.c[live::kl_max_ns]))
            fail(who + "percentiles out of order");
        }
        if (s.proc[live::kp_links_dropped] == 0 &&
            (ops != s.proc[live::kp_ops] || bytes != s.proc[live::kp_bytes] ||
             errors != s.proc[live::kp_errors] || eagain != s.proc[live::kp_eagain] ||
             untimed != s.proc[live::kp_untimed]))
          fail(who + "totals " + std::to_string(s.proc[live::kp_ops]) + " ops are not its rows' " +
               std::to_string(ops));
        auto it = last.find(s.pid());
        if (it != last.end()) {
          const live::Snapshot& p = it->second;
          if (s.proc[live::kp_publishes] < p.proc[live::kp_publishes] ||
              s.proc[live::kp_ops] < p.proc[live::kp_ops] ||
              s.proc[live::kp_published_mono_ns] < p.proc[live::kp_published_mono_ns])
            fail(who + "went backwards");
        }
        last[s.pid()] = s;
        std::lock_guard<std::mutex> lk(mu_);
        ++reads_[s.pid()];
      }
    }
  }

  std::string dir_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::vector<std::string> failures_;
  std::map<pid_t, uint64_t> reads_;
  std::thread thread_;
};

// The snapshot of each rank (by the pid its result names), settled after its
// last op.
std::map<int, live::Snapshot> settled(const HeldApp& app) {
  std::map<int, live::Snapshot> out;
  for (int rank : {0, 1}) {
    const pid_t pid = app.result(rank).value("pid", 0);
    uint64_t now = 0;
    for (const live::Snapshot& s : snapshots_in(app.live_dir))
      if (s.pid() == pid) now = s.proc[live::kp_publishes];
    live::Snapshot s;
    if (settled_snapshot(app.live_dir, pid, now, &s)) out[rank] = std::move(s);
  }
  return out;
}

TEST(LiveFile, WholeWhileReadMatchesTheProgramAndTheReportAndGoesAtExit) {
  HeldApp app("live-file", "tagged", 3000);
  ASSERT_GT(app.pid, 0);
  ConcurrentReader reader(app.live_dir);
  ASSERT_TRUE(app.wait_results()) << slurp(app.dir + "/app.log");
  const std::map<int, live::Snapshot> snap = settled(app);
  reader.stop();
  ASSERT_EQ(snap.size(), 2u) << "no settled snapshot of both ranks";
  for (const std::string& f : reader.failures()) ADD_FAILURE() << f;
  for (const auto& [rank, s] : snap) {
    EXPECT_GE(reader.reads()[s.pid()], 5u) << "rank " << rank << " read too few times";
    // The file: this user's, 0600, named for its user and pid.
    struct stat st;
    const std::string path = app.live_dir + "/" + live::file_name(::geteuid(), s.pid());
    ASSERT_EQ(::lstat(path.c_str(), &st), 0) << path;
    EXPECT_TRUE(S_ISREG(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, 0600u);
    EXPECT_EQ(st.st_uid, ::geteuid());
    EXPECT_EQ(s.rank, std::to_string(rank));
    // Its counts are the program's own: every op it completed, by function,
    // and every poll it made.
    const nlohmann::json res = app.result(rank);
    std::map<std::string, uint64_t> want;
    for (auto it = res.at("completed").begin(); it != res.at("completed").end(); ++it)
      if (it.value().get<uint64_t>()) want[it.key()] = it.value().get<uint64_t>();
    EXPECT_EQ(live_ops_by_name(s), want) << "rank " << rank;
    // And the ops it issued that complete without a completion (fi_tinject).
    std::map<std::string, uint64_t> untimed;
    for (auto it = res.at("no_completion").begin(); it != res.at("no_completion").end(); ++it)
      if (it.value().get<uint64_t>()) untimed[it.key()] = it.value().get<uint64_t>();
    EXPECT_EQ(live_ops_by_name(s, true), untimed) << "rank " << rank;
    uint64_t polls = 0;
    for (const live::Cq& q : s.cqs) polls += q.c[live::kq_polls];
    EXPECT_EQ(polls, res.at("cq_polls").get<uint64_t>()) << "rank " << rank;
  }
  int rc = -1;
  app.release_and_wait(&rc);
  EXPECT_EQ(rc, 0) << slurp(app.dir + "/app.log");
  EXPECT_TRUE(live_names(app.live_dir).empty()) << "a live file left after exit";
  // And the rank's report at exit, link by link and op by op.
  for (const auto& [rank, s] : snap) {
    const auto reps = reports_of_rank(app.dir, std::to_string(rank));
    ASSERT_EQ(reps.size(), 1u);
    EXPECT_EQ(live_ops_by_link(s), report_ops_by_link(reps[0])) << "rank " << rank;
  }
}

TEST(LiveFile, OffWithFabtraceLive0) {
  HeldApp app("live-off", "tagged", 50, 0, "", {{"FABTRACE_LIVE", "0"}});
  ASSERT_GT(app.pid, 0);
  ASSERT_TRUE(app.wait_results()) << slurp(app.dir + "/app.log");
  EXPECT_TRUE(live_names(app.live_dir).empty());
  int rc = -1;
  app.release_and_wait(&rc);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(reports_of_rank(app.dir, "0").size(), 1u) << "the report still written";
}

// A rank killed with SIGKILL leaves its file: `top` and `metrics` pass it
// over as stale, as they do a file planted for a process that is gone.
TEST(LiveFile, AKilledProcessesFileIsStaleAndIgnored) {
  HeldApp app("live-stale", "tagged", 100);
  ASSERT_GT(app.pid, 0);
  ASSERT_TRUE(app.wait_results()) << slurp(app.dir + "/app.log");
  const std::map<int, live::Snapshot> snap = settled(app);
  ASSERT_EQ(snap.size(), 2u);
  const pid_t r0 = snap.at(0).pid(), r1 = snap.at(1).pid();
  // A planted copy of rank 0's file for a pid that no longer exists.
  const pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ASSERT_GT(gone, 0);
  ASSERT_EQ(::waitpid(gone, nullptr, 0), gone);
  {
    std::string bytes = slurp(app.live_dir + "/" + live::file_name(0, r0));
    ASSERT_FALSE(bytes.empty());
    const uint64_t p = static_cast<uint64_t>(gone);
    std::memcpy(&bytes[8 * live::kh_pid], &p, 8);
    const std::string planted = app.live_dir + "/" + live::file_name(0, gone);
    std::ofstream(planted, std::ios::binary) << bytes;
    ASSERT_EQ(::chmod(planted.c_str(), 0600), 0);
  }
  ASSERT_EQ(::kill(r1, SIGKILL), 0);
  ASSERT_TRUE(eventually_gone(r1));
  const std::vector<std::string> names = live_names(app.live_dir);
  EXPECT_EQ(names.size(), 3u) << "rank 1's file is left by the kill";

  const RunResult top =
      run({FABTRACE_CLI, "top", "--once", "--json", "--dir", app.live_dir}, {}, false);
  ASSERT_EQ(top.exit_code, 0) << top.output;
  const nlohmann::json j = nlohmann::json::parse(top.output);
  std::set<int> pids;
  for (const auto& p : j.at("processes")) pids.insert(p.at("pid").get<int>());
  EXPECT_EQ(pids, std::set<int>{r0});
  std::set<std::string> stale;
  for (const auto& s : j.at("skipped"))
    if (s.at("stale").get<bool>()) stale.insert(s.at("file").get<std::string>());
  EXPECT_EQ(stale, (std::set<std::string>{live::file_name(0, r1), live::file_name(0, gone)}))
      << top.output;

  const std::string prom_dir = make_temp_dir("live-stale-prom");
  const RunResult m = run({FABTRACE_CLI, "metrics", "--once", "--textfile",
                           prom_dir + "/fabtrace.prom", "--dir", app.live_dir},
                          {}, false);
  ASSERT_EQ(m.exit_code, 0) << m.output;
  const std::string text = slurp(prom_dir + "/fabtrace.prom");
  EXPECT_NE(text.find("pid=\"" + std::to_string(r0) + "\""), std::string::npos) << text;
  EXPECT_EQ(text.find("pid=\"" + std::to_string(r1) + "\""), std::string::npos) << text;
  EXPECT_EQ(text.find("pid=\"" + std::to_string(gone) + "\""), std::string::npos) << text;
  EXPECT_NE(text.find("fabtrace_processes 1\n"), std::string::npos) << text;
  int rc = -1;
  app.release_and_wait(&rc);  // rank 0 lost its peer: its exit code is not the point
  EXPECT_EQ(live_names(app.live_dir).size(), 2u) << "rank 0's own file removed at its exit";
}

// ---------------------------------------------------------------------------
// fabtrace top in a terminal (tmux), during a traced fi_pingpong.

struct TopRow {
  std::string rank;
  int pid = 0;
  double ops_s = 0;
  struct Link {
    std::string link, op;
    double ops_s = 0;
  };
  std::vector<Link> links;
};

double number(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), ','), s.end());
  return s.empty() ? -1 : std::stod(s);
}

// The process rows of a top screen, each with its link rows.
std::vector<TopRow> top_rows(const std::string& screen) {
  static const std::regex proc(R"(^(\S+)\s+(\d+)\s+\S+\s+([\d,]+)\s+[\d.]+\s)");
  static const std::regex link(R"(^      (.+ -> .+)  (fi_\w+)  ([\d,]+) ops/s  )");
  std::vector<TopRow> out;
  std::istringstream in(screen);
  std::string line;
  bool table = false;
  while (std::getline(in, line)) {
    std::smatch m;
    if (line.rfind("RANK ", 0) == 0) {
      table = true;
    } else if (!table || line.empty()) {
      if (table && line.empty()) table = false;
    } else if (std::regex_search(line, m, link) && !out.empty()) {
      out.back().links.push_back({m[1], m[2], number(m[3])});
    } else if (std::regex_search(line, m, proc)) {
      TopRow r;
      r.rank = m[1];
      r.pid = std::stoi(m[2]);
      r.ops_s = number(m[3]);
      out.push_back(r);
    }
  }
  return out;
}

// Captures the pane until `ok` holds for its rows (up to `seconds`); the last screen.
template <typename Ok>
std::string screen_until(const TmuxPane& pane, Ok ok, int seconds = 60) {
  std::string screen;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    screen = pane.capture();
    if (ok(screen, top_rows(screen))) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return screen;
}

const TopRow* row_of(const std::vector<TopRow>& rows, int pid) {
  for (const TopRow& r : rows)
    if (r.pid == pid) return &r;
  return nullptr;
}

TEST(LiveTop, PingpongInTmuxShowsEachProcessItsLinksRatesAndTheKeysFilter) {
  REQUIRE_PROGRAM("tmux", "tmux");
  REQUIRE_PROGRAM("fi_pingpong", "libfabric-bin");
  const std::string dir = make_temp_dir("live-top");
  const std::string live_dir = make_temp_dir("live-top-shm");
  const std::string port = std::to_string(free_port());
  // Round trips until the test kills it (its live files then stay in the
  // test's own directory, stale).
  const std::vector<std::string> args = {"fi_pingpong", "-p",        "tcp;ofi_rxm", "-e",  "rdm",
                                         "-I",          "100000000", "-S",          "1024"};
  auto with = [](std::vector<std::string> v, const std::vector<std::string>& more) {
    v.insert(v.end(), more.begin(), more.end());
    return v;
  };
  const Env env = {{"FABTRACE_DIR", dir}, {"FABTRACE_LIVE_DIR", live_dir}};
  Env env1 = env, env0 = env;
  env1.push_back({"RANK", "1"});
  env0.push_back({"RANK", "0"});
  const int server = spawn(with(args, {"-B", port}), env1, dir + "/server.log");
  ASSERT_TRUE(wait_listening(std::stoi(port))) << slurp(dir + "/server.log");
  const int client = spawn(with(args, {"-P", port, "127.0.0.1"}), env0, dir + "/client.log");
  ASSERT_GT(client, 0);
  struct Killer {
    int a, b;
    ~Killer() {
      ::kill(-a, SIGKILL);
      ::kill(-b, SIGKILL);
      wait_for(a, 30);
      wait_for(b, 30);
    }
  } killer{server, client};

  TmuxPane pane(std::string(FABTRACE_CLI) + " top --dir " + live_dir);
  ASSERT_TRUE(pane.started());
  // Both processes, each with its links, all moving, sends and receives (a
  // loaded machine may slow the pair to an op a second, in one direction in
  // an interval: such a screen is waited past).
  const auto moving = [&](const std::string&, const std::vector<TopRow>& rows) {
    for (int pid : {server, client}) {
      const TopRow* r = row_of(rows, pid);
      if (!r || r->ops_s <= 0 || r->links.empty()) return false;
      bool send = false, recv = false;
      for (const TopRow::Link& l : r->links) {
        if (l.ops_s <= 0) return false;
        (l.op.find("recv") != std::string::npos ? recv : send) = true;
      }
      if (!send || !recv) return false;
    }
    return true;
  };
  std::string screen = screen_until(pane, moving);
  std::vector<TopRow> rows = top_rows(screen);
  ASSERT_TRUE(moving(screen, rows)) << screen;
  EXPECT_EQ(row_of(rows, client)->rank, "0") << screen;
  EXPECT_EQ(row_of(rows, server)->rank, "1") << screen;
  // A ping-pong sends one message per message it receives: a process's send
  // and receive rates over one interval agree, and they make up its ops/s.
  for (int pid : {server, client}) {
    const TopRow* r = row_of(rows, pid);
    double send = 0, recv = 0;
    for (const TopRow::Link& l : r->links)
      (l.op.find("recv") != std::string::npos ? recv : send) += l.ops_s;
    EXPECT_GT(send, 0) << screen;
    EXPECT_NEAR(send, recv, 0.1 * std::max(send, recv) + 2) << screen;
    EXPECT_NEAR(send + recv, r->ops_s, 0.01 * r->ops_s + 2) << screen;
  }
  // Keys: a rank filter, cleared; an op filter; the sort; quit.
  pane.keys({"r"});
  screen_until(pane, [](const std::string& s, const std::vector<TopRow>&) {
    return s.find("rank (empty: all):") != std::string::npos;
  });
  pane.keys({"0", "Enter"});
  screen = screen_until(pane, [&](const std::string& s, const std::vector<TopRow>& rs) {
    return s.find("rank=0") != std::string::npos && rs.size() == 1;
  });
  rows = top_rows(screen);
  ASSERT_EQ(rows.size(), 1u) << screen;
  EXPECT_EQ(rows[0].pid, client) << screen;
  pane.keys({"c"});
  screen = screen_until(pane, [&](const std::string&, const std::vector<TopRow>& rs) {
    return row_of(rs, server) && row_of(rs, client);
  });
  pane.keys({"o"});
  screen_until(pane, [](const std::string& s, const std::vector<TopRow>&) {
    return s.find("op (fi_send, or a part: send)") != std::string::npos;
  });
  pane.keys({"recv", "Enter"});
  screen = screen_until(pane, [&](const std::string& s, const std::vector<TopRow>& rs) {
    return s.find("op~recv") != std::string::npos && row_of(rs, client) &&
           !row_of(rs, client)->links.empty();
  });
  for (const TopRow& r : top_rows(screen))
    for (const TopRow::Link& l : r.links) EXPECT_NE(l.op.find("recv"), std::string::npos) << screen;
  pane.keys({"s"});
  screen = screen_until(pane, [](const std::string& s, const std::vector<TopRow>&) {
    return s.find("sort: ops") != std::string::npos;
  });
  EXPECT_NE(screen.find("sort: ops"), std::string::npos) << screen;
  pane.keys({"q"});
  EXPECT_TRUE(eventually([&] { return !pane.alive(); }, 30)) << "top did not quit on q";
}

// Two users' traced programs and root's: each user's `top` shows that user's
// processes and no one else's; root's shows all of them.
TEST(LiveTop, AUserSeesTheirOwnProcessesOnlyAndRootSeesAll) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (to run programs as two other users)";
  HeldApp a("live-user-a", "tagged", 50, 65534, live::kDefaultDir);
  HeldApp b("live-user-b", "tagged", 50, 65533, live::kDefaultDir);
  HeldApp r("live-user-root", "tagged", 50, 0, live::kDefaultDir);
  ASSERT_GT(a.pid, 0);
  ASSERT_GT(b.pid, 0);
  ASSERT_GT(r.pid, 0);
  const auto pids_of = [](const HeldApp& app) {
    return std::set<int>{app.result(0).value("pid", 0), app.result(1).value("pid", 0)};
  };
  for (const HeldApp* app : {&a, &b, &r}) {
    ASSERT_TRUE(app->wait_results()) << slurp(app->dir + "/app.log");
    ASSERT_EQ(settled(*app).size(), 2u) << "no snapshot of " << app->dir;
  }
  // `top --once --json` as `uid`, its stdout in a file of that user's.
  const auto top_as = [](uid_t uid, const std::string& out_dir) {
    const std::string out = out_dir + "/top.json";
    std::vector<std::string> argv = {"sh", "-c", "exec \"$0\" top --once --json > \"$1\"",
                                     FABTRACE_CLI, out};
    if (uid) argv = as_uid(uid, argv);
    const RunResult res = run(argv, {}, false);
    EXPECT_EQ(res.exit_code, 0) << res.output;
    std::map<int, uid_t> seen;
    try {
      // Held in a local: a range-for over a member of a temporary would
      // iterate a destroyed object.
      const nlohmann::json doc = nlohmann::json::parse(slurp(out));
      for (const auto& p : doc.at("processes"))
        seen[p.at("pid").get<int>()] = p.at("uid").get<uid_t>();
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what() << ": " << slurp(out);
    }
    return seen;
  };
  const std::map<int, uid_t> seen_a = top_as(65534, a.dir), seen_b = top_as(65533, b.dir),
                             seen_root = top_as(0, r.dir);
  std::set<int> keys_a, keys_b;
  for (const auto& [pid, uid] : seen_a) {
    keys_a.insert(pid);
    EXPECT_EQ(uid, 65534u) << "pid " << pid;
  }
  for (const auto& [pid, uid] : seen_b) {
    keys_b.insert(pid);
    EXPECT_EQ(uid, 65533u) << "pid " << pid;
  }
  EXPECT_EQ(keys_a, pids_of(a));
  EXPECT_EQ(keys_b, pids_of(b));
  for (const HeldApp* app : {&a, &b, &r})
    for (int pid : pids_of(*app)) EXPECT_TRUE(seen_root.count(pid)) << "root does not see " << pid;
  for (HeldApp* app : {&a, &b, &r}) {
    int rc = -1;
    app->release_and_wait(&rc);
    EXPECT_EQ(rc, 0) << slurp(app->dir + "/app.log");
    for (int pid : pids_of(*app))
      EXPECT_NE(::access((std::string(live::kDefaultDir) + "/" +
                          live::file_name(app == &a   ? 65534
                                          : app == &b ? 65533
                                                      : 0,
                                          pid))
                             .c_str(),
                         F_OK),
                0)
          << "a live file left in /dev/shm for pid " << pid;
  }
}

// ---------------------------------------------------------------------------
// fabtrace metrics: promtool's check, and a real node_exporter serving it.

// The samples of a Prometheus text: "name{sorted labels}" -> value (labels in
// name order, as an exporter may write them in any order).
std::map<std::string, std::string> samples(const std::string& text, const std::string& family) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  static const std::regex label(R"re(([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)")re");
  while (std::getline(in, line)) {
    if (line.rfind(family + "{", 0) != 0) continue;
    const size_t close = line.rfind('}');
    if (close == std::string::npos) continue;
    std::map<std::string, std::string> labels;
    const std::string inner = line.substr(family.size() + 1, close - family.size() - 1);
    for (std::sregex_iterator it(inner.begin(), inner.end(), label), end; it != end; ++it)
      labels[(*it)[1]] = (*it)[2];
    std::string key = family + "{";
    for (const auto& [k, v] : labels) key += k + "=" + v + ",";
    out[key + "}"] = line.substr(line.find(' ', close) + 1);
  }
  return out;
}

TEST(LiveMetrics, TextfilePassesPromtoolAndNodeExporterServesItOnLoopback) {
  REQUIRE_PROGRAM("promtool", "prometheus");
  REQUIRE_PROGRAM("prometheus-node-exporter", "prometheus-node-exporter");
  REQUIRE_PROGRAM("curl", "curl");
  HeldApp app("live-metrics", "tagged", 500);
  ASSERT_GT(app.pid, 0);
  ASSERT_TRUE(app.wait_results()) << slurp(app.dir + "/app.log");
  const std::map<int, live::Snapshot> snap = settled(app);
  ASSERT_EQ(snap.size(), 2u);
  const std::string prom_dir = make_temp_dir("live-metrics-prom");
  ASSERT_EQ(::chmod(prom_dir.c_str(), 0755), 0);
  const std::string file = prom_dir + "/fabtrace.prom";
  const RunResult w = run(
      {FABTRACE_CLI, "metrics", "--once", "--textfile", file, "--dir", app.live_dir}, {}, false);
  ASSERT_EQ(w.exit_code, 0) << w.output;
  const std::string text = slurp(file);
  const RunResult check = run({"sh", "-c", "promtool check metrics < \"$0\"", file}, {}, false);
  EXPECT_EQ(check.exit_code, 0) << check.output << "\n" << text;
  // The ops series add up to what each rank completed, by function.
  std::map<std::pair<std::string, std::string>, uint64_t> got;
  static const std::regex ops(
      R"re(^fabtrace_ops_total\{.*rank="(\d+)".*op="([a-z_]+)"\} (\d+)$)re");
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, ops) && std::stoull(m[3])) got[{m[1], m[2]}] += std::stoull(m[3]);
  }
  std::map<std::pair<std::string, std::string>, uint64_t> want;
  for (int rank : {0, 1}) {
    const nlohmann::json c = app.result(rank).at("completed");
    for (auto it = c.begin(); it != c.end(); ++it)
      if (it.value().get<uint64_t>())
        want[{std::to_string(rank), it.key()}] = it.value().get<uint64_t>();
  }
  EXPECT_EQ(got, want) << text;

  // A real node_exporter reads the directory and serves the series on loopback.
  const std::string port = std::to_string(free_port());
  const int ne = spawn(
      {"prometheus-node-exporter", "--collector.disable-defaults", "--collector.textfile",
       "--collector.textfile.directory=" + prom_dir, "--web.listen-address=127.0.0.1:" + port},
      {}, prom_dir + "/../node-exporter-" + port + ".log", false);
  ASSERT_GT(ne, 0);
  ASSERT_TRUE(wait_listening(std::stoi(port), 60));
  const RunResult scrape =
      run({"curl", "-sS", "--max-time", "20", "http://127.0.0.1:" + port + "/metrics"}, {}, false);
  ::kill(ne, SIGTERM);
  wait_for(ne, 30);
  ASSERT_EQ(scrape.exit_code, 0) << scrape.output;
  EXPECT_NE(scrape.output.find("node_textfile_scrape_error 0"), std::string::npos) << scrape.output;
  for (const char* family : {"fabtrace_ops_total", "fabtrace_bytes_total",
                             "fabtrace_op_latency_seconds", "fabtrace_cq_gap_max_seconds"}) {
    const auto served = samples(scrape.output, family);
    EXPECT_FALSE(served.empty()) << family << "\n" << scrape.output;
    EXPECT_EQ(served.size(), samples(text, family).size()) << family;
    for (const auto& [k, v] : samples(text, family)) {
      const auto it = served.find(k);
      ASSERT_NE(it, served.end()) << k << " not served\n" << scrape.output;
      EXPECT_DOUBLE_EQ(std::stod(it->second), std::stod(v)) << k;
    }
  }

  // --interval: rewritten whole, by rename, and nothing else left in the directory.
  struct stat st0;
  ASSERT_EQ(::stat(file.c_str(), &st0), 0);
  const int loop =
      spawn({FABTRACE_CLI, "metrics", "--textfile", file, "--interval", "1", "--dir", app.live_dir},
            {}, app.dir + "/metrics.log", false);
  std::set<ino_t> inodes = {st0.st_ino};
  EXPECT_TRUE(eventually(
      [&] {
        struct stat st;
        if (::stat(file.c_str(), &st) == 0) inodes.insert(st.st_ino);
        return inodes.size() >= 3;
      },
      60))
      << "the file was not rewritten twice";
  ::kill(loop, SIGTERM);
  EXPECT_EQ(wait_for(loop, 30), 0) << slurp(app.dir + "/metrics.log");
  std::vector<std::string> left;
  for (const std::string& f : list_files(prom_dir, "", ""))
    if (f != prom_dir + "/." && f != prom_dir + "/..") left.push_back(f);
  EXPECT_EQ(left, (std::vector<std::string>{file}));
  int rc = -1;
  app.release_and_wait(&rc);
  EXPECT_EQ(rc, 0);
}

}  // namespace
}  // namespace fabtrace::test
