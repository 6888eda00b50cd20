// Numbers, times, sizes and addresses in the report's words, as the summary,
// the HTML report and the diff print them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/report_model.h"

namespace fabtrace::report {

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

}  // namespace fabtrace::report
