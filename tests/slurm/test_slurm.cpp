// fabtrace_spank.so on a real Slurm: a one-node cluster of the tests' own
// (cluster.sh: munged, slurmctld, slurmd, in a temporary directory, stopped
// and removed at the end however the tests end), a user the fixture creates,
// and `srun --fabtrace` on a real fi_pingpong pair. Where this machine cannot
// run the cluster, every test fails saying why.
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tests/integration/harness.h"

using namespace fabtrace::test;

namespace {

const char* const kUser = "fabtrace-slurm";  // the fixture's unprivileged user
const char* const kSendOps[] = {"fi_send",     "fi_sendv",  "fi_sendmsg",
                                "fi_senddata", "fi_inject", "fi_injectdata"};
const char* const kRecvOps[] = {"fi_recv", "fi_recvv", "fi_recvmsg"};

uint64_t sum(const std::map<std::string, OpTotals>& t, const char* const* ops, size_t n,
             bool issued) {
  uint64_t s = 0;
  for (size_t i = 0; i < n; ++i)
    if (auto it = t.find(ops[i]); it != t.end())
      s += issued ? it->second.issued() : it->second.count;
  return s;
}

// A directory's entries, without "." and "..".
std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  for (const std::string& p : list_files(dir, "", "")) {
    const std::string n = p.substr(p.rfind('/') + 1);
    if (n != "." && n != "..") out.push_back(p);
  }
  return out;
}

// Every entry of a directory, recursively, with its owner.
void owners(const std::string& dir, std::map<std::string, uid_t>* out) {
  for (const std::string& p : entries(dir)) {
    struct stat st;
    if (lstat(p.c_str(), &st) != 0) continue;
    (*out)[p] = st.st_uid;
    if (S_ISDIR(st.st_mode)) owners(p, out);
  }
}

// A directory's entries with their sizes and owners: what "nothing of the
// victim's changes" compares.
std::string snapshot(const std::string& dir) {
  std::string s;
  for (const std::string& p : entries(dir)) {
    struct stat st;
    if (lstat(p.c_str(), &st) == 0)
      s += p + " " + std::to_string(st.st_uid) + " " + std::to_string(st.st_size) + " " +
           std::to_string(st.st_mtime) + "\n";
  }
  return s;
}

// The established TCP connections of process `pid` (its fds' sockets in
// /proc/PID/net/tcp{,6} with state 01).
int established_tcp(pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::set<std::string> inodes;
  for (const std::string& fd : entries(proc + "/fd")) {
    char link[128] = {};
    const ssize_t n = readlink(fd.c_str(), link, sizeof(link) - 1);
    const std::string l(link, n > 0 ? static_cast<size_t>(n) : 0);
    if (l.rfind("socket:[", 0) == 0) inodes.insert(l.substr(8, l.size() - 9));
  }
  int count = 0;
  for (const char* table : {"/net/tcp", "/net/tcp6"}) {
    std::ifstream in(proc + table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string sl, local, remote, st, queues, tr, retr, uid, timeout, inode;
      if (f >> sl >> local >> remote >> st >> queues >> tr >> retr >> uid >> timeout >> inode &&
          st == "01" && inodes.count(inode))
        ++count;
    }
  }
  return count;
}

class Slurm : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (geteuid() != 0) {
      why_ = "the slurm tests need root: slurmd starts each task as its user";
      return;
    }
    if (!std::ifstream(SPANK_PLUGIN)) {
      why_ = std::string("the plugin was not built: ") + SPANK_PLUGIN;
      return;
    }
    root_ = make_temp_dir("slurm");
    chmod(root_.c_str(), 0755);  // the user's tasks reach the cluster's files
    if (!getpwnam(kUser)) {
      const RunResult u = run(
          {"useradd", "--system", "--user-group", "--no-create-home", "--shell", "/bin/sh", kUser},
          {}, false, 60);
      if (u.exit_code != 0) {
        why_ = "cannot create the user " + std::string(kUser) + ": " + u.output;
        return;
      }
      created_user_ = true;
    }
    // The node's name, as cluster.sh gives it to Slurm (hostname -s).
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    node_ = host;
    node_ = node_.substr(0, node_.find('.'));
    const passwd* pw = getpwnam(kUser);
    uid_ = pw->pw_uid;
    gid_ = pw->pw_gid;
    // The preload of the build (after the sanitizer runtime when there is one).
    std::string preload = SANITIZER_PRELOAD;
    preload += (preload.empty() ? "" : ":") + std::string(FABTRACE_LIB);
    plugin_args_ = "allow_record=1 preload=" + preload + " fabtrace=" + FABTRACE_CLI;
    const RunResult up =
        run({CLUSTER_SH, "up", root_ + "/cluster", SPANK_PLUGIN, plugin_args_}, {}, false, 120);
    if (up.exit_code != 0) {
      why_ = "this machine cannot run the test's Slurm: " + up.output;
      return;
    }
    conf_ = root_ + "/cluster/slurm.conf";
    // The user's own directory for the outputs, and a place for their scripts.
    user_dir_ = root_ + "/user";
    mkdir(user_dir_.c_str(), 0755);
    if (chown(user_dir_.c_str(), uid_, gid_) != 0) why_ = "chown of the user's directory failed";
    const std::string script = root_ + "/pingpong.sh";
    std::ofstream(script) << R"(#!/bin/sh
# Rank 0 the fi_pingpong server, rank 1 its client (when the server listens).
echo $$ > "$PIDDIR/pid.$SLURM_PROCID"
args="-p tcp;ofi_rxm -e rdm -I $ITERS -S 1024"
if [ "$SLURM_PROCID" = 0 ]; then exec fi_pingpong $args -B "$PORT"; fi
i=0
until ss -Hltn "sport = :$PORT" | grep -q .; do
  i=$((i + 1)); [ $i -gt 600 ] && { echo "the server never listened on $PORT" >&2; exit 1; }
  sleep 0.1
done
exec fi_pingpong $args -P "$PORT" 127.0.0.1
)";
    chmod(script.c_str(), 0755);
  }

  static void TearDownTestSuite() {
    if (!root_.empty()) {
      run({"scancel", "--full", "-u", kUser}, {{"SLURM_CONF", conf_}}, false, 30);
      run({CLUSTER_SH, "down", root_ + "/cluster"}, {}, false, 120);
      run({"rm", "-rf", root_}, {}, false, 120);
    }
    if (created_user_) run({"userdel", kUser}, {}, false, 60);
  }

  void SetUp() override {
    if (!why_.empty()) FAIL() << why_;
  }

  // argv run as the fixture's user, with the cluster's configuration.
  static std::vector<std::string> as_user(std::vector<std::string> argv) {
    std::vector<std::string> v = {"setpriv",
                                  "--reuid=" + std::to_string(uid_),
                                  "--regid=" + std::to_string(gid_),
                                  "--init-groups",
                                  "env",
                                  "SLURM_CONF=" + conf_,
                                  "HOME=" + user_dir_};
    v.insert(v.end(), argv.begin(), argv.end());
    return v;
  }

  // srun -n 2 OPTIONS of the fi_pingpong pair (pingpong.sh), ITERS each way,
  // the ranks' pids into PIDDIR.
  static RunResult pingpong(const std::vector<std::string>& options, long iters,
                            const std::string& piddir) {
    std::vector<std::string> argv = {"srun", "-n", "2", "-D", user_dir_};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.push_back(root_ + "/pingpong.sh");
    return run(as_user(argv),
               {{"ITERS", std::to_string(iters)},
                {"PORT", std::to_string(free_port())},
                {"PIDDIR", piddir}},
               false, 180);
  }

  // A fresh directory of the user's under theirs.
  static std::string user_subdir(const std::string& name) {
    const std::string d = user_dir_ + "/" + name;
    mkdir(d.c_str(), 0755);
    EXPECT_EQ(chown(d.c_str(), uid_, gid_), 0);
    return d;
  }

  // The step directory srun named on its last line.
  static std::string step_dir_of(const std::string& output, std::string* job) {
    std::smatch m;
    static const std::regex re(
        "fabtrace: the outputs of step ([0-9]+)\\.0 are in (\\S+): fabtrace report (\\S+)");
    if (!std::regex_search(output, m, re) || m[2] != m[3]) return "";
    *job = m[1];
    return m[2];
  }

  // The step srun named (DIR/<job>.0 of --fabtrace=DIR) and its one report
  // of each rank.
  static void rank_reports(const std::string& output, const std::string& out, std::string* job,
                           std::string* step, std::vector<nlohmann::json>* r0,
                           std::vector<nlohmann::json>* r1) {
    *step = step_dir_of(output, job);
    ASSERT_EQ(*step, out + "/" + *job + ".0") << output;
    *r0 = reports_of_rank(*step, "0");
    *r1 = reports_of_rank(*step, "1");
    ASSERT_EQ(r0->size(), 1u) << output;
    ASSERT_EQ(r1->size(), 1u) << output;
  }

  // The plugin's plugstack.conf line for the steps started meanwhile (srun
  // and slurmstepd read it at each step); the fixture's own line again after.
  struct PluginArgs {
    explicit PluginArgs(const std::string& args) { write(args); }
    ~PluginArgs() { write(plugin_args_); }
    static void write(const std::string& args) {
      std::ofstream(root_ + "/cluster/plugstack.conf")
          << "required " << SPANK_PLUGIN << " " << args << "\n";
    }
  };

  static inline std::string why_, root_, conf_, user_dir_, node_, plugin_args_;
  static inline uid_t uid_ = 0;
  static inline gid_t gid_ = 0;
  static inline bool created_user_ = false;
};

// srun -n 2 --fabtrace=DIR on a real pair: rank reports r0 and r1 in
// DIR/<job>.0, with the job's ids and node list, op counts that are fi_pingpong's, every
// file the user's.
TEST_F(Slurm, SrunFabtraceTracesEachRankIntoTheStepsDirectory) {
  const std::string out = user_subdir("plain"), pids = user_subdir("plain-pids");
  const int iters = 500;
  const RunResult r = pingpong({"--fabtrace=" + out}, iters, pids);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string job, step;
  std::vector<nlohmann::json> r0, r1;
  ASSERT_NO_FATAL_FAILURE(rank_reports(r.output, out, &job, &step, &r0, &r1));
  for (const auto* rep : {&r0[0], &r1[0]}) {
    const nlohmann::json j = rep->value("job", nlohmann::json::object());
    EXPECT_EQ(j.value("launcher", ""), "slurm");
    EXPECT_EQ(j.value("job_id", ""), job);
    EXPECT_EQ(j.value("step_id", ""), "0");
    EXPECT_EQ(j.value("node_list", ""), node_);  // the step's nodes, as Slurm set them
    EXPECT_NE(j.value("command", "").find("fi_pingpong"), std::string::npos) << j.dump();
  }
  // fi_pingpong -I N: each side sent N data messages and a few sync ones;
  // every message one side sent, the other received.
  const auto t0 = op_totals(r0[0]), t1 = op_totals(r1[0]);
  const uint64_t sent0 = sum(t0, kSendOps, 6, true), sent1 = sum(t1, kSendOps, 6, true);
  EXPECT_GE(sent0, static_cast<uint64_t>(iters));
  EXPECT_LE(sent0, static_cast<uint64_t>(iters) + 4);
  EXPECT_GE(sent1, static_cast<uint64_t>(iters));
  EXPECT_LE(sent1, static_cast<uint64_t>(iters) + 4);
  EXPECT_EQ(sum(t1, kRecvOps, 3, false), sent0);
  EXPECT_EQ(sum(t0, kRecvOps, 3, false), sent1);

  std::map<std::string, uid_t> own;
  owners(step, &own);
  own[step] = 0;
  struct stat st;
  ASSERT_EQ(stat(step.c_str(), &st), 0);
  own[step] = st.st_uid;
  EXPECT_GE(own.size(), 3u);
  for (const auto& [p, u] : own) EXPECT_EQ(u, uid_) << p;
}

// --fabtrace-report: at the step's end, on the node of task 0, `fabtrace
// report` runs as the user into <step>/report; srun's stderr names its
// summary, which names the job, its node and both ranks.
TEST_F(Slurm, SrunFabtraceReportWritesTheStepsReportAsTheUser) {
  const std::string out = user_subdir("report");
  const RunResult r =
      pingpong({"--fabtrace=" + out, "--fabtrace-report"}, 200, user_subdir("report-pids"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string job;
  const std::string step = step_dir_of(r.output, &job);
  ASSERT_EQ(step, out + "/" + job + ".0") << r.output;
  const std::string summary = step + "/report/summary.txt";
  EXPECT_NE(r.output.find("fabtrace: the report of step " + job + ".0: " + summary + "\n"),
            std::string::npos)
      << r.output;
  // The report's directory and every file in it, the user's (not root's).
  std::map<std::string, uid_t> own;
  owners(step + "/report", &own);
  struct stat st;
  ASSERT_EQ(lstat((step + "/report").c_str(), &st), 0) << r.output;
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_uid, uid_);
  EXPECT_EQ(st.st_gid, gid_);
  for (const char* f : {"/summary.txt", "/report.html", "/manifest.json"})
    EXPECT_EQ(own.count(step + "/report" + f), 1u) << f << "\n" << r.output;
  for (const auto& [p, u] : own) EXPECT_EQ(u, uid_) << p;
  // The summary: the job with its node, both ranks.
  const std::string text = slurp(summary);
  EXPECT_NE(text.find("launcher  slurm job " + job + " step 0 on " + node_ + "\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(", 2 ranks,"), std::string::npos) << text;
  EXPECT_NE(text.find(" r0 "), std::string::npos) << text;
  EXPECT_NE(text.find(" r1 "), std::string::npos) << text;
}

// sbatch --fabtrace: the batch script runs untraced, each srun step in it is
// traced into its own directory (Slurm passes the option through the job's
// environment).
TEST_F(Slurm, SbatchFabtraceTracesTheStepsOfTheScript) {
  const std::string out = user_subdir("batch"), script = root_ + "/job.sh";
  std::ofstream(script) << "#!/bin/sh\necho batch: ${FABTRACE_DIR:-unset}\n"
                           "srun -n 1 sh -c 'echo step: $FABTRACE_DIR'\n";
  chmod(script.c_str(), 0755);
  const std::string log = user_dir_ + "/batch.out";
  const RunResult r =
      run(as_user({"sbatch", "--wait", "-o", log, "-D", user_dir_, "--fabtrace=" + out, script}),
          {}, false, 180);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string text = slurp(log);
  EXPECT_NE(text.find("batch: unset"), std::string::npos) << text;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex("step: (\\S+)\n"))) << text;
  const std::string step = m[1];
  EXPECT_EQ(step.rfind(out + "/", 0), 0u) << text;
  EXPECT_EQ(step.substr(step.size() - 2), ".0") << text;
  struct stat st;
  ASSERT_EQ(lstat(step.c_str(), &st), 0) << text;
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_uid, uid_);
  EXPECT_NE(text.find("fabtrace: the outputs of step "), std::string::npos) << text;
}

// Open MPI under Slurm's PMIx (srun --mpi=pmix; pml cm, mtl ofi, no shm
// provider: the ranks talk through the traced data path): two rank reports,
// every message rank 0 sent received by rank 1 and the other way round.
TEST_F(Slurm, OpenMpiUnderSrunPmixGivesEachRankItsReport) {
  ASSERT_FALSE(std::string(MPI_PINGPONG).empty())
      << "Open MPI was not found at build time: scripts/install-deps installs libopenmpi-dev";
  const std::string out = user_subdir("mpi");
  const RunResult r = run(as_user({"srun", "--mpi=pmix", "-n", "2", "-D", user_dir_,
                                   "--fabtrace=" + out, MPI_PINGPONG, "300", "4096"}),
                          {{"OMPI_MCA_pml", "cm"},
                           {"OMPI_MCA_mtl", "ofi"},
                           {"OMPI_MCA_mtl_ofi_provider_exclude", "shm"}},
                          false, 180);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("rank 0: 300 round trips, 0 bad bytes"), std::string::npos) << r.output;
  std::string job, step;
  std::vector<nlohmann::json> r0, r1;
  ASSERT_NO_FATAL_FAILURE(rank_reports(r.output, out, &job, &step, &r0, &r1));
  const char* const sends[] = {"fi_tsend",     "fi_tsendv",  "fi_tsendmsg",
                               "fi_tsenddata", "fi_tinject", "fi_tinjectdata"};
  const char* const recvs[] = {"fi_trecv", "fi_trecvv", "fi_trecvmsg"};
  const auto t0 = op_totals(r0[0]), t1 = op_totals(r1[0]);
  EXPECT_GE(sum(t0, sends, 6, true), 300u);
  EXPECT_EQ(sum(t1, recvs, 3, false), sum(t0, sends, 6, true));
  EXPECT_EQ(sum(t0, recvs, 3, false), sum(t1, sends, 6, true));
  EXPECT_EQ(r0[0].value("job", nlohmann::json::object()).value("job_id", ""), job);
}

// --fabtrace-record: slurmstepd runs the kernel session for the step's tasks;
// a planted 1 s stop of rank 0 is in the kernel log of the step's
// directory (the user's), and the user's `fabtrace report` explains it.
TEST_F(Slurm, SrunFabtraceRecordExplainsAStoppedRank) {
  SKIP_IF_RECORD_SESSION(kNeedsOwnSession);
  const std::string out = user_subdir("record"), pids = user_subdir("record-pids");
  // fi_pingpong has no duration: its iterations for about 6 s (two transfers
  // each), from its own time per transfer in a short run here.
  const RunResult cal = pingpong({}, 200, user_subdir("calibrate"));
  ASSERT_EQ(cal.exit_code, 0) << cal.output;
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(cal.output, m, std::regex("1k +200 += ?200 +\\S+ +\\S+ +\\S+ +([0-9.]+)")))
      << cal.output;
  const double us = std::stod(m[1]);
  const long iters = std::max(400L, std::min(2000000L, static_cast<long>(3e6 / std::max(us, 1.0))));
  const std::string log = root_ + "/record-srun.log";
  const int srun = spawn(
      as_user({"srun", "-n", "2", "-D", user_dir_, "--fabtrace=" + out, "--fabtrace-record",
               root_ + "/pingpong.sh"}),
      {{"ITERS", std::to_string(iters)}, {"PORT", std::to_string(free_port())}, {"PIDDIR", pids}},
      log, false);
  ASSERT_GT(srun, 0);
  // A failed assertion below leaves no step (and no session) behind.
  struct CancelSteps {
    ~CancelSteps() { run({"scancel", "--full", "-u", kUser}, {{"SLURM_CONF", conf_}}, false, 30); }
  } cancel_steps;
  const std::string about = "fi_pingpong -I " + std::to_string(iters) + " after " + m.str(0);
  // Rank 0 once its exchange runs: besides fi_pingpong's own control
  // connection, the provider's data connection is established.
  pid_t rank0 = 0;
  for (int i = 0; i < 1200 && !rank0; ++i) {
    const std::string p0 = slurp(pids + "/pid.0");
    if (!p0.empty() && established_tcp(std::stoi(p0)) >= 2) rank0 = std::stoi(p0);
    if (!rank0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_GT(rank0, 0) << about << "\n" << slurp(log);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(kill(rank0, SIGSTOP), 0) << "rank 0 ended before the stop: " << about << "\n"
                                     << slurp(log);
  for (int i = 0; i < 100; ++i) {
    const std::string stat = slurp("/proc/" + std::to_string(rank0) + "/stat");
    const size_t paren = stat.rfind(')');
    if (paren != std::string::npos && stat.size() > paren + 2 && stat[paren + 2] == 'T') break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // One second: the report names each CQ's longest gap, and on a loaded
  // machine a preemption of rank 0 alone has lasted 209 ms, longer than a
  // 200 ms stop (the stop's gap was then not the one shown).
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  ASSERT_EQ(kill(rank0, SIGCONT), 0);
  ASSERT_EQ(wait_for(srun, 300), 0) << slurp(log);
  const std::string output = slurp(log);
  std::string job;
  const std::string step = step_dir_of(output, &job);
  ASSERT_FALSE(step.empty()) << output;

  // The session's files: its log of messages and the kernel log, the user's.
  const auto klogs = list_files(step, "fabtrace_kernel.", ".klog");
  ASSERT_EQ(klogs.size(), 1u) << output << slurp(list_files(step, "fabtrace_record.", ".log")[0]);
  std::map<std::string, uid_t> own;
  owners(step, &own);
  for (const auto& [p, u] : own) EXPECT_EQ(u, uid_) << p;
  ASSERT_EQ(reports_of_rank(step, "0").size(), 1u) << output;

  // The user runs the report: the stop of rank 0 is the why of its longest gap.
  const RunResult rep =
      run(as_user({FABTRACE_CLI, "report", step, "-o", step + "/report"}), {}, false, 300);
  ASSERT_EQ(rep.exit_code, 0) << rep.output;
  const size_t gaps = rep.output.find("longest CQ poll gaps");
  ASSERT_NE(gaps, std::string::npos) << rep.output;
  // Rank 0's gap, as long as the stop at least, and the stop its why.
  std::smatch g;
  const std::string tail = rep.output.substr(gaps);
  ASSERT_TRUE(std::regex_search(tail, g,
                                std::regex("\\n  \\S+ r0 CQ#[0-9]+ +([0-9.]+) (ms|s) [^\\n]*\\n"
                                           " +why: stopped \\(SIGSTOP or a debugger\\)")))
      << rep.output;
  EXPECT_GE(std::stod(g[1]) * (g[2] == "s" ? 1000 : 1), 1000.0) << g.str(0);
}

// A user's --fabtrace into another user's directory, or through a link planted
// at the step's name, is refused; the victim's directory does not change.
TEST_F(Slurm, AnotherUsersDirectoryAndAPlantedLinkAreRefused) {
  const std::string victim = root_ + "/victim";
  mkdir(victim.c_str(), 0777);
  chmod(victim.c_str(), 0777);  // writable by everyone, and still not theirs
  ASSERT_EQ(chown(victim.c_str(), 65534, 65534), 0);
  std::ofstream(victim + "/keep.txt") << "the victim's\n";
  const std::string before = snapshot(victim);

  const RunResult r = run(as_user({"srun", "-n", "1", "-D", user_dir_, "--fabtrace=" + victim, "sh",
                                   "-c", "echo FABTRACE_DIR=${FABTRACE_DIR:-unset}"}),
                          {}, false, 120);
  EXPECT_EQ(r.exit_code, 0) << r.output;  // the job runs, untraced
  EXPECT_NE(r.output.find("owned by uid 65534, not by you or root: refused"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("FABTRACE_DIR=unset"), std::string::npos) << r.output;
  // srun claims no outputs it cannot see.
  EXPECT_EQ(r.output.find("the outputs of step"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("no directory " + victim + "/"), std::string::npos) << r.output;
  EXPECT_EQ(snapshot(victim), before);

  // The user plants <job>.0 -> the victim's directory for an allocation of
  // theirs, then runs a step in it.
  const std::string out = user_subdir("planted");
  const RunResult alloc =
      run(as_user({"salloc", "-n", "1", "--no-shell", "-D", user_dir_}), {}, false, 120);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(alloc.output, m, std::regex("Granted job allocation ([0-9]+)")))
      << alloc.output;
  const std::string job = m[1];
  ASSERT_EQ(run(as_user({"ln", "-s", victim, out + "/" + job + ".0"}), {}, false, 30).exit_code, 0);
  const RunResult s =
      run(as_user({"srun", "--jobid=" + job, "-n", "1", "-D", user_dir_, "--fabtrace=" + out, "sh",
                   "-c", "echo FABTRACE_DIR=${FABTRACE_DIR:-unset}"}),
          {}, false, 120);
  run({"scancel", job}, {{"SLURM_CONF", conf_}}, false, 30);
  EXPECT_EQ(s.exit_code, 0) << s.output;
  EXPECT_NE(
      s.output.find("refused (the step's directory must be a directory of yours, not a link)"),
      std::string::npos)
      << s.output;
  EXPECT_NE(s.output.find("FABTRACE_DIR=unset"), std::string::npos) << s.output;
  EXPECT_EQ(s.output.find("the outputs of step"), std::string::npos) << s.output;
  EXPECT_NE(s.output.find("fabtrace: step " + job + ".0: no directory " + out + "/" + job +
                          ".0 of yours on this host"),
            std::string::npos)
      << s.output;
  EXPECT_EQ(snapshot(victim), before);
  struct stat st;
  ASSERT_EQ(lstat((out + "/" + job + ".0").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
}

// `fabtrace record --owner UID:GID` (what the plugin runs as root) writes only
// into a directory of that user's: another's is refused before anything is
// written, and nothing of it changes.
TEST_F(Slurm, RecordOwnerRefusesADirectoryNotTheOwners) {
  SKIP_IF_RECORD_SESSION(kNeedsOwnSession);
  const std::string victim = root_ + "/victim-record";
  mkdir(victim.c_str(), 0777);
  chmod(victim.c_str(), 0777);
  ASSERT_EQ(chown(victim.c_str(), 65534, 65534), 0);
  const std::string before = snapshot(victim);
  const RunResult r =
      run({FABTRACE_CLI, "record", "--only-pids", "--pid", std::to_string(getpid()), "--owner",
           std::to_string(uid_) + ":" + std::to_string(gid_), "-o", victim, "--duration", "1"},
          {}, false, 120);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("owned by uid 65534, not by the outputs' owner uid " +
                          std::to_string(uid_) + ": refused"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(snapshot(victim), before);
}

// The site's preload list: what comes before the preload (a runtime that
// must load first, here a library of the test's and, in a sanitized build,
// the sanitizer's runtime) goes before the task's own LD_PRELOAD; the preload
// is appended after it. Every library of the three is loaded.
TEST_F(Slurm, SitePreloadFirstGoesFirstAndThePreloadLast) {
  std::string first = SANITIZER_PRELOAD;
  first += (first.empty() ? "" : ":") + std::string(SITE_FIRST_LIB);
  const PluginArgs args("allow_record=1 preload=" + first + ":" + FABTRACE_LIB +
                        " fabtrace=" + FABTRACE_CLI);
  const std::string out = user_subdir("preload-order");
  const RunResult r =
      run(as_user({"env", std::string("LD_PRELOAD=") + USER_PRELOAD_LIB, "srun", "-n", "1", "-D",
                   user_dir_, "--fabtrace=" + out, "sh", "-c",
                   "echo \"LD_PRELOAD=$LD_PRELOAD\"; grep -o 'slurm_[a-z_]*\\.so' /proc/self/maps "
                   "| sort -u"}),
          {}, false, 120);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(
      r.output.find("LD_PRELOAD=" + first + ":" + USER_PRELOAD_LIB + ":" + FABTRACE_LIB + "\n"),
      std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("slurm_site_first.so\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("slurm_user_preload.so\n"), std::string::npos) << r.output;
}

// A second --fabtrace-record step on a node whose session is taken runs
// without one, not queued, and the user is told in one line.
TEST_F(Slurm, ASecondRecordStepOnTheNodeIsToldInOneLine) {
  SKIP_IF_RECORD_SESSION(kNeedsOwnSession);
  const std::string out = user_subdir("second"), done = user_dir_ + "/second.done";
  const std::string log = root_ + "/second-first.log";
  // The first step holds the node's session until the test lets it end.
  const int first = spawn(
      as_user(
          {"srun", "-n", "1", "-D", user_dir_, "--fabtrace=" + out, "--fabtrace-record", "sh", "-c",
           "i=0; while [ ! -e " + done + " ] && [ $i -lt 600 ]; do i=$((i+1)); sleep 0.1; done"}),
      {}, log, false);
  ASSERT_GT(first, 0);
  struct CancelSteps {
    ~CancelSteps() { run({"scancel", "--full", "-u", kUser}, {{"SLURM_CONF", conf_}}, false, 30); }
  } cancel_steps;
  bool attached = false;
  for (int i = 0; i < 1200 && !attached; ++i) {
    for (const std::string& d : entries(out))
      for (const std::string& l : list_files(d, "fabtrace_record.", ".log"))
        attached |= slurp(l).find("attach points attached") != std::string::npos;
    if (!attached) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(attached) << slurp(log);
  const RunResult second = run(as_user({"srun", "-n", "1", "-D", user_dir_, "--fabtrace=" + out,
                                        "--fabtrace-record", "echo", "the second step ran"}),
                               {}, false, 120);
  std::ofstream(done) << "";
  EXPECT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("the second step ran\n"), std::string::npos) << second.output;
  // One line says it, and nothing else of the session's.
  const std::string said =
      ": error: fabtrace: no kernel session for this step on this node: another "
      "fabtrace record session runs here (one per node); the preload traces the step all the "
      "same\n";
  EXPECT_NE(second.output.find(said), std::string::npos) << second.output;
  size_t lines = 0;
  for (size_t a = 0; a < second.output.size();) {
    const size_t b = std::min(second.output.find('\n', a), second.output.size());
    lines += second.output.substr(a, b - a).find("fabtrace") != std::string::npos;
    a = b + 1;
  }
  EXPECT_EQ(lines, 2u) << second.output;  // that line and srun's "the outputs of step"
  EXPECT_EQ(wait_for(first, 120), 0) << slurp(log);
}

}  // namespace
