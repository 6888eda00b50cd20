// `mpirun -np 2 fabtrace report --mpi DIR` against `fabtrace report DIR`: the
// same summary, the same stderr and the same output files, byte for byte, on
// synthetic jobs with timelines, counters and a corrupt report (and with the
// links table compressed); with per-op timelines across ranks read by several
// processes (receives matched to sends in other processes' timelines, the
// slowest ops merged, a timeline cut short) and per-rank Perfetto files
// written by several processes (which decode, each standing alone); an
// unusable DIR ends every process (none waits for the others). Without MPI in
// the build, --mpi is refused with one line.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fixtures/perfetto_decode.h"
#include "fixtures/synthetic_job.h"
#include "tests/integration/harness.h"

namespace fabtrace::test {
namespace {

// The tests below run fabtrace report --mpi: a build without MPI fails them, naming the package.
#define REQUIRE_MPI_BUILD()      \
  ASSERT_TRUE(FABTRACE_HAVE_MPI) \
      << "fabtrace was built without MPI: scripts/install-deps installs libopenmpi-dev"

// The report of `job` into `out` (emptied first): stdout, stderr and every
// file written, as one string; the exit code in *rc. `mpi`: K processes
// under mpirun (loopback only: shared memory and self).
std::string report_outputs(const std::string& job, const std::string& out, int mpi_procs,
                           const std::string& err_file, int* rc,
                           const std::vector<std::string>& extra = {}) {
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
  argv.insert(argv.end(), extra.begin(), extra.end());
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

// DIR/job reported into DIR/out by one process and by two (`extra` options
// to both), each exiting 0.
struct BothRuns {
  std::string single, mpi;
};
BothRuns single_and_two(const std::string& dir, const std::vector<std::string>& extra = {}) {
  BothRuns b;
  int rc_single = -1, rc_mpi = -1;
  b.single = report_outputs(dir + "/job", dir + "/out", 0, dir + "/stderr", &rc_single, extra);
  b.mpi = report_outputs(dir + "/job", dir + "/out", 2, dir + "/stderr", &rc_mpi, extra);
  EXPECT_EQ(rc_single, 0) << b.single.substr(0, 4000);
  EXPECT_EQ(rc_mpi, 0) << b.mpi.substr(0, 4000);
  return b;
}

// Names the first difference between two runs' outputs rather than printing megabytes.
void expect_same(const std::string& single, const std::string& mpi, const std::string& what) {
  if (mpi == single) return;
  const size_t at = static_cast<size_t>(
      std::mismatch(single.begin(), single.begin() + std::min(single.size(), mpi.size()),
                    mpi.begin())
          .first -
      single.begin());
  const size_t from = at > 300 ? at - 300 : 0;
  ADD_FAILURE() << what << " wrote other outputs; first difference at byte " << at
                << "\nsingle: " << single.substr(from, 600)
                << "\n--mpi:  " << mpi.substr(from, 600);
}

// A job whose ranks' timelines hold sends of differing lengths and receives
// from "(any)", one timeline cut short.
SyntheticJob timeline_job(const std::string& dir, int nodes, int ranks_per_node) {
  SyntheticOptions o;
  o.nodes = nodes;
  o.ranks_per_node = ranks_per_node;
  o.varied_durations = true;
  o.oplog_recvs = true;
  const SyntheticJob sj = make_synthetic_job(o);
  write_synthetic_job(sj, dir);
  return sj;
}

std::string oplog_of(const std::string& dir, const ProcessReport& r) {
  return dir + "/fabtrace_ops." + r.host + ".r" + r.rank + ".p" + std::to_string(r.pid) + ".oplog";
}

TEST(ReportMpi, TwoProcessesWriteTheSingleProcessOutputs) {
  REQUIRE_MPI_BUILD();
  const std::string dir = make_temp_dir("report-mpi");
  SyntheticOptions o;
  o.nodes = 3;
  o.ranks_per_node = 3;  // 9 reports and a corrupt one: each process gets 5
  const SyntheticJob sj = make_synthetic_job(o);
  write_synthetic_job(sj, dir + "/job", /*per_node_dirs=*/true);
  std::ofstream(dir + "/job/fabtrace.cut.r99.p99.json")
      << report_json_text(sj.reports[0]).substr(0, 100);
  const std::string out = dir + "/out";
  const BothRuns plain = single_and_two(dir);
  if (HasFailure()) return;
  const std::string& single = plain.single;
  // The single-process run's known answers are in it (a report that says
  // nothing would also be equal): every rank, the corrupt file, the outputs.
  EXPECT_NE(single.find("fabtrace.cut.r99.p99.json: truncated"), std::string::npos);
  EXPECT_NE(single.find("== " + out + "/report.html"), std::string::npos);
  EXPECT_NE(single.find("== " + out + "/links.csv"), std::string::npos);
  EXPECT_NE(single.find(sj.slow_local), std::string::npos);
  for (const ProcessReport& r : sj.reports)
    EXPECT_NE(single.find(r.host + "," + r.rank + "," + std::to_string(r.pid)), std::string::npos)
        << "rank " << r.rank << " missing from the single-process outputs";
  expect_same(single, plain.mpi, "--mpi");
  // The links table as links.csv.zst: the same frame from process 0.
  const BothRuns zst = single_and_two(dir, {"--zstd-links-above", "0"});
  if (HasFailure()) return;
  EXPECT_NE(zst.single.find("== " + out + "/links.csv.zst"), std::string::npos);
  EXPECT_EQ(zst.single.find("== " + out + "/links.json"), std::string::npos);
  expect_same(zst.single, zst.mpi, "--mpi --zstd-links-above 0");
}

// Without per-op timelines the waits are the weaker evidence of poll gaps
// that overlap a linked rank's: found the same with 2 processes (which once
// took the job for one with timelines, in which no wait was matched, and
// named no root).
TEST(ReportMpi, WithoutTimelinesTheOverlappingGapsAreTheSame) {
  REQUIRE_MPI_BUILD();
  const std::string dir = make_temp_dir("report-mpi-weak");
  SyntheticOptions o;
  o.nodes = 2;
  o.ranks_per_node = 3;
  o.oplogs = false;
  o.chain_length = 3;  // each chain's ranks wait about 100 ms on its last
  write_synthetic_job(make_synthetic_job(o), dir + "/job");
  size_t removed = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/job"))
    if (e.path().extension() == ".oplog") removed += std::filesystem::remove(e.path());
  ASSERT_GT(removed, 0u) << "the chains' timelines were not written";
  const BothRuns b = single_and_two(dir);
  if (HasFailure()) return;
  EXPECT_NE(b.single.find("root causes of waiting (weaker evidence"), std::string::npos)
      << b.single.substr(0, 6000);
  expect_same(b.single, b.mpi, "--mpi without timelines");
}

// Per-op timelines across 9 ranks, one cut short, read by 2 and by 3
// processes, with per-rank trace files: the same bytes as one process.
TEST(ReportMpi, TimelinesAndPerRankTracesAcrossProcesses) {
  REQUIRE_MPI_BUILD();
  const std::string dir = make_temp_dir("report-mpi-timelines");
  const SyntheticJob sj = timeline_job(dir + "/job", 3, 3);
  {
    const std::string cut = oplog_of(dir + "/job", sj.reports[4]);
    const std::string bytes = slurp(cut);
    ASSERT_GT(bytes.size(), 3000u);
    std::ofstream(cut, std::ios::trunc | std::ios::binary) << bytes.substr(0, bytes.size() * 2 / 3);
  }
  const std::string out = dir + "/out";
  const std::vector<std::string> opts{"--trace-per-rank", "--top", "4"};
  int rc = -1;
  const std::string single = report_outputs(dir + "/job", out, 0, dir + "/stderr", &rc, opts);
  ASSERT_EQ(rc, 0) << single.substr(0, 4000);
  // Known answers: a file per rank; the cut timeline named; the longest
  // fi_tsend the generator made lasts 20 + 12 us; receives from (any) with
  // several senders get no verdict, and say why.
  for (const ProcessReport& r : sj.reports)
    EXPECT_NE(single.find("== " + out + "/trace.r" + r.rank + ".pftrace"), std::string::npos)
        << r.rank;
  EXPECT_EQ(single.find("== " + out + "/trace.pftrace"), std::string::npos);
  EXPECT_NE(single.find(oplog_of(dir + "/job", sj.reports[4]) + " is cut short"),
            std::string::npos);
  EXPECT_NE(single.find("fi_tsend 64 KiB  32.0 us"), std::string::npos);
  EXPECT_NE(single.find("several senders' timelines have sends to this address"),
            std::string::npos);
  for (const int procs : {2, 3}) {
    const std::string mpi = report_outputs(dir + "/job", out, procs, dir + "/stderr", &rc, opts);
    ASSERT_EQ(rc, 0) << mpi.substr(0, 4000);
    expect_same(single, mpi, "--mpi -np " + std::to_string(procs));
  }
}

// Two ranks on two nodes, each process reading one: every receive's send is in
// the other process's timeline. The generator posted the odd receives 5 us
// after their send: 5 of 10 late, median 5 us, on both ranks.
TEST(ReportMpi, ReceivesMatchSendsReadByAnotherProcess) {
  REQUIRE_MPI_BUILD();
  const std::string dir = make_temp_dir("report-mpi-posted");
  const SyntheticJob sj = timeline_job(dir + "/job", 2, 1);
  const std::string out = dir + "/out";
  int rc = -1;
  const std::string single = report_outputs(dir + "/job", out, 0, dir + "/stderr", &rc);
  ASSERT_EQ(rc, 0) << single.substr(0, 4000);
  for (const ProcessReport& r : sj.reports)
    EXPECT_NE(single.find(r.host + " r" + r.rank + "  0x10a0" + r.rank +
                          " <- (any)  fi_trecv 64 KiB  5 of 10 matched posted late, median "
                          "5.00 us after the send"),
              std::string::npos)
        << single.substr(0, 6000);
  const std::string mpi = report_outputs(dir + "/job", out, 2, dir + "/stderr", &rc);
  ASSERT_EQ(rc, 0) << mpi.substr(0, 4000);
  expect_same(single, mpi, "--mpi -np 2");
}

// The per-rank files two processes wrote: each decodes and stands alone, holds
// its rank's process track only, and a slice per record of its timeline.
TEST(ReportMpi, PerRankTracesDecode) {
  REQUIRE_MPI_BUILD();
  const std::string dir = make_temp_dir("report-mpi-decode");
  const SyntheticJob sj = timeline_job(dir + "/job", 2, 2);
  const std::string out = dir + "/out";
  int rc = -1;
  const std::string all =
      report_outputs(dir + "/job", out, 2, dir + "/stderr", &rc, {"--trace-per-rank"});
  ASSERT_EQ(rc, 0) << all.substr(0, 4000);
  for (const ProcessReport& r : sj.reports) {
    const std::string path = out + "/trace.r" + r.rank + ".pftrace";
    const Decoded d = decode_trace(path);
    ASSERT_TRUE(d.ok) << path << ": " << d.problem;
    EXPECT_EQ(check_tracks(d), "") << path;
    size_t processes = 0, begins = 0, ends = 0;
    for (const Descriptor& x : d.descs)
      if (x.process) {
        ++processes;
        EXPECT_EQ(x.pid, r.pid) << path;
        EXPECT_EQ(x.name, "rank " + r.rank + " (" + r.host + ")") << path;
      }
    for (const TraceEvent& e : d.events) {
      begins += e.type == 1;
      ends += e.type == 2;
    }
    EXPECT_EQ(processes, 1u) << path;
    EXPECT_EQ(begins, sj.oplog_ops_per_rank) << path;
    EXPECT_EQ(ends, sj.oplog_ops_per_rank) << path;
  }
}

// A DIR that cannot be read: process 0 stops before parsing, tells the others,
// and the job ends with the single-process report's error and exit code.
TEST(ReportMpi, UnreadableDirEndsEveryProcess) {
  REQUIRE_MPI_BUILD();
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
