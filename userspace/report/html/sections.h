// The sections of the HTML report (html_report.h), each written into the page
// by one function; html_report.cpp puts them in order.
#pragma once

#include "userspace/report/html/options.h"
#include "userspace/report/html/page.h"
#include "userspace/report/job/job.h"

namespace fabtrace::report::html_page {

// html/job.cpp: the job's shape (cards) and the ranks table.
void section_shape(const Job& job, Html* h);
void section_ranks(const Job& job, const HtmlOptions& opt, Html* h);
// html/heatmaps.cpp: latency by NIC pair.
void section_heatmaps(const Job& job, Html* h);
// html/charts.cpp: per-NIC bandwidth bars and NIC counters over time.
void section_bandwidth(const Job& job, Html* h);
void section_counters(const Job& job, const HtmlOptions& opt, Html* h);
// html/stalls.cpp: CQ poll gaps, and why (from the kernel logs).
void section_stalls(const Job& job, const HtmlOptions& opt, Html* h);
void section_stall_causes(const Job& job, const HtmlOptions& opt, Html* h);
// html/waits.cpp: root causes of waiting and the rank x rank wait matrix.
void section_waits(const Job& job, const HtmlOptions& opt, Html* h);
// html/links.cpp: the link tables (outliers and slowest, receives posted
// late, problems) and the files skipped.
void section_links(const Job& job, const HtmlOptions& opt, Html* h);
void section_late(const Job& job, const HtmlOptions& opt, Html* h);
void section_problems(const Job& job, const HtmlOptions& opt, Html* h);
// html/kernel.cpp: retransmits and drops per link, and one block per node.
void section_link_net(const Job& job, const HtmlOptions& opt, Html* h);
void section_kernel_nodes(const Job& job, Html* h);

}  // namespace fabtrace::report::html_page
