// The terminal summary of `fabtrace report`, and the selections and number
// formats it shares with the HTML report.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "userspace/report/job.h"

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

// Why a stall happened, in one line ("" when its host had no kernel log).
std::string stall_why(const Stall& s);
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

// ---- formats ----

// printf into a string, of any length.
std::string printf_str(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string fmt_ns(double ns);     // "850 ns", "12.3 us", "4.56 ms", "1.234 s"
std::string fmt_size(uint64_t b);  // message sizes: "64 B", "4 KiB", "1.5 MiB", "1000 B"
// A row's size: fmt_size, or "size unknown (posted 4 KiB)" for a receive row
// whose completions carried no length.
std::string fmt_row_size(const OpStats& row);
std::string fmt_bytes(uint64_t b);  // volumes: "512 B", "4.1 kB", "163.8 MB", "2.0 GB"
std::string fmt_count(uint64_t n);  // "1234567" -> "1,234,567"
std::string fmt_gbps(double gbps);  // "1.234 GB/s"
// CLOCK_REALTIME ns as UTC: "2025-05-01 12:00:00.123456 UTC" (with_date) or
// "12:00:00.123456 UTC"; "?" for 0.
std::string fmt_wall(uint64_t wall_ns, bool with_date);
// An address without its "scheme://" prefix: "fi_sockaddr_in://10.0.0.1:5" -> "10.0.0.1:5".
std::string short_addr(const std::string& addr);
// A NIC's addresses, each without its scheme: "10.0.0.1:5,10.0.0.1:6", the
// first `max` of them and "+N more" for the rest.
std::string short_addrs(const std::vector<std::string>& addrs, size_t max = 2);
// "node1 r3" (the pid is added when the rank is NA).
std::string who(const std::string& host, const std::string& rank, long pid);

}  // namespace fabtrace::report
