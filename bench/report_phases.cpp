// Where `fabtrace report`'s time goes on a job directory, step by step, for
// bench/report-scale: the steps of cmd_report (load, tables, slowest ops,
// HTML, summary; no Perfetto trace, as report-scale runs it) with the CPU
// time of the process (all threads, user + system) and the wall time of each,
// and inside the load the parsing threads' own time by part of a report
// (report::LoadStats): what is paid per file (finding it, open and read, its
// own fields, NICs and CQs) apart from what is paid per link row.
//
//   report_phases DIR OUTDIR [--threads N]
//
// Prints a table, then one line of key=value for scripts:
//   phases files=.. rows=.. find=.. open_read=.. head=.. rows_parse=.. ...
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "userspace/report/html/html_report.h"
#include "userspace/report/job/job.h"
#include "userspace/report/analysis/slowest_ops.h"
#include "userspace/report/text/summary.h"
#include "userspace/report/tables/tables.h"

namespace {

double cpu_s() {
  rusage u;
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double wall_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Step {
  double cpu = 0, wall = 0;
};

class Clock {
 public:
  Clock() : cpu_(cpu_s()), wall_(wall_s()) {}
  Step lap() {
    const double c = cpu_s(), w = wall_s();
    const Step s{c - cpu_, w - wall_};
    cpu_ = c;
    wall_ = w;
    return s;
  }

 private:
  double cpu_, wall_;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace fabtrace::report;
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s DIR OUTDIR [--threads N]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1], out = argv[2];
  LoadOptions lopt;
  lopt.exclude_dirs.push_back(out);
  for (int i = 3; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], "--threads"))
      lopt.threads = static_cast<unsigned>(std::atoi(argv[++i]));
  LoadStats st;
  lopt.stats = &st;
  Job job;
  std::string err;
  Clock clock;
  if (!load_job(dir, lopt, &job, &err)) {
    std::fprintf(stderr, "report_phases: %s\n", err.c_str());
    return 1;
  }
  const Step load = clock.lap();
  std::vector<std::string> outputs;
  if (!write_tables(job, out, &outputs, &err, false, kZstdLinksAbove)) {
    std::fprintf(stderr, "report_phases: %s\n", err.c_str());
    return 1;
  }
  const Step tables = clock.lap();
  const SlowestOps slowest = find_slowest_ops(job, 10);
  const Step slow = clock.lap();
  HtmlOptions hopt;
  hopt.dir = dir;
  hopt.slowest = &slowest;
  hopt.outputs = outputs;
  hopt.links_table = links_table_name(job, kZstdLinksAbove);
  const std::string html_path = out + "/report.html";
  if (!write_html_report(job, html_path, hopt, &err)) {
    std::fprintf(stderr, "report_phases: %s\n", err.c_str());
    return 1;
  }
  const Step html = clock.lap();
  SummaryOptions sopt;
  sopt.dir = dir;
  sopt.slowest = &slowest;
  sopt.outputs = outputs;
  sopt.links_table = hopt.links_table;
  const size_t summary_bytes = summary_text(job, sopt).size();
  const Step summary = clock.lap();

  const double files = static_cast<double>(st.reports), rows = static_cast<double>(st.rows);
  const auto us_per = [](double s, double n) { return n > 0 ? s * 1e6 / n : 0.0; };
  std::printf("%zu reports (%.0f MB), %zu other files, %zu link rows, %zu bytes of summary\n",
              st.reports, static_cast<double>(st.report_bytes) / 1e6, st.other_files, st.rows,
              summary_bytes);
  std::printf("%-44s %8s %8s %10s\n", "step", "cpu_s", "wall_s", "us/unit");
  const auto line = [&](const char* what, double cpu, double wall, double per, const char* unit) {
    if (wall >= 0)
      std::printf("%-44s %8.3f %8.3f %10.3f %s\n", what, cpu, wall, per, unit);
    else
      std::printf("%-44s %8.3f %8s %10.3f %s\n", what, cpu, "", per, unit);
  };
  line("load: find the files (walk DIR)", st.find_s, -1, us_per(st.find_s, files), "/file");
  line("load: read and parse the reports", st.parse_s, -1, us_per(st.parse_s, files), "/file");
  line("  open, read, close (thread CPU)", st.open_read_s, -1, us_per(st.open_read_s, files),
       "/file");
  line("  a report's fields, NICs, CQs (thread CPU)", st.head_s, -1, us_per(st.head_s, files),
       "/file");
  line("  its link rows (thread CPU)", st.rows_s, -1, us_per(st.rows_s, rows), "/row");
  if (st.fallbacks) line("  parsed whole (not in the one pass's subset)", st.fallback_s, -1, 0, "");
  line("load: merge ranks; timelines, counters, klogs", st.attach_s, -1, us_per(st.attach_s, files),
       "/file");
  line("load: job tables (sort, rows, NICs, outliers)", st.tables_s, -1, us_per(st.tables_s, rows),
       "/row");
  line("load: receives matched (timelines)", st.match_s, -1, 0, "");
  line("load (all of the above)", load.cpu, load.wall, us_per(load.cpu, rows), "/row");
  line("tables: links.csv(.zst), nics, stalls", tables.cpu, tables.wall, us_per(tables.cpu, rows),
       "/row");
  line("slowest ops (timelines)", slow.cpu, slow.wall, 0, "");
  line("report.html", html.cpu, html.wall, us_per(html.cpu, rows), "/row");
  line("summary", summary.cpu, summary.wall, us_per(summary.cpu, rows), "/row");
  const double total_cpu = load.cpu + tables.cpu + slow.cpu + html.cpu + summary.cpu;
  const double total_wall = load.wall + tables.wall + slow.wall + html.wall + summary.wall;
  line("total", total_cpu, total_wall, us_per(total_cpu, rows), "/row");
  std::printf(
      "phases files=%zu rows=%zu find=%.4f parse=%.4f open_read=%.4f head=%.4f rows_parse=%.4f "
      "fallback=%.4f attach=%.4f job_tables=%.4f match=%.4f load=%.4f tables=%.4f html=%.4f "
      "summary=%.4f total=%.4f\n",
      st.reports, st.rows, st.find_s, st.parse_s, st.open_read_s, st.head_s, st.rows_s,
      st.fallback_s, st.attach_s, st.tables_s, st.match_s, load.cpu, tables.cpu, html.cpu,
      summary.cpu, total_cpu);
  return 0;
}
