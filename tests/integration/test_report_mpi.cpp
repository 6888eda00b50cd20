// `mpirun -np 2 fabtrace report --mpi DIR` against `fabtrace report DIR`: the
// same summary, the same stderr and the same output files, byte for byte, on
// a synthetic job with timelines, counters and a corrupt report; an unusable
// DIR ends every process (none waits for the others). Without MPI in the
// build, --mpi is refused with one line.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/integration/harness.h"
#include "tests/report_fixtures/synthetic_job.h"

namespace fabtrace::test {
namespace {

// The report of `job` into `out` (emptied first): stdout, stderr and every
// file written, as one string; the exit code in *rc. `mpi`: K processes
// under mpirun (loopback only: shared memory and self).
std::string report_outputs(const std::string& job, const std::string& out, int mpi_procs,
                           const std::string& err_file, int* rc) {
  std::filesystem::remove_all(out);
  std::vector<std::string> argv{"sh", "-c", "exec \"$@\" 2>\"$0\"", err_file};
  Env env;
  if (mpi_procs > 0) {
    // In the sanitizer build: what Open MPI's own libraries keep until exit
    // is not a leak of ours (the single-process run is checked in full).
    const std::string supp = err_file + ".lsan";
    std::ofstream(supp) << "leak:libmpi.so\nleak:libopen-pal.so\nleak:libopen-rte.so\n"
                           "leak:libpmix.so\nleak:libhwloc.so\nleak:libevent\n";
    env.emplace_back("LSAN_OPTIONS", "suppressions=" + supp);
    argv.insert(argv.end(), {MPIRUN, "--allow-run-as-root", "--oversubscribe", "--mca", "btl",
                             "self,vader", "-x", "LSAN_OPTIONS", "-np", std::to_string(mpi_procs)});
  }
  argv.insert(argv.end(), {FABTRACE_CLI, "report", job, "-o", out, "--threads", "1"});
  if (mpi_procs > 0) argv.emplace_back("--mpi");
  const RunResult r = run(argv, env, false, 240);
  *rc = r.exit_code;
  std::string all = "stdout\n" + r.output + "stderr\n" + slurp(err_file);
  std::vector<std::string> files;
  if (std::filesystem::exists(out))
    for (const auto& e : std::filesystem::recursive_directory_iterator(out))
      if (e.is_regular_file()) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) all += "== " + f + "\n" + slurp(f);
  return all;
}

TEST(ReportMpi, TwoProcessesWriteTheSingleProcessOutputs) {
  if (!FABTRACE_HAVE_MPI) GTEST_SKIP() << "fabtrace built without MPI";
  const std::string dir = make_temp_dir("report-mpi");
  SyntheticOptions o;
  o.nodes = 3;
  o.ranks_per_node = 3;  // 9 reports and a corrupt one: each process gets 5
  const SyntheticJob sj = make_synthetic_job(o);
  write_synthetic_job(sj, dir + "/job", /*per_node_dirs=*/true);
  std::ofstream(dir + "/job/fabtrace.cut.r99.p99.json")
      << report_json_text(sj.reports[0]).substr(0, 100);
  const std::string out = dir + "/out";
  int rc_single = -1, rc_mpi = -1;
  const std::string single = report_outputs(dir + "/job", out, 0, dir + "/stderr", &rc_single);
  const std::string mpi = report_outputs(dir + "/job", out, 2, dir + "/stderr", &rc_mpi);
  ASSERT_EQ(rc_single, 0) << single.substr(0, 4000);
  ASSERT_EQ(rc_mpi, 0) << mpi.substr(0, 4000);
  // The single-process run's known answers are in it (a report that says
  // nothing would also be equal): every rank, the corrupt file, the outputs.
  EXPECT_NE(single.find("fabtrace.cut.r99.p99.json: truncated"), std::string::npos);
  EXPECT_NE(single.find("== " + out + "/report.html"), std::string::npos);
  EXPECT_NE(single.find("== " + out + "/links.csv"), std::string::npos);
  EXPECT_NE(single.find(sj.slow_local), std::string::npos);
  for (const ProcessReport& r : sj.reports)
    EXPECT_NE(single.find(r.host + "," + r.rank + "," + std::to_string(r.pid)), std::string::npos)
        << "rank " << r.rank << " missing from the single-process outputs";
  if (mpi != single) {
    // Name the first difference rather than printing megabytes.
    const size_t at = static_cast<size_t>(
        std::mismatch(single.begin(), single.begin() + std::min(single.size(), mpi.size()),
                      mpi.begin())
            .first -
        single.begin());
    const size_t from = at > 300 ? at - 300 : 0;
    ADD_FAILURE() << "--mpi wrote other outputs; first difference at byte " << at
                  << "\nsingle: " << single.substr(from, 600)
                  << "\n--mpi:  " << mpi.substr(from, 600);
  }
}

// A DIR that cannot be read: process 0 stops before parsing, tells the others,
// and the job ends with the single-process report's error and exit code.
TEST(ReportMpi, UnreadableDirEndsEveryProcess) {
  if (!FABTRACE_HAVE_MPI) GTEST_SKIP() << "fabtrace built without MPI";
  const std::string dir = make_temp_dir("report-mpi-none");
  int rc = -1;
  const std::string all = report_outputs(dir + "/nope", dir + "/out", 2, dir + "/stderr", &rc);
  EXPECT_EQ(rc, 1) << all;
  EXPECT_NE(all.find("fabtrace report: " + dir + "/nope: "), std::string::npos) << all;
}

TEST(ReportMpi, WithoutMpiTheOptionIsRefused) {
  if (FABTRACE_HAVE_MPI) GTEST_SKIP() << "fabtrace built with MPI";
  const std::string dir = make_temp_dir("report-mpi-refused");
  const RunResult r = run({FABTRACE_CLI, "report", dir, "--mpi"}, {}, false, 60);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(r.output,
            "fabtrace report: --mpi: this fabtrace was built without MPI (libopenmpi-dev)\n");
}

}  // namespace
}  // namespace fabtrace::test
