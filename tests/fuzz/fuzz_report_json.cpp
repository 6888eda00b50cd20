// A report JSON through its reader and everything that renders a job from it;
// the loader's one-pass reader of its rows (report_rows.h) held to the full
// parse: the same result, byte for byte, on every input.
#include <cstdio>
#include <cstdlib>

#include "tests/fuzz/fuzz_targets.h"
#include "userspace/report/html/html_report.h"
#include "userspace/report/job/job.h"
#include "userspace/report/job/parsed_report.h"
#include "userspace/report/job/report_reader.h"
#include "userspace/report/job/report_rows.h"
#include "userspace/report/text/summary.h"
#include "userspace/report/tables/tables.h"

namespace fabtrace::fuzz {

int report_json(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  {
    report::ParsedReport fast, full;
    report::parse_report_rows(text, &fast);
    full.ok = report::parse_process_report(text, &full.report, &full.why);
    report::stage_rows(&full);
    std::string a, b;
    report::encode_parsed_report(fast, &a);
    report::encode_parsed_report(full, &b);
    if (a != b) {
      std::fprintf(stderr, "report_rows and the full parse differ\n");
      std::abort();
    }
  }
  ProcessReport rep;
  std::string why;
  if (!report::parse_process_report(text, &rep, &why)) return 0;
  // Two ranks from the one report (the second on another host), so that the
  // job-wide arithmetic (medians, spans, sums) has more than one of each.
  report::Job job;
  ProcessReport other = rep;
  other.host += "-b";
  job.ranks.push_back(report::make_rank(std::move(rep)));
  job.ranks.push_back(report::make_rank(std::move(other)));
  report::build_job_tables(&job);
  (void)report::summary_text(job, report::SummaryOptions());
  (void)report::html_report(job, report::HtmlOptions());
  std::FILE* sink = std::fopen("/dev/null", "w");
  if (sink) {
    report::write_links_csv(job, sink);
    report::write_links_json(job, sink);
    report::write_nics_csv(job, sink);
    report::write_nics_json(job, sink);
    std::fclose(sink);
  }
  render_perfetto(job);
  return 0;
}

}  // namespace fabtrace::fuzz
