// The self-contained HTML report of `fabtrace report` (OUTDIR/report.html):
// inline CSS and SVG, a few lines of inline script (the heatmap selector; the
// page reads fine without it), nothing loaded from anywhere.
//
// Sections: the job's shape; NIC x NIC latency heatmaps (rows: local NIC,
// columns: remote NIC; one pair of maps, p50 and p99, per (op, size class),
// chosen with a selector); per-NIC achieved bandwidth bars; NIC counter rates
// over time; the CQ poll-gap (stall) table; slowest and outlier links; late
// receivers; problems; skipped files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "userspace/report/html/heatmap_model.h"
#include "userspace/report/html/options.h"
#include "userspace/report/job/job.h"

namespace fabtrace::report {

std::string html_report(const Job& job, const HtmlOptions& opt);
// Writes html_report() to path. False with *error naming the file.
bool write_html_report(const Job& job, const std::string& path, const HtmlOptions& opt,
                       std::string* error);

}  // namespace fabtrace::report
