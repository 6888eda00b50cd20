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
#include "userspace/commands.h"
#include "userspace/report/html_report.h"
#include "userspace/report/job.h"
#include "userspace/report/otf2_export.h"
#include "userspace/report/perfetto_trace.h"
#include "userspace/report/slowest_ops.h"
#include "userspace/report/summary.h"
#include "userspace/report/tables.h"
#if FABTRACE_HAVE_MPI
#include "userspace/report_mpi.h"
#endif

namespace fabtrace {

namespace {

namespace fs = std::filesystem;

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: fabtrace report DIR [-o OUTDIR] [--top N] [--no-html] [--no-trace]\n"
               "                       [--kernel-events] [--otf2] [--threads N] [--mpi]\n"
               "                       [--trace-per-rank] [--zstd-links-above N]\n"
               "  DIR      the job's per-rank outputs (FABTRACE_DIR of the run), read recursively\n"
               "  OUTDIR   where report.html, links.csv/json, nics.csv/json and the Perfetto\n"
               "           trace go (default DIR/fabtrace-report)\n"
               "  --top N  rows per list of the summary (default 5), and slowest ops listed\n"
               "           (default 10)\n"
               "  --kernel-events  also OUTDIR/kernel_events.csv: every event of the kernel\n"
               "           logs (fabtrace record) under DIR\n"
               "  --otf2   also an OTF2 archive, OUTDIR/otf2/trace.otf2 (Vampir, otf2-print)\n"
               "  --threads N  threads that read the ranks' reports (default: one per core);\n"
               "           the outputs are the same for any N\n"
               "  --zstd-links-above N  a job of more than N link rows (default 100000) gets\n"
               "           links.csv.zst (zstd of links.csv) and no links.json; 0: always\n"
               "  --trace-per-rank  the Perfetto trace as one file per rank,\n"
               "           trace.r<rank>.pftrace (and trace.kernel.<host>.pftrace per node\n"
               "           with a kernel log), instead of trace.pftrace\n"
               "  --mpi    under mpirun -np K: the K processes share the ranks: each parses\n"
               "           its share of the reports (N threads each), reads its ranks'\n"
               "           per-op timelines and writes their per-rank trace files; process 0\n"
               "           merges and writes the same outputs as without --mpi\n");
}

// A whole number, 0 or more.
bool parse_count(const char* s, size_t* out) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (errno || !end || *end || end == s || s[0] == '-') return false;
  *out = static_cast<size_t>(v);
  return true;
}

// A number from 1 to 100000.
bool parse_size(const char* s, size_t* out) {
  size_t v = 0;
  if (!parse_count(s, &v) || v == 0 || v > 100000) return false;
  *out = v;
  return true;
}

}  // namespace

int cmd_report(int argc, char** argv) {
  std::string dir, out_dir;
  bool have_dir = false, html = true, trace = true, kernel_events = false, otf2 = false;
  bool mpi = false, trace_per_rank = false;
  size_t top = 5, threads = 0, zstd_links_above = report::kZstdLinksAbove;
  bool top_given = false;
  for (int i = 0; i < argc; ++i) {
    const char* a = argv[i];
    if (!std::strcmp(a, "-h") || !std::strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    }
    if (!std::strcmp(a, "-o") || !std::strcmp(a, "--output") || !std::strcmp(a, "--top") ||
        !std::strcmp(a, "--threads") || !std::strcmp(a, "--zstd-links-above")) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "fabtrace report: %s needs a value\n", a);
        return 2;
      }
      if (!std::strcmp(a, "--zstd-links-above")) {
        if (!parse_count(argv[++i], &zstd_links_above)) {
          std::fprintf(stderr,
                       "fabtrace report: --zstd-links-above takes a number of rows, not '%s'\n",
                       argv[i]);
          return 2;
        }
      } else if (!std::strcmp(a, "--threads")) {
        if (!parse_size(argv[++i], &threads) || threads > 1024) {
          std::fprintf(stderr,
                       "fabtrace report: --threads takes a number from 1 to 1024, not '%s'\n",
                       argv[i]);
          return 2;
        }
      } else if (!std::strcmp(a, "--top")) {
        top_given = true;
        if (!parse_size(argv[++i], &top)) {
          std::fprintf(stderr, "fabtrace report: --top takes a number from 1 to 100000, not '%s'\n",
                       argv[i]);
          return 2;
        }
      } else {
        out_dir = argv[++i];
      }
      continue;
    }
    if (!std::strncmp(a, "--output=", 9)) {
      out_dir = a + 9;
      continue;
    }
    if (!std::strcmp(a, "--no-html")) {
      html = false;
      continue;
    }
    if (!std::strcmp(a, "--no-trace")) {
      trace = false;
      continue;
    }
    if (!std::strcmp(a, "--kernel-events")) {
      kernel_events = true;
      continue;
    }
    if (!std::strcmp(a, "--otf2")) {
      otf2 = true;
      continue;
    }
    if (!std::strcmp(a, "--mpi")) {
      mpi = true;
      continue;
    }
    if (!std::strcmp(a, "--trace-per-rank")) {
      trace_per_rank = true;
      continue;
    }
    if (a[0] == '-' && a[1] != '\0') {
      std::fprintf(stderr, "fabtrace report: unknown option '%s'\n", a);
      usage(stderr);
      return 2;
    }
    if (have_dir) {
      std::fprintf(stderr, "fabtrace report: one directory only ('%s' and '%s')\n", dir.c_str(), a);
      return 2;
    }
    dir = a;
    have_dir = true;
  }
  if (!have_dir) {
    usage(stderr);
    return 2;
  }
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
