// fabtrace report DIR [-o OUTDIR]: the job-wide view of every rank's outputs
// under DIR: a summary on stdout, and in OUTDIR the HTML report, the link and
// NIC tables and the Perfetto trace.
#include <malloc.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "common/printable.h"
#include "common/safe_output.h"
#include "userspace/cli/cli.h"
#include "userspace/commands.h"
#include "userspace/report/html/html_report.h"
#include "userspace/report/job/job.h"
#include "userspace/report/tables/manifest.h"
#include "userspace/report/otf2/otf2_export.h"
#include "userspace/report/perfetto/perfetto_trace.h"
#include "userspace/report/analysis/slowest_ops.h"
#include "userspace/report/text/summary.h"
#include "userspace/report/tables/tables.h"
#if FABTRACE_HAVE_MPI
#include "userspace/report/mpi/report_mpi.h"
#endif

namespace fabtrace {

namespace {

namespace fs = std::filesystem;

}  // namespace

void add_report_command(cli::Cli& cli, CLI::App& parent) {
  auto a = std::make_shared<ReportArgs>();
  a->zstd_links_above = report::kZstdLinksAbove;
  CLI::App* c = cli.add_command(
      parent, "report",
      "the whole job from every rank's outputs under DIR: a summary on stdout (slowest and "
      "outlier links, NIC bandwidth, CQ poll gaps, receives posted late, errors), and in OUTDIR "
      "report.html, the link and NIC tables (CSV, JSON) and a Perfetto trace; --otf2 adds an "
      "OTF2 archive, --mpi shares the work among the processes of mpirun",
      [a] { return job_report(*a); });
  cli.require(c->add_option("DIR", a->dir,
                            "the job's per-rank outputs (FABTRACE_DIR of the run), read "
                            "recursively"));
  c->add_option("-o,--output", a->out_dir,
                "where report.html, links.csv/json, nics.csv/json and the Perfetto trace go "
                "(default DIR/fabtrace-report)")
      ->type_name("OUTDIR");
  cli::add_number(c, "--top",
                  "rows per list of the summary (default 5), and slowest ops listed (default 10)",
                  1, 100000, [a](uint64_t v) {
                    a->top = v;
                    a->top_given = true;
                  });
  c->add_flag("--no-html", a->no_html, "no report.html");
  c->add_flag("--no-trace", a->no_trace, "no Perfetto trace");
  c->add_flag("--kernel-events", a->kernel_events,
              "also OUTDIR/kernel_events.csv: every event of the kernel logs (fabtrace record) "
              "under DIR");
  c->add_flag("--otf2", a->otf2,
              "also an OTF2 archive, OUTDIR/otf2/trace.otf2 (Vampir, otf2-print)");
  cli::add_number(c, "--threads",
                  "threads that read the ranks' reports (default: one per core); the outputs "
                  "are the same for any N",
                  1, 1024, [a](uint64_t v) { a->threads = v; });
  cli::add_number(c, "--zstd-links-above",
                  "a job of more than N link rows (default " +
                      std::to_string(report::kZstdLinksAbove) +
                      ") gets links.csv.zst (zstd of links.csv) and no links.json; 0: always",
                  0, UINT64_MAX, [a](uint64_t v) { a->zstd_links_above = v; });
  c->add_flag("--trace-per-rank", a->trace_per_rank,
              "the Perfetto trace as one file per rank, trace.r<rank>.pftrace (and "
              "trace.kernel.<host>.pftrace per node with a kernel log), instead of "
              "trace.pftrace");
  c->add_flag("--mpi", a->mpi,
              "under mpirun -np K: the K processes share the ranks: each parses its share of "
              "the reports (N threads each), reads its ranks' per-op timelines and writes their "
              "per-rank trace files; process 0 merges and writes the same outputs as without "
              "--mpi");
}

int job_report(const ReportArgs& args) {
  std::string dir = args.dir, out_dir = args.out_dir;
  const bool html = !args.no_html, trace = !args.no_trace, kernel_events = args.kernel_events;
  const bool otf2 = args.otf2, mpi = args.mpi, trace_per_rank = args.trace_per_rank;
  const size_t top = args.top, threads = args.threads, zstd_links_above = args.zstd_links_above;
  const bool top_given = args.top_given;
  if (mpi && !FABTRACE_HAVE_MPI) {
    std::fprintf(stderr,
                 "fabtrace report: --mpi: this fabtrace was built without MPI (libopenmpi-dev)\n");
    return 2;
  }
#if FABTRACE_HAVE_MPI
  // Every process parses the same arguments; process 0 writes the report,
  // the others only parse their share of the ranks' reports for it.
  std::unique_ptr<MpiReport> session;
  if (mpi) {
    session = std::make_unique<MpiReport>();
    if (!session->root()) return session->serve(static_cast<unsigned>(threads));
  }
#endif
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (out_dir.empty()) out_dir = dir + "/fabtrace-report";

  // A fixed mmap threshold (glibc raises it to the largest block freed, by
  // default): the per-rank row blocks the loader frees once they are in the
  // job's table go back to the system instead of staying in the heap beside
  // the table, which would hold a large job's rows twice at the peak.
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  report::LoadOptions lopt;
  lopt.exclude_dirs.push_back(out_dir);
  lopt.threads = static_cast<unsigned>(threads);
#if FABTRACE_HAVE_MPI
  if (session) {
    lopt.parser = session->parser(lopt.threads);
    lopt.match_receives = session->matcher();
  }
  // The other processes wait for this one at each step: on the way out
  // early, they are let go, and MPI is finalized.
  const auto end_session = [&session] {
    if (session) session->release();
    session.reset();
  };
#else
  const auto end_session = [] {};
#endif
  report::Job job;
  std::string err;
  const bool loaded = report::load_job(dir, lopt, &job, &err);
  if (!loaded) {
    end_session();
    std::fprintf(stderr, "fabtrace report: %s\n", err.c_str());
    return 1;
  }
  for (const report::Skipped& s : job.skipped)
    std::fprintf(stderr, "fabtrace report: skipped %s: %s\n", printable(s.path).c_str(),
                 printable(s.why).c_str());
  if (job.ranks.empty()) {
    end_session();
    std::fprintf(stderr,
                 "fabtrace report: no usable fabtrace report (fabtrace.<host>.r<rank>.p<pid>.json) "
                 "under %s%s\n",
                 dir.c_str(), job.skipped.empty() ? "" : " (every candidate was skipped)");
    return 1;
  }

  // The output directory is ours: made here, or one of ours that is not a
  // symlink (common/safe_output.h), opened once and held until the end: every
  // output is created through its descriptor, so nobody can swap it meanwhile.
  // Its parents are the user's choice.
  OutputDir out;
  {
    std::error_code ec;
    const fs::path parent = fs::path(out_dir).parent_path();
    if (!parent.empty()) fs::create_directories(parent, ec);
    std::string why;
    if (!out.open(out_dir, true, &why)) {
      end_session();
      std::fprintf(stderr, "fabtrace report: cannot use the output directory %s\n",
                   printable(why).c_str());
      return 1;
    }
  }

  int rc = 0;
  std::vector<std::string> outputs;
  if (!report::write_tables(job, out_dir, &outputs, &err, kernel_events, zstd_links_above)) {
    std::fprintf(stderr, "fabtrace report: %s\n", err.c_str());
    rc = 1;
  }
  // The slowest individual ops: one streaming pass over the per-op timelines
  // (--mpi: each process over its ranks').
  report::PerfettoOptions popt;
  popt.split_per_rank = trace_per_rank;
  const size_t slow_n = top_given ? top : 10;
#if FABTRACE_HAVE_MPI
  const report::SlowestOps slowest =
      session ? session->slowest_ops(job, slow_n, trace && trace_per_rank, out_dir, popt)
              : report::find_slowest_ops(job, slow_n);
#else
  const report::SlowestOps slowest = report::find_slowest_ops(job, slow_n);
#endif
  for (const std::string& w : slowest.warnings)
    std::fprintf(stderr, "fabtrace report: %s\n", printable(w).c_str());
  if (!slowest.covers.empty()) {
    const std::string path = out_dir + "/slowest_ops.csv";
    if (report::write_slowest_ops_csv(slowest, path, &err)) {
      outputs.push_back(path);
    } else {
      std::fprintf(stderr, "fabtrace report: %s\n", err.c_str());
      rc = 1;
    }
  }
  std::vector<std::string> trace_files;
  // Unless they write their ranks' trace files, the other processes are done:
  // they exit instead of polling in MPI_Finalize (which waits for every
  // process) while this one writes the rest.
  const bool shared_trace = trace && trace_per_rank && FABTRACE_HAVE_MPI && mpi;
  if (!shared_trace) end_session();
  if (trace) {
    bool ok;
#if FABTRACE_HAVE_MPI
    if (shared_trace)
      ok = session->per_rank_trace(job, out_dir, popt, &trace_files, &err);
    else
#endif
      ok = report::write_perfetto(job, out_dir, popt, &trace_files, &err);
    end_session();
    if (!ok) {
      std::fprintf(stderr, "fabtrace report: the Perfetto trace: %s\n", err.c_str());
      rc = 1;
    }
  }
  if (otf2) {
    std::string archive;
    report::Otf2Stats ost;
    if (report::write_otf2(job, out_dir, &archive, &ost, &err)) {
      trace_files.push_back(archive);
    } else {
      std::fprintf(stderr, "fabtrace report: --otf2: %s\n", err.c_str());
      rc = 1;
    }
    for (const std::string& w : ost.warnings)
      std::fprintf(stderr, "fabtrace report: otf2: %s\n", printable(w).c_str());
  }
  if (html) {
    report::HtmlOptions hopt;
    hopt.dir = dir;
    hopt.slowest = &slowest;
    hopt.outputs = outputs;
    hopt.links_table = report::links_table_name(job, zstd_links_above);
    hopt.outputs.insert(hopt.outputs.end(), trace_files.begin(), trace_files.end());
    const std::string path = out_dir + "/report.html";
    if (report::write_html_report(job, path, hopt, &err)) {
      outputs.insert(outputs.begin(), path);
    } else {
      std::fprintf(stderr, "fabtrace report: %s\n", err.c_str());
      rc = 1;
    }
  }
  outputs.insert(outputs.end(), trace_files.begin(), trace_files.end());
  // What was written and from what: the tables' writer and job (manifest.h).
  if (report::write_manifest(job, dir, out_dir, outputs, &err)) {
    outputs.push_back(out_dir + "/manifest.json");
  } else {
    std::fprintf(stderr, "fabtrace report: %s\n", err.c_str());
    rc = 1;
  }

  report::SummaryOptions sopt;
  sopt.dir = dir;
  sopt.top = top;
  sopt.slowest = &slowest;
  sopt.outputs = outputs;
  sopt.links_table = report::links_table_name(job, zstd_links_above);
  sopt.skipped_on_stderr = job.skipped.size();
  std::fflush(stderr);
  if (!report::write_summary(stdout, job, sopt)) {
    std::fprintf(stderr, "fabtrace report: writing the summary to stdout failed: %s\n",
                 std::strerror(errno));
    rc = 1;
  }
  return rc;
}

}  // namespace fabtrace
