// The terminal summary of `fabtrace report`, and the selections it shares
// with the HTML report.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "userspace/report/job/job.h"
#include "userspace/report/job/kernel_node.h"

namespace fabtrace::report {

struct SlowestOps;  // slowest_ops.h

struct SummaryOptions {
  std::string dir;                        // the job directory, for the title line
  size_t top = 5;                         // rows per list
  std::vector<std::string> outputs;       // files written, listed at the end
  std::string links_table = "links.csv";  // where the link rows are (tables.h)
  size_t skipped_on_stderr = 0;           // files already named on stderr
  // The slowest ops section (slowest_ops.h), when they were looked for.
  const SlowestOps* slowest = nullptr;
};

// The summary, a few dozen lines at most whatever the job's size.
std::string summary_text(const Job& job, const SummaryOptions& opt);
// False when the summary could not be written whole (a full disk, a closed pipe).
bool write_summary(std::FILE* out, const Job& job, const SummaryOptions& opt);

// ---- the kernel's part (fabtrace record's logs; summary_kernel.cpp) ----

// The collector's own CPU and its preemptions of traced threads on one node,
// as one indented line of the summary ("" for a log without them).
std::string collector_line(const KernelNode& n);
// The slow ops with their causes and one short section per node; "" without
// kernel logs.
std::string kernel_summary(const Job& job, size_t top, const std::string& links_table);

// ---- selections (pointers into job) ----

// Non-receive rows with completions, highest p99 first (receives are left out:
// their latency includes waiting for the sender). At most n.
std::vector<const LinkRow*> slowest_links(const Job& job, size_t n);
// Non-receive rows whose outlier_ratio >= kOutlierRatio, highest ratio first.
std::vector<const LinkRow*> outlier_links(const Job& job);
// Receive rows with receives posted after their message's send was issued
// (LinkRow::posted), highest share of the matched ones first.
std::vector<const LinkRow*> posted_late_rows(const Job& job);
// The median p99 an outlier row was compared with (p99 / ratio).
double outlier_median_ns(const LinkRow& row);

}  // namespace fabtrace::report
