// What the HTML report (html_report.h) is asked to show: apart, so that its
// sections (sections.h) take it without the report's entry points.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace fabtrace::report {

struct SlowestOps;  // slowest_ops.h

struct HtmlOptions {
  std::string dir;                        // the job directory (shown in the title)
  size_t top = 10;                        // rows of the slowest/outlier tables
  size_t max_table_rows = 200;            // longer tables are cut (the CSV has everything)
  size_t max_counter_ranks = 16;          // ranks whose counters are plotted
  std::vector<std::string> outputs;       // other files written (linked by name)
  std::string links_table = "links.csv";  // where the link rows are (tables.h)
  // The slowest ops section (slowest_ops.h), when they were looked for.
  const SlowestOps* slowest = nullptr;
};

}  // namespace fabtrace::report
