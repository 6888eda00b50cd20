// Issue 12 end to end: fabtrace in shared job directories. The preload and
// `fabtrace report` are run against links and directories planted by another
// user, and against outputs that cannot be written; each case names the
// defect it covers.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/harness.h"
#include "tests/integration/sample_stepper.h"
#include "tests/unit/fake_cxi_tree.h"

namespace fabtrace::test {
namespace {

constexpr uid_t kNobody = 65534;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void put(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

bool is_symlink(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

// The regular files (not links) of dir named prefix*suffix.
std::vector<std::string> regular_files(const std::string& dir, const std::string& prefix = "",
                                       const std::string& suffix = "") {
  std::vector<std::string> out;
  for (const std::string& p : list_files(dir, prefix, suffix)) {
    struct stat st;
    if (::lstat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) out.push_back(p);
  }
  return out;
}

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

std::vector<std::string> ft_app(int count, const std::string& extra = "") {
  std::vector<std::string> a = {
      FT_APP,   "--prov", "tcp;ofi_rxm", "--test", "tagged", "--count", std::to_string(count),
      "--size", "4096",   "--timeout",   "100"};
  if (!extra.empty()) a.insert(a.end(), {"--hold-until", extra});
  return a;
}

// A job directory with both ranks' outputs of a short traced run.
std::string traced_job() {
  const std::string dir = make_temp_dir("hardening-job");
  const RunResult r = run(ft_app(20), {{"FABTRACE_DIR", dir}, {"FABTRACE_OPS_RANKS", "all"}});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(list_files(dir, "fabtrace.", ".json").size(), 2u) << r.output;
  return dir;
}

// 1. Another user pre-creates rank 0's four output names as symlinks to files
// of the victim's. Run as root in a 1777 directory owned by that user (nobody),
// with links owned by it too: fs.protected_symlinks, even when set, only stops
// a link in a sticky world-writable directory whose owner is neither the
// follower nor the directory's owner, so these links are followed by anything
// that opens the names without O_NOFOLLOW|O_EXCL; only fabtrace's own
// protection keeps the victim's files intact.
TEST(Hardening, PreloadNeverWritesThroughPlantedLinks) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (a directory of another user's)";
  SKIP_IF_RECORD_SESSION(kNeedsOwnSampler);
  const std::string dir = make_temp_dir("hardening-planted");
  ASSERT_EQ(::chown(dir.c_str(), kNobody, kNobody), 0);
  ASSERT_EQ(::chmod(dir.c_str(), 01777), 0);
  const std::string victims = make_temp_dir("hardening-victims");
  const std::vector<std::string> kinds = {"txt", "json", "oplog", "csv"};
  for (const std::string& k : kinds) {
    put(victims + "/" + k, "precious " + k + "\n");
    ASSERT_EQ(::chmod((victims + "/" + k).c_str(), 0600), 0);
  }
  FakeCxiTree tree;
  tree.populate_standard();
  SampleStepper stepper(tree, tree.telemetry_path("cxi0", "hni_sts_tx_ok_octets"), 4,
                        dir + "/release");
  ASSERT_TRUE(stepper.watching()) << stepper.error();
  // The shell plants the links for its own pid, then becomes rank 0 (exec).
  const std::string plant =
      "h=$(hostname); d=\"$1\"; v=\"$2\"; shift 2; "
      "for x in \"fabtrace.$h.r0.p$$.txt txt\" \"fabtrace.$h.r0.p$$.json json\" "
      "\"fabtrace_ops.$h.r0.p$$.oplog oplog\" \"fabtrace_nic.$h.r0.p$$.csv csv\"; do "
      "n=${x% *}; ln -s \"$v/${x#* }\" \"$d/$n\" && chown -h 65534:65534 \"$d/$n\"; "
      "done; exec \"$@\"";
  std::vector<std::string> argv = {"sh", "-c", plant, "sh", dir, victims};
  for (const std::string& a : ft_app(20, stepper.release_path())) argv.push_back(a);
  const RunResult r = run(
      argv, sampled_env(tree, {{"FABTRACE_DIR", dir}, {"FABTRACE_OPS_RANKS", "all"}}), true, 240);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const std::string& k : kinds)
    EXPECT_EQ(slurp(victims + "/" + k), "precious " + k + "\n") << k << " overwritten\n"
                                                                << r.output;
  // One line per refused name, and rank 1 (no links planted) wrote all of its files.
  EXPECT_EQ(count(r.output, "something is already there"), 4u) << r.output;
  EXPECT_NE(r.output.find("the report goes to stderr"), std::string::npos) << r.output;
  EXPECT_EQ(regular_files(dir, "fabtrace.", ".json").size(), 1u);
  EXPECT_EQ(regular_files(dir, "fabtrace_nic.", ".csv").size(), 1u);
  ::unlink(stepper.release_path().c_str());
}

struct Cli {
  int rc = -1;
  std::string out, err;
};

// `fabtrace report ARGS...` with stdout and stderr apart; `redirect` replaces stdout.
Cli report(const std::vector<std::string>& args, const std::string& redirect = "") {
  const std::string err_file = make_temp_dir("hardening-err") + "/stderr";
  std::string cmd = "exec \"$0\" report";
  std::vector<std::string> argv = {"sh", "-c", "", FABTRACE_CLI};
  for (size_t i = 0; i < args.size(); ++i) {
    cmd += " \"$" + std::to_string(i + 1) + "\"";
    argv.push_back(args[i]);
  }
  cmd += " 2>\"$" + std::to_string(args.size() + 1) + "\"";
  if (!redirect.empty()) cmd += " >" + redirect;
  argv.push_back(err_file);
  argv[2] = cmd;
  const RunResult r = run(argv, {}, false, 120);
  return Cli{r.exit_code, r.output, slurp(err_file)};
}

// 2. A planted DIR/fabtrace-report symlink sent every output elsewhere, and a
// planted report.html symlink inside it was written through.
TEST(Hardening, ReportRefusesPlantedOutputDirectoryAndLinks) {
  const std::string job = traced_job();
  const std::string out = job + "/fabtrace-report";
  const std::string elsewhere = make_temp_dir("hardening-elsewhere");
  ASSERT_EQ(::symlink(elsewhere.c_str(), out.c_str()), 0);
  Cli c = report({job, "--no-trace"});
  EXPECT_EQ(c.rc, 1) << c.err;
  EXPECT_NE(c.err.find("symbolic link"), std::string::npos) << c.err;
  EXPECT_TRUE(regular_files(elsewhere).empty()) << "outputs went through the link";

  ASSERT_EQ(::unlink(out.c_str()), 0);
  ASSERT_EQ(::mkdir(out.c_str(), 0755), 0);
  const std::string victim = make_temp_dir("hardening-victim2") + "/precious";
  put(victim, "precious\n");
  for (const char* name : {"report.html", "links.csv", "nics.json"})
    ASSERT_EQ(::symlink(victim.c_str(), (out + "/" + name).c_str()), 0);
  c = report({job, "--no-trace"});
  EXPECT_EQ(c.rc, 0) << c.err;
  EXPECT_EQ(slurp(victim), "precious\n");
  for (const char* name : {"report.html", "links.csv", "nics.json"}) {
    EXPECT_FALSE(is_symlink(out + "/" + name)) << name;
    EXPECT_FALSE(slurp(out + "/" + name).empty()) << name;
  }

  if (::geteuid() == 0) {  // an output directory of another user's
    ASSERT_EQ(::chown(out.c_str(), kNobody, kNobody), 0);
    c = report({job, "--no-trace"});
    EXPECT_EQ(c.rc, 1) << c.err;
    EXPECT_NE(c.err.find("not by this user"), std::string::npos) << c.err;
  }
}

// 8. A subdirectory of DIR that cannot be listed was skipped in silence.
TEST(Hardening, ReportNamesAnUnreadableSubdirectory) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (to run the report as another user)";
  const std::string job = traced_job();
  ASSERT_EQ(::chmod(job.c_str(), 0755), 0);
  const std::string sub = job + "/node2";
  ASSERT_EQ(::mkdir(sub.c_str(), 0), 0);
  const std::string out_parent = make_temp_dir("hardening-out8");
  ASSERT_EQ(::chown(out_parent.c_str(), kNobody, kNobody), 0);
  const std::string err_file = out_parent + "/stderr";
  // As nobody: root would read the directory whatever its mode.
  const RunResult r =
      run({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c",
           "exec \"$0\" report \"$1\" -o \"$2\" --no-trace 2>\"$3\" >/dev/null", FABTRACE_CLI, job,
           out_parent + "/out", err_file},
          {}, false, 120);
  const std::string err = slurp(err_file);
  EXPECT_EQ(r.exit_code, 0) << r.output << err;
  EXPECT_NE(err.find("skipped " + sub + ": cannot read the directory"), std::string::npos) << err;
}

// 9. `fabtrace report DIR > /dev/full` exited 0.
TEST(Hardening, ReportFailsWhenTheSummaryCannotBeWritten) {
  const std::string job = traced_job();
  const Cli c = report({job, "--no-trace", "--no-html"}, "/dev/full");
  EXPECT_EQ(c.rc, 1) << c.err;
  EXPECT_NE(c.err.find("writing the summary"), std::string::npos) << c.err;
}

// 12. With FABTRACE_DIR=stderr the timeline went to the current directory,
// undocumented, where `fabtrace report` then skipped it.
TEST(Hardening, StderrModeWritesNoFiles) {
  const std::string cwd = make_temp_dir("hardening-stderr");
  std::vector<std::string> argv = {"sh", "-c", "cd \"$0\" && exec \"$@\"", cwd};
  for (const std::string& a : ft_app(10)) argv.push_back(a);
  const RunResult r = run(argv, {{"FABTRACE_DIR", "stderr"}, {"FABTRACE_OPS_RANKS", "all"}});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(regular_files(cwd).empty()) << r.output;
  EXPECT_EQ(count(r.output, "per-op timeline off: FABTRACE_DIR=stderr writes no files"), 2u)
      << r.output;
  EXPECT_EQ(count(r.output, "[fabtrace] host="), 2u) << r.output;  // both text reports
}

// 13. A bad FABTRACE_DIR gave several lines per rank.
TEST(Hardening, BadDirectoryIsOneLinePerRank) {
  const RunResult r = run(
      ft_app(10), {{"FABTRACE_DIR", "/nonexistent/fabtrace-test"}, {"FABTRACE_OPS_RANKS", "all"}});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count(r.output, "/nonexistent/fabtrace-test"), 2u) << r.output;
  EXPECT_EQ(count(r.output, "[fabtrace] host="), 2u) << r.output;  // reports on stderr instead
}

}  // namespace
}  // namespace fabtrace::test
