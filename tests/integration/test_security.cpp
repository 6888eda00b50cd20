// Issue 28: the root collector (`fabtrace record`) and the tools that write
// files (`report`, `export -o`, the preload) against unprivileged users and
// hostile directories. The attacker is uid 65534 (setpriv), with tools of its
// own (tests/apps/hostile_usdt.cpp: a libfabtrace.so of its making with the
// preload's USDT probes; tests/apps/row_flood.cpp); the victim is a root-owned
// file or directory whose bytes must not change. Each test names the row of
// the issue's table it covers.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/rank.h"
#include "tests/integration/harness.h"
#include "tests/integration/record_session.h"
#include "tests/unit/fake_cxi_tree.h"

namespace fabtrace::test {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kNobody = 65534;

#ifdef HOSTILE_USDT
#define REQUIRE_HOSTILE() (void)0
#else
#define HOSTILE_USDT ""
#define HOSTILE_LIB ""
#define REQUIRE_HOSTILE() GTEST_SKIP() << "built without <sys/sdt.h>: no hostile probes"
#endif

// argv run as the attacker.
std::vector<std::string> as_nobody(std::vector<std::string> argv) {
  argv.insert(argv.begin(), {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"});
  return argv;
}

// A directory of the attacker's own.
std::string nobody_dir(const std::string& tag) {
  const std::string d = make_temp_dir(tag);
  EXPECT_EQ(::chown(d.c_str(), kNobody, kNobody), 0);
  EXPECT_EQ(::chmod(d.c_str(), 0755), 0);
  return d;
}

void put(const std::string& path, const std::string& text, mode_t mode) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  ::chmod(path.c_str(), mode);
}

// Every name in a directory (links included), sorted.
std::set<std::string> names_in(const std::string& dir) {
  std::set<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.insert(e.path().filename());
  return out;
}

// A root-only directory holding one precious 0600 file: what must not change.
struct Victim {
  std::string dir, file;
  Victim() {
    dir = make_temp_dir("sec-victim");
    file = dir + "/links.csv";
    put(file, "root's precious bytes\n", 0600);
  }
  void expect_untouched() const {
    EXPECT_EQ(slurp(file), "root's precious bytes\n");
    struct stat st;
    ASSERT_EQ(::lstat(file.c_str(), &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, 0600u);
    EXPECT_EQ(st.st_uid, 0u);
    EXPECT_EQ(names_in(dir), std::set<std::string>{"links.csv"}) << "a file created in " << dir;
  }
};

// The attacker's copy of its libfabtrace.so in a directory of its own.
std::string nobody_copy(const std::string& dir) {
  const std::string lib = dir + "/libfabtrace.so";
  fs::copy_file(HOSTILE_LIB, lib, fs::copy_options::overwrite_existing);
  EXPECT_EQ(::chown(lib.c_str(), kNobody, kNobody), 0);
  return lib;
}

bool maps_contain(int pid, const std::string& what) {
  return slurp("/proc/" + std::to_string(pid) + "/maps").find(what) != std::string::npos;
}

// `fabtrace record -o DIR ARGS...` in the background, its output in LOG.
int spawn_record(const std::string& dir, const std::string& log,
                 const std::vector<std::string>& args, Env env = {}) {
  std::vector<std::string> argv = {FABTRACE_CLI, "record", "-o", dir};
  argv.insert(argv.end(), args.begin(), args.end());
  env.push_back({"FABTRACE_PRELOAD", preload_list()});
  return spawn(argv, env, log, false);
}

size_t count_of(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

// The number after `key` in text ("fired 123" -> 123), or -1.
long long number_after(const std::string& text, const std::string& key) {
  const size_t at = text.find(key);
  if (at == std::string::npos) return -1;
  return std::atoll(text.c_str() + at + key.size());
}

void kill_all(const std::vector<int>& pids) {
  for (int p : pids) kill(-p, SIGKILL);
  for (int p : pids) wait_for(p, 30);
}

std::string host_token() {
  char h[256] = {};
  gethostname(h, sizeof(h) - 1);
  return output_token(h);
}

// Row 1 (crash): an unprivileged user maps 40 copies of a libfabtrace.so,
// each at a path of its own. The session took every one until libbpf's 256
// USDT spec ids ran out, whose error path freed twice (abort, rc 134). Now a
// user's copies are bounded (said once), the spec budget is checked before
// libbpf is asked, and another user's copy is still attached.
TEST(Security, ManyCopiesOfTheLibraryNeitherCrashTheSessionNorCrowdOutOthers) {
  REQUIRE_SESSION_SLOT();
  REQUIRE_HOSTILE();
  const std::string base = nobody_dir("sec-copies");
  std::vector<int> attackers;
  for (int i = 0; i < 40; ++i) {
    const std::string d = base + "/c" + std::to_string(i);
    ASSERT_EQ(::mkdir(d.c_str(), 0755), 0);
    ASSERT_EQ(::chown(d.c_str(), kNobody, kNobody), 0);
    nobody_copy(d);
    attackers.push_back(spawn(as_nobody({HOSTILE_USDT, "idle", "90"}), {{"LD_LIBRARY_PATH", d}},
                              base + "/a" + std::to_string(i) + ".log", false));
  }
  for (size_t i = 0; i < attackers.size(); ++i)
    ASSERT_TRUE(eventually(
        [&] { return maps_contain(attackers[i], base + "/c" + std::to_string(i) + "/libfab"); },
        30));
  // Another user's copy (root's, in a directory of its own): attached whatever
  // the attacker brought.
  const std::string vdir = make_temp_dir("sec-copies-victim");
  fs::copy_file(HOSTILE_LIB, vdir + "/libfabtrace.so");
  const std::string out = make_temp_dir("sec-copies-out");
  const int rec = spawn_record(out, out + "/record.log", {"--duration", "8"});
  const int victim = spawn({HOSTILE_USDT, "mark-when-attached", "60"}, {{"LD_LIBRARY_PATH", vdir}},
                           out + "/victim.log", false);
  const int rec_rc = wait_for(rec, 120);
  const int victim_rc = wait_for(victim, 60);
  kill_all(attackers);
  const std::string log = slurp(out + "/record.log");
  ASSERT_EQ(rec_rc, 0) << log;  // 134: libbpf's double free
  EXPECT_EQ(count_of(log, "uid 65534's bound of 4 library files is reached"), 1u) << log;
  EXPECT_EQ(victim_rc, 0) << "the other user's copy was never attached\n"
                          << slurp(out + "/victim.log") << log;
  bool marked = false;
  for (const Event& e : export_kernel(kernel_log_of(out)))
    marked = marked || (e.kind == "mark" && static_cast<int>(e.pid) == victim);
  EXPECT_TRUE(marked) << log;
}

// Row 2 (hang): the attacker swaps its mapped library's path with a FIFO in
// a loop (renameat2 RENAME_EXCHANGE). The session opened the path and waited
// in open() for a writer, past --duration, until killed. Now the mapped file
// itself is opened (/proc/PID/map_files): the session ends on time, and the
// library is attached through the swapped path.
TEST(Security, ALibraryPathSwappedWithAFifoNeverHoldsTheSession) {
  REQUIRE_SESSION_SLOT();
  REQUIRE_HOSTILE();
  const std::string dir = nobody_dir("sec-fifo");
  const std::string lib = nobody_copy(dir);
  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  ASSERT_EQ(::chown(fifo.c_str(), kNobody, kNobody), 0);
  const int attacker = spawn(as_nobody({HOSTILE_USDT, "mark-when-attached", "60"}),
                             {{"LD_LIBRARY_PATH", dir}}, dir + "/attacker.log", false);
  ASSERT_TRUE(eventually([&] { return maps_contain(attacker, lib); }, 30));
  const int swapper =
      spawn(as_nobody({HOSTILE_USDT, "swap", lib, fifo, "60"}), {}, dir + "/swapper.log", false);
  const std::string out = make_temp_dir("sec-fifo-out");
  constexpr int kDuration = 4;
  const auto t0 = std::chrono::steady_clock::now();
  const int rec = spawn_record(out, out + "/record.log", {"--duration", std::to_string(kDuration)});
  const int rec_rc = wait_for(rec, kDuration + 40);  // killed (137) when it hangs
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int attacker_rc = wait_for(attacker, 30);
  kill_all({swapper});
  const std::string log = slurp(out + "/record.log");
  ASSERT_EQ(rec_rc, 0) << "took " << took << " s\n" << log;
  EXPECT_LT(took, kDuration + 30.0) << log;
  EXPECT_EQ(attacker_rc, 0) << "its library was not attached\n" << log;
}

// Row 3 (a): DIR is a link another user planted (to a root-only directory),
// or a link on the way to it: refused before anything is written there.
TEST(Security, RecordRefusesALinkOfAnotherUserAsItsDirectory) {
  REQUIRE_SESSION_SLOT();
  const Victim v;
  const std::string att = nobody_dir("sec-dirlink");
  ASSERT_EQ(::symlink(v.dir.c_str(), (att + "/out").c_str()), 0);
  ASSERT_EQ(::lchown((att + "/out").c_str(), kNobody, kNobody), 0);
  ASSERT_EQ(::symlink(v.dir.c_str(), (att + "/job").c_str()), 0);
  ASSERT_EQ(::lchown((att + "/job").c_str(), kNobody, kNobody), 0);
  for (const std::string& dir : {att + "/out", att + "/job/out"}) {
    const RunResult r = run({FABTRACE_CLI, "record", "-o", dir, "--duration", "1"}, {}, false);
    EXPECT_EQ(r.exit_code, 2) << dir << "\n" << r.output;
    EXPECT_NE(r.output.find("symbolic link"), std::string::npos) << r.output;
    EXPECT_EQ(count_of(r.output, "\n"), 1u) << r.output;
  }
  v.expect_untouched();
}

// Row 3 (b): DIR swapped for a link after the session started: the files
// made at its end (here the node's NIC counters) still go into the directory
// it opened, never into the link's target.
TEST(Security, RecordWritesOnlyIntoTheDirectoryItOpened) {
  REQUIRE_SESSION_SLOT();
  const Victim v;
  const std::string att = nobody_dir("sec-dirswap");
  const std::string dir = att + "/out";
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  FakeCxiTree tree;
  tree.populate_standard();
  const int rec = spawn_record(dir, att + "/record.log", {},
                               {{"FABTRACE_CXI_SYSFS_ROOT", tree.sysfs_root()},
                                {"FABTRACE_CXI_RUN_ROOT", tree.run_root()},
                                {"FABTRACE_NIC_MS", "5"}});
  ASSERT_TRUE(eventually(
      [&] {
        return slurp(att + "/record.log").find("attach points attached") != std::string::npos;
      },
      60))
      << slurp(att + "/record.log");
  // The attacker owns att: it moves the session's directory away and plants a link.
  const RunResult swap =
      run(as_nobody({"sh", "-c", "mv " + dir + " " + att + "/moved && ln -s " + v.dir + " " + dir}),
          {}, false);
  ASSERT_EQ(swap.exit_code, 0) << swap.output;
  kill(rec, SIGINT);
  const int rc = wait_for(rec, 60);
  const std::string log = slurp(att + "/record.log");
  EXPECT_EQ(rc, 0) << log;
  v.expect_untouched();
  EXPECT_EQ(list_files(att + "/moved", "fabtrace_nic.", ".csv").size(), 1u) << log;
  EXPECT_EQ(list_files(att + "/moved", "fabtrace_kernel.", ".klog").size(), 1u) << log;
}

// A job directory with both ranks' outputs (and per-op timelines) of a short
// traced run.
std::string traced_job() {
  const std::string dir = make_temp_dir("sec-job");
  const RunResult r = run({FT_APP, "--prov", "tcp;ofi_rxm", "--test", "tagged", "--count", "20",
                           "--size", "4096", "--timeout", "100"},
                          {{"FABTRACE_DIR", dir}, {"FABTRACE_OPS_RANKS", "all"}});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return dir;
}

// Row 3 (c): `fabtrace report` while another user swaps a directory on the
// way to its output directory with a link to a root-only tree, again and
// again: each output reopened the path and followed the link into the root-only
// tree, whose directory of the same name (root's own) passed the owner check,
// and root's 0600 links.csv there was replaced by a 0644 copy. Now the output
// directory is opened once (another user's link on the way refused) and
// written through: root's file keeps its bytes and mode.
TEST(Security, ReportNeverWritesThroughAnOutputDirectorySwappedWhileItRuns) {
  REQUIRE_ROOT();
  REQUIRE_HOSTILE();
  const std::string root_only = make_temp_dir("sec-reportswap-victim");
  const std::string victim_dir = root_only + "/out";
  ASSERT_EQ(::mkdir(victim_dir.c_str(), 0755), 0);
  put(victim_dir + "/links.csv", "root's precious bytes\n", 0600);
  const std::string job = traced_job();
  const std::string att = nobody_dir("sec-reportswap");
  const std::string parent = att + "/job", link = att + "/link";
  ASSERT_EQ(::mkdir(parent.c_str(), 0755), 0);
  ASSERT_EQ(::chown(parent.c_str(), kNobody, kNobody), 0);
  ASSERT_EQ(::mkdir((parent + "/out").c_str(), 0755), 0);  // root's, as a report makes it
  ASSERT_EQ(::symlink(root_only.c_str(), link.c_str()), 0);
  ASSERT_EQ(::lchown(link.c_str(), kNobody, kNobody), 0);
  const int swapper = spawn(as_nobody({HOSTILE_USDT, "swap", parent, link, "120"}), {},
                            att + "/swapper.log", false);
  int written = 0;
  for (int i = 0; i < 8; ++i) {
    const RunResult r =
        run({FABTRACE_CLI, "report", job, "-o", parent + "/out", "--no-trace"}, {}, false);
    written += r.exit_code == 0;
  }
  kill_all({swapper});
  EXPECT_EQ(slurp(victim_dir + "/links.csv"), "root's precious bytes\n");
  struct stat st;
  ASSERT_EQ(::lstat((victim_dir + "/links.csv").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(names_in(victim_dir), std::set<std::string>{"links.csv"});
  EXPECT_EQ(names_in(root_only), std::set<std::string>{"out"});
  EXPECT_GT(written, 0) << "no report was written at all";
}

// Row 3 (d): `export ops F -o OUT` with a link planted at OUT: the link and
// root's file are left alone; the CSV goes to the next free name, said in
// one line. In a directory of another user's, nothing is written.
TEST(Security, ExportNeverWritesThroughAPlantedLink) {
  REQUIRE_ROOT();
  const Victim v;
  const std::string job = traced_job();
  const auto oplogs = list_files(job, "fabtrace_ops.", ".oplog");
  ASSERT_FALSE(oplogs.empty());
  // A shared directory (root's, sticky and world-writable, as /tmp).
  const std::string shared = make_temp_dir("sec-export");
  ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);
  const std::string out = shared + "/ops.csv";
  ASSERT_EQ(::symlink(v.file.c_str(), out.c_str()), 0);
  ASSERT_EQ(::lchown(out.c_str(), kNobody, kNobody), 0);
  RunResult r = run({FABTRACE_CLI, "export", "ops", oplogs[0], "-o", out}, {}, false);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("already exists (left as it is): written to " + shared + "/ops.1.csv"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(slurp(shared + "/ops.1.csv").rfind("# fabtrace ops ", 0), 0u);
  // The attacker's own directory: refused.
  const std::string att = nobody_dir("sec-export-att");
  ASSERT_EQ(::symlink(v.file.c_str(), (att + "/ops.csv").c_str()), 0);
  r = run({FABTRACE_CLI, "export", "ops", oplogs[0], "-o", att + "/ops.csv"}, {}, false);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("uid 65534"), std::string::npos) << r.output;
  v.expect_untouched();
}

// Row 4 (denial by one name): a link planted at the kernel log's name (the
// collector's pid is predictable) refused every session in that directory.
// Now the log takes the next free name, in one line.
TEST(Security, APlantedKernelLogNameCostsOnlyThatName) {
  REQUIRE_SESSION_SLOT();
  const Victim v;
  const std::string dir = make_temp_dir("sec-plant");
  ASSERT_EQ(::chmod(dir.c_str(), 01777), 0);  // a shared job directory
  // The shell plants at its own pid's name and becomes the collector (exec).
  const std::string name = dir + "/fabtrace_kernel." + host_token() + ".p$$.klog";
  const RunResult r = run({"sh", "-c",
                           "ln -s " + v.file + " " + name + " && chown -h 65534 " + name +
                               " && exec " + FABTRACE_CLI + " record -o " + dir + " --duration 1"},
                          {{"FABTRACE_PRELOAD", preload_list()}}, false);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("already exists (left as it is): written to"), std::string::npos)
      << r.output;
  const auto logs = list_files(dir, "fabtrace_kernel.", ".1.klog");
  ASSERT_EQ(logs.size(), 1u) << r.output;
  bool ok = false;
  export_kernel(logs[0], &ok);
  EXPECT_TRUE(ok) << logs[0];
  v.expect_untouched();
}

// A small tmpfs of the test's own, filled but for `free_kib`.
struct FullDir {
  std::string dir;
  bool mounted = false;
  explicit FullDir(const std::string& tag, int free_kib) {
    dir = make_temp_dir(tag);
    mounted = ::mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=1m,mode=0777") == 0;
    if (!mounted) return;
    const RunResult r =
        run({"sh", "-c",
             "head -c " + std::to_string(1024 - free_kib) + "k /dev/zero > " + dir + "/filler"},
            {}, false);
    (void)r;
  }
  ~FullDir() {
    if (mounted) ::umount2(dir.c_str(), MNT_DETACH);
  }
};

// Row 5 (silent loss): the session's directory fills up mid-run. It said
// "N events written (0 lost)" with exit code 0 and a log of a few events.
// Now the write error is said, the session exits 1 saying how many events
// were not written, and "events written" is what the log holds.
TEST(Security, AFullFilesystemIsSaidAndTheSessionFails) {
  REQUIRE_SESSION_SLOT();
  REQUIRE_HOSTILE();
  const FullDir full("sec-full", 96);
  if (!full.mounted) GTEST_SKIP() << "cannot mount a tmpfs here";
  // (Without the preload: the hostile program maps its own libfabtrace.so.)
  const RunResult r = run({FABTRACE_CLI, "record", "-o", full.dir, "--usdt-rate", "1000000",
                           "--no-preload", "--", HOSTILE_USDT, "flood", "2"},
                          {{"FABTRACE_PRELOAD", preload_list()}}, false, 120);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const long long lost = number_after(r.output, "the session lost data: ");
  EXPECT_GT(lost, 0) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex("([0-9]+) events written"))) << r.output;
  const std::string log = kernel_log_of(full.dir);
  ASSERT_FALSE(log.empty()) << r.output;
  const RunResult ex = run({FABTRACE_CLI, "export", "kernel", log}, {}, false);
  std::smatch e;
  ASSERT_TRUE(std::regex_search(ex.output, e, std::regex("# ([0-9]+) events;"))) << ex.output;
  EXPECT_EQ(e[1], m[1]) << "the events said written are not the log's\n" << r.output;
}

// Row 5, the preload's side: its report files on a full filesystem were
// announced ("-> ...txt") while empty. Now a failed write is one line and
// the text goes to stderr.
TEST(Security, ThePreloadSaysWhenItsReportCouldNotBeWritten) {
  REQUIRE_ROOT();  // to mount
  const FullDir full("sec-full-preload", 0);
  if (!full.mounted) GTEST_SKIP() << "cannot mount a tmpfs here";
  const RunResult r = run({FT_APP, "--prov", "tcp;ofi_rxm", "--test", "tagged", "--count", "20",
                           "--size", "4096", "--timeout", "100"},
                          {{"FABTRACE_DIR", full.dir}, {"FABTRACE_NIC", "0"}});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count_of(r.output, "failed (No space left on device): the report follows on stderr"),
            2u)
      << r.output;
  for (const std::string& txt : list_files(full.dir, "fabtrace.", ".txt"))
    EXPECT_EQ(r.output.find("-> " + txt), std::string::npos) << "announced an empty " << txt;
  EXPECT_EQ(count_of(r.output, "the JSON report is incomplete"), 2u) << r.output;
}

// The events of `pid` of `kind` in the session's log.
size_t events_of(const std::string& dir, int pid, const std::string& kind) {
  size_t n = 0;
  for (const Event& e : export_kernel(kernel_log_of(dir)))
    n += e.kind == kind && static_cast<int>(e.pid) == pid;
  return n;
}

// Row 6 (unbounded disk): two unprivileged processes firing the probes in a
// loop wrote 2.86 GB in 25 s. Now each process has a budget of records per
// second (1000 by default); the rest are counted for it and said.
TEST(Security, AProbeFloodIsCappedAndCountedPerProcess) {
  REQUIRE_SESSION_SLOT();
  REQUIRE_HOSTILE();
  const std::string out = make_temp_dir("sec-flood");
  const int rec = start_record(out, "record.log", {}, "attach points attached");
  ASSERT_GT(rec, 0) << slurp(out + "/record.log");
  constexpr int kSeconds = 3;
  const RunResult flood =
      run(as_nobody({HOSTILE_USDT, "flood", std::to_string(kSeconds)}), {}, false);
  kill(rec, SIGINT);
  const int rc = wait_for(rec, 60);
  const std::string log = slurp(out + "/record.log");
  ASSERT_EQ(flood.exit_code, 0) << flood.output;
  ASSERT_EQ(rc, 0) << log;
  const long long fired = number_after(flood.output, "fired ");
  // The flooder's pid: the one process with records over its budget.
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(log, m, std::regex("pid ([0-9]+): ([0-9]+) probe records over its budget")))
      << log;
  const int pid = std::stoi(m[1]);
  const long long over = std::stoll(m[2]);
  const size_t written = events_of(out, pid, "mark");
  EXPECT_GT(fired, 100000) << "not a flood";
  EXPECT_LE(written, 1000u * (kSeconds + 2)) << log;
  EXPECT_GT(written, 0u) << log;
  // Every mark fired is written or counted (the ring buffer may have lost some:
  // counted apart, as lost).
  EXPECT_LE(static_cast<long long>(written) + over, fired);
  EXPECT_GE(static_cast<long long>(written) + over, fired * 99 / 100) << log;
}

// Row 8, the thread table ("a quota of rows in every shared map"): the
// kernel's per-thread history behind every explanation is one shared table
// (16,384 threads). One process with thousands of threads could fill it, and
// every other process's stalls were then explained as "on CPU" all along.
// Now a process may hold an eighth of it (2,048): an unprivileged process
// with 3,000 threads is refused the rest, counted for it; a thread it had
// refused says the kernel did not know it instead of a false "on CPU"; and
// another process's threads keep their places and their explanations.
TEST(Security, OneProcessCannotTakeTheThreadTable) {
  REQUIRE_SESSION_SLOT();
  REQUIRE_HOSTILE();
  const std::string out = make_temp_dir("sec-threads");
  const int rec = start_record(out, "record.log", {}, "attach points attached");
  ASSERT_GT(rec, 0) << slurp(out + "/record.log");
  constexpr int kThreads = 3000, kShare = 16384 / 8;
  const int flooder =
      spawn(as_nobody({HOSTILE_USDT, "threads", std::to_string(kThreads), "4", "10"}), {},
            out + "/flooder.log", false);
  const int other =
      spawn(as_nobody({HOSTILE_USDT, "threads", "2", "4", "20"}), {}, out + "/other.log", false);
  const int frc = wait_for(flooder, 120), orc = wait_for(other, 120);
  kill(rec, SIGINT);
  const int rc = wait_for(rec, 60);
  const std::string log = slurp(out + "/record.log");
  ASSERT_EQ(frc, 0) << slurp(out + "/flooder.log");
  ASSERT_EQ(orc, 0) << slurp(out + "/other.log");
  ASSERT_EQ(rc, 0) << log;
  // The flooder's threads past its share (its main thread holds one place),
  // each refused at least once; the other process refused nothing.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      log, m,
      std::regex("pid " + std::to_string(flooder) +
                 ": .*, ([0-9]+) events of its threads not tracked \\(its share")))
      << log;
  std::printf("%d threads: %s events of threads refused over the share\n", kThreads,
              m[1].str().c_str());
  EXPECT_GE(std::stoll(m[1]), kThreads + 1 - kShare) << log;
  EXPECT_EQ(log.find("pid " + std::to_string(other) + ":"), std::string::npos) << log;
  std::map<uint64_t, std::string> cause;  // by cq
  for (const Event& e : export_kernel(kernel_log_of(out)))
    if (e.kind == "stall" &&
        (e.pid == static_cast<uint32_t>(flooder) || e.pid == static_cast<uint32_t>(other)))
      cause[e.num("cq")] = e.cause;
  ASSERT_EQ(cause.size(), 4u) << log;
  const std::string unknown = "(the kernel did not know this thread)";
  // Tracked threads: their 50 ms asleep seen.
  for (const uint64_t cq : {10u, 20u, 21u}) {
    EXPECT_EQ(cause[cq].rfind("sleeping (nanosleep) for ", 0), 0u) << cq << ": " << cause[cq];
    EXPECT_EQ(cause[cq].find(unknown), std::string::npos) << cq << ": " << cause[cq];
  }
  // The flooder's last thread, refused: not explained as running.
  EXPECT_NE(cause[11].find(unknown), std::string::npos) << cause[11];
}

// Row 9 (probe arguments): windows reversed, ending an hour from now or
// starting before any session, and an op error with INT32_MIN as its code
// were explained ("a stall of 18446744073.710 s"). Now they are counted as
// malformed for the process and never recorded; well-formed ones are. So are
// runs of polls (--polls) that end in the future, are busier than their span or
// hold no poll, and batches that cannot be read or hold too many runs.
TEST(Security, MalformedProbeArgumentsAreCountedNeverExplained) {
  REQUIRE_SESSION_SLOT();
  REQUIRE_HOSTILE();
  const std::string out = make_temp_dir("sec-malformed");
  const int rec = start_record(out, "record.log", {"--polls"}, "attach points attached");
  ASSERT_GT(rec, 0) << slurp(out + "/record.log");
  constexpr int kEach = 50;
  const int attacker = spawn(as_nobody({HOSTILE_USDT, "malformed", std::to_string(kEach)}), {},
                             out + "/attacker.log", false);
  const int arc = wait_for(attacker, 90);
  kill(rec, SIGINT);
  const int rc = wait_for(rec, 60);
  const std::string log = slurp(out + "/record.log");
  ASSERT_EQ(arc, 0) << slurp(out + "/attacker.log");
  ASSERT_EQ(rc, 0) << log;
  EXPECT_NE(
      log.find("pid " + std::to_string(attacker) + ": 0 probe records over its budget (dropped), " +
               std::to_string(9 * kEach) + " probes with malformed arguments"),
      std::string::npos)
      << log;
  size_t good_stalls = 0, good_errors = 0, good_polls = 0;
  for (const Event& e : export_kernel(kernel_log_of(out))) {
    if (static_cast<int>(e.pid) != attacker) continue;
    if (e.kind == "stall") {
      EXPECT_EQ(e.num("cq"), 4u) << e.cause;
      good_stalls += e.num("cq") == 4;
    }
    if (e.kind == "op_error") {
      EXPECT_EQ(e.detail.at("err"), "5") << e.cause;
      good_errors += e.detail.at("err") == "5";
    }
    if (e.kind == "poll") {
      // The run as the process gave it: 3 polls over 3 us, 2 us inside them.
      EXPECT_EQ(e.num("cq"), 6u) << e.cause;
      EXPECT_EQ(e.dur, 3000u) << e.cause;
      EXPECT_EQ(e.num("polls"), 3u) << e.cause;
      EXPECT_EQ(e.num("busy_ns"), 2000u) << e.cause;
      good_polls += e.num("cq") == 6 && e.dur == 3000 && e.num("polls") == 3;
    }
    EXPECT_EQ(e.cause.find("malformed"), std::string::npos);
  }
  EXPECT_EQ(good_stalls, static_cast<size_t>(kEach));
  EXPECT_EQ(good_errors, static_cast<size_t>(kEach));
  EXPECT_EQ(good_polls, static_cast<size_t>(kEach));
}

// Row 10 (two sessions): a second session, node-wide or --only-pids, was not
// refused (both logged the same stalls). Now it is, in one line naming the
// running session's pid; and a session killed with SIGKILL frees the node.
TEST(Security, ASecondSessionIsRefusedAndAKilledOneFreesTheNode) {
  REQUIRE_SESSION_SLOT();
  const std::string out = make_temp_dir("sec-two");
  const int first = start_record(out, "first.log", {}, "attach points attached");
  ASSERT_GT(first, 0) << slurp(out + "/first.log");
  EXPECT_EQ(record_session_pid(), first);
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{}, std::vector<std::string>{"--only-pids", "--pid", "1"}}) {
    std::vector<std::string> argv = {FABTRACE_CLI,    "record",     "-o",
                                     out + "/second", "--duration", "1"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    const RunResult second = run(argv, {}, false);
    EXPECT_EQ(second.exit_code, 2) << second.output;
    EXPECT_NE(second.output.find("another fabtrace record session runs on this node (pid " +
                                 std::to_string(first) + ")"),
              std::string::npos)
        << second.output;
    EXPECT_EQ(count_of(second.output, "\n"), 1u) << second.output;
    EXPECT_FALSE(fs::exists(out + "/second")) << "created before the refusal";
  }
  kill(first, SIGKILL);
  wait_for(first, 30);
  EXPECT_EQ(record_session_pid(), 0);
  const RunResult again =
      run({FABTRACE_CLI, "record", "-o", out + "/again", "--duration", "1"}, {}, false);
  EXPECT_EQ(again.exit_code, 0) << again.output;
}

// A fi_pingpong pair over tcp;ofi_rxm without the preload (ITERS messages of
// 64 bytes), their output in DIR; the server's and the client's pids (-1
// when the server never listened).
std::pair<int, int> pingpong_pair(const std::string& dir, int iters, const Env& env = {}) {
  const std::string port = std::to_string(free_port());
  const std::vector<std::string> pp = {
      "fi_pingpong", "-p", "tcp;ofi_rxm", "-e", "rdm", "-I", std::to_string(iters), "-S", "64"};
  std::vector<std::string> sargs = pp, cargs = pp;
  sargs.insert(sargs.end(), {"-B", port});
  cargs.insert(cargs.end(), {"-P", port, "127.0.0.1"});
  const int server = spawn(sargs, env, dir + "/server.log", false);
  if (!wait_listening(std::stoi(port))) return {server, -1};
  return {server, spawn(cargs, env, dir + "/client.log", false)};
}

// A --uprobes session in which an unprivileged row_flood (tcp;ofi_rxm, then
// `args`; its output holding `says`) runs to its end, then a fi_pingpong pair
// (200 messages); the session stopped. Its directory and output, the pair's pids.
struct Flooded {
  std::string dir, log, flood;  // the flood's own output
  int server = -1, client = -1;
};
void flood_then_pingpong(const std::string& tag, const std::vector<std::string>& args,
                         const std::string& says, Flooded* f) {
  f->dir = make_temp_dir(tag);
  ASSERT_EQ(::chmod(f->dir.c_str(), 0755), 0);
  const int rec = start_record(f->dir, "record.log", {"--uprobes"}, "provider functions probed");
  ASSERT_GT(rec, 0) << slurp(f->dir + "/record.log");
  std::vector<std::string> argv = {ROW_FLOOD, "tcp;ofi_rxm"};
  argv.insert(argv.end(), args.begin(), args.end());
  // rxm's receive queue as deep as 16,384 (2,048 by default): more receives
  // in flight than a process's share of them.
  const RunResult flood = run(as_nobody(argv), {{"FI_OFI_RXM_RX_SIZE", "16384"}}, false, 300);
  ASSERT_EQ(flood.exit_code, 0) << flood.output;
  ASSERT_NE(flood.output.find(says), std::string::npos) << flood.output;
  f->flood = flood.output;
  // The victims: a pingpong pair, without the preload.
  std::tie(f->server, f->client) = pingpong_pair(f->dir, 200);
  ASSERT_GT(f->client, 0) << slurp(f->dir + "/server.log");
  EXPECT_EQ(wait_for(f->client, 120), 0) << slurp(f->dir + "/client.log");
  EXPECT_EQ(wait_for(f->server, 120), 0) << slurp(f->dir + "/server.log");
  kill(rec, SIGINT);
  const int rc = wait_for(rec, 120);
  f->log = slurp(f->dir + "/record.log");
  ASSERT_EQ(rc, 0) << f->log;
}

// Row 8 (one process starves the others): an unprivileged process posting
// receives "from" 70,000 addresses filled every row of the uprobe statistics
// (65,536); a real fi_pingpong pair then got no rows and no per-rank report.
// Now each process may hold a share of the rows (a sixteenth): the flooder is
// capped and its refused rows counted; the pair has its rows and reports.
TEST(Security, OneProcessCannotTakeEveryUprobeRow) {
  REQUIRE_SESSION_SLOT();
  Flooded f;
  ASSERT_NO_FATAL_FAILURE(flood_then_pingpong("sec-rows", {"70000"}, "", &f));
  const std::string& dir = f.dir;
  const std::string& log = f.log;
  const int server = f.server, client = f.client;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      log, m,
      std::regex("pid ([0-9]+): [0-9]+ probe records over its budget \\(dropped\\), "
                 "[0-9]+ probes with malformed arguments \\(not explained\\), ([0-9]+) "
                 "uprobe rows refused over its quota")))
      << log;
  EXPECT_GT(std::stoll(m[2]), 0) << log;
  const int flooder = std::stoi(m[1]);
  // The pair's own rows and reports; the flooder's rows within its share.
  size_t flood_rows = 0;
  std::set<int> with_rows;
  for (const Event& e : export_kernel(kernel_log_of(dir))) {
    if (e.kind != "uprobe_ops") continue;
    with_rows.insert(static_cast<int>(e.pid));
    // Its statistics rows (a receive still pending whose row could not be
    // made shows as a row of its own, without calls).
    flood_rows += static_cast<int>(e.pid) == flooder && e.num("calls") > 0;
  }
  EXPECT_TRUE(with_rows.count(server)) << log;
  EXPECT_TRUE(with_rows.count(client)) << log;
  EXPECT_GT(flood_rows, 0u);
  EXPECT_LE(flood_rows, 65536u / 16 + 16) << log;
  // Its receives stay in flight (never completed, cancelled at its exit): the
  // first 8,192 (an eighth of one in-flight map) took their places; every
  // call after, taken by the provider or refused by it, was over its share:
  // at least the receives it says the provider took past those, at most
  // every call past them.
  const long long posted = number_after(f.flood, "posted ");
  const long long refused = number_after(f.flood, "refused ");
  constexpr long long kInflightShare = 65536 / 8;
  ASSERT_GT(posted, kInflightShare) << f.flood;
  ASSERT_TRUE(std::regex_search(
      log, m,
      std::regex("pid " + std::to_string(flooder) +
                 ": .*, ([0-9]+) uprobe ops not timed over its share of ops in flight")))
      << log;
  const long long over = std::stoll(m[1]);
  std::printf("in flight: %lld receives taken, %lld refused by the provider; %lld over the share\n",
              posted, refused, over);
  EXPECT_GE(over, posted - kInflightShare) << f.flood << "\n" << log;
  EXPECT_LE(over, posted + refused - kInflightShare) << f.flood << "\n" << log;
  for (const int p : {server, client})
    EXPECT_EQ(list_files(dir, "fabtrace.", ".p" + std::to_string(p) + ".json").size(), 1u)
        << "no report for pid " << p << "\n"
        << log;
}

// Row 8, the set-up maps (issue 28: "a quota of rows in every shared map"):
// the CQs a process opens are entries of one shared map (4096), made from its
// own pointers and never freed while the session runs. An unprivileged
// process opening 6,000 CQs filled it: a fi_pingpong pair started after had
// its CQs unknown, so none of its completions was paired with its op. Now a
// process may hold a sixteenth of the CQ and endpoint maps' entries (and of
// the address maps'); what it cannot keep is counted for it and said.
TEST(Security, OneProcessCannotTakeEveryCqEntry) {
  REQUIRE_SESSION_SLOT();
  Flooded f;
  ASSERT_NO_FATAL_FAILURE(
      flood_then_pingpong("sec-cqs", {"6000", "cqs"}, "cqs 6000 refused 0", &f));
  const std::string& dir = f.dir;
  const std::string& log = f.log;
  const int server = f.server, client = f.client;
  // The pair's completions paired with their ops: their CQs were known.
  std::map<int, uint64_t> completions;
  for (const Event& e : export_kernel(kernel_log_of(dir)))
    if (e.kind == "uprobe_ops") completions[static_cast<int>(e.pid)] += e.num("completions");
  EXPECT_GT(completions[server], 0u) << log;
  EXPECT_GT(completions[client], 0u) << log;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      log, m,
      std::regex("pid ([0-9]+): [0-9]+ probe records over its budget \\(dropped\\), [0-9]+ "
                 "probes with malformed arguments \\(not explained\\), [0-9]+ uprobe rows "
                 "refused over its quota, ([0-9]+) of its CQs, endpoints and addresses not kept "
                 "over its share")))
      << log;
  // At least the CQs past its share (4096 / 16): the flood counted.
  EXPECT_GE(std::stoll(m[2]), 6000 - 4096 / 16) << log;
}

// Row 8, the address maps: the addresses a process inserts into its AVs are
// entries of one shared map (65,536), made from its own calls and never freed
// while the session runs. A process may hold a sixteenth of the address,
// endpoint-name and connection maps' entries together (4,096): an
// unprivileged process inserting 70,000 addresses is refused the rest,
// counted for it, and a fi_pingpong pair after it still has its peers named
// (the client's remote, which only its AV insert tells, is the server's
// local address).
TEST(Security, OneProcessCannotTakeEveryAddressEntry) {
  REQUIRE_SESSION_SLOT();
  Flooded f;
  ASSERT_NO_FATAL_FAILURE(
      flood_then_pingpong("sec-addrs", {"70000", "addrs"}, "addrs 70000 refused 0", &f));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      f.log, m,
      std::regex("pid ([0-9]+): .*, ([0-9]+) of its CQs, endpoints and addresses not kept "
                 "over its share")))
      << f.log;
  std::printf("70000 addresses inserted: %s not kept over the share\n", m[2].str().c_str());
  EXPECT_GE(std::stoll(m[2]), 70000 - 65536 / 16) << f.log;
  // Each process's one link (local, remote) in its report.
  auto link_of = [&f](int pid) {
    const std::vector<std::string> files =
        list_files(f.dir, "fabtrace.", ".p" + std::to_string(pid) + ".json");
    if (files.size() != 1) return std::pair<std::string, std::string>();
    const auto j = load_json(files[0]);
    if (j.at("links").size() != 1) return std::pair<std::string, std::string>();
    const auto& l = j.at("links")[0];
    return std::make_pair(l.at("local").get<std::string>(), l.at("remote").get<std::string>());
  };
  const auto server = link_of(f.server), client = link_of(f.client);
  std::printf("server %s -> %s, client %s -> %s\n", server.first.c_str(), server.second.c_str(),
              client.first.c_str(), client.second.c_str());
  // As the provider prints it (fi_av_straddr: "fi_sockaddr_in://a.b.c.d:port").
  const std::regex ip_port("(fi_sockaddr_in://)?[0-9]+\\.[0-9]+\\.[0-9]+\\.[0-9]+:[0-9]+");
  EXPECT_TRUE(std::regex_match(client.second, ip_port)) << client.second << "\n" << f.log;
  EXPECT_EQ(client.second, server.first) << f.log;
}

// Row 11: the op-table helper died with a killed collector only after its
// providers' timeouts (1.5 s). Now it dies with it (PR_SET_PDEATHSIG).
TEST(Security, TheOpTableHelperDiesWithTheCollector) {
  REQUIRE_SESSION_SLOT();
  const std::string dir = make_temp_dir("sec-helper");
  const int rec = spawn_record(dir, dir + "/record.log",
                               {"--uprobes", "--uprobe-providers",
                                "tcp;ofi_rxm,shm,sockets,udp;ofi_rxd", "--duration", "2"});
  int helper = -1;
  ASSERT_TRUE(eventually(
      [&] {
        const auto c = children_of(rec);
        if (!c.empty()) helper = c.front();
        return helper > 0;
      },
      30))
      << slurp(dir + "/record.log");
  kill(rec, SIGKILL);
  wait_for(rec, 30);
  EXPECT_TRUE(eventually([&] { return proc_state(helper) == 0 || proc_state(helper) == 'Z'; }, 1))
      << "the helper " << helper << " outlived its collector";
}

// Row 11: with --uprobes the rows were read only at the session's end, so a
// killed session lost them all; and a process's rank was read at the end
// too (rNA for one that had exited), raw ("../../../../tmp/pwn"). Now the rows
// reach the log every few seconds, and the rank is read when the process is
// first seen, as the preload writes it.
TEST(Security, AKilledUprobeSessionKeepsItsRowsAndRanksAreReadEarly) {
  REQUIRE_SESSION_SLOT();
  const std::string dir = make_temp_dir("sec-kill9");
  const int rec = start_record(dir, "record.log", {"--uprobes"}, "provider functions probed");
  ASSERT_GT(rec, 0) << slurp(dir + "/record.log");
  const Env env = {{"RANK", "../../../../tmp/pwn"}};
  const auto [server, client] = pingpong_pair(dir, 100, env);
  ASSERT_GT(client, 0) << slurp(dir + "/server.log");
  ASSERT_EQ(wait_for(client, 120), 0) << slurp(dir + "/client.log");
  ASSERT_EQ(wait_for(server, 120), 0) << slurp(dir + "/server.log");
  // Past a snapshot of the rows (every 5 s), then killed.
  std::this_thread::sleep_for(std::chrono::seconds(7));
  kill(rec, SIGKILL);
  wait_for(rec, 30);
  uint64_t calls = 0;
  for (const Event& e : export_kernel(kernel_log_of(dir)))
    if (e.kind == "uprobe_ops" && static_cast<int>(e.pid) == client) calls += e.num("calls");
  EXPECT_GE(calls, 100u) << "the client's rows were lost with the session";

  // The same with a clean stop: the exited processes' reports carry their
  // rank as the preload would write it.
  const std::string dir2 = make_temp_dir("sec-rank");
  const int rec2 = start_record(dir2, "record.log", {"--uprobes"}, "provider functions probed");
  ASSERT_GT(rec2, 0) << slurp(dir2 + "/record.log");
  const auto [s2, c2] = pingpong_pair(dir2, 100, env);
  ASSERT_GT(c2, 0) << slurp(dir2 + "/server.log");
  ASSERT_EQ(wait_for(c2, 120), 0);
  ASSERT_EQ(wait_for(s2, 120), 0);
  kill(rec2, SIGINT);
  ASSERT_EQ(wait_for(rec2, 120), 0) << slurp(dir2 + "/record.log");
  const std::string token = output_token("../../../../tmp/pwn");
  for (const int p : {s2, c2}) {
    const auto reps = list_files(dir2, "fabtrace.", ".p" + std::to_string(p) + ".json");
    ASSERT_EQ(reps.size(), 1u) << slurp(dir2 + "/record.log");
    EXPECT_NE(reps[0].find(".r" + token + ".p"), std::string::npos) << reps[0];
    EXPECT_EQ(load_json(reps[0]).at("rank"), token);
  }
}

}  // namespace
}  // namespace fabtrace::test
