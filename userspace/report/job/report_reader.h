// Reading back the per-rank files of a job for `fabtrace report`: the report
// JSON (fabtrace.<host>.r<rank>.p<pid>.json, written by common/report_writer)
// and the NIC counter CSV (fabtrace_nic.<...>.csv), reduced for plotting.
//
// Tolerant: a file that cannot be used yields false and one line saying why
// (the caller names the file), never an exception or an abort.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/counter_csv.h"
#include "common/report_model.h"
#include "userspace/report/job/job.h"

namespace fabtrace::report {

constexpr const char* kReportFormat = kReportFormatName;
constexpr int kReportVersion = kReportFormatVersion;  // the newest version this reader understands

enum class FileProblem {
  kNone,
  kUnreadable,  // open/read failed
  kEmpty,       // zero bytes (or only blanks)
  kTruncated,   // JSON cut short (the writer was killed)
  kCorrupt,     // not JSON, or fields of the wrong type
  kForeign,     // valid JSON, but not a fabtrace report
  kVersion,     // a fabtrace report of a newer format version
  kTooLarge,    // larger than common/input_limits.h allows, or not a regular file
};
const char* file_problem_name(FileProblem p);  // "truncated", "foreign", ...

// Parses the text of a report. False with *why (one line, without the file
// name) and *problem on failure. Unknown fields are ignored; absent optional
// fields keep their defaults; host, rank and pid are required. Every field is
// checked against common/input_limits.h (nesting depth as it is parsed; string
// lengths, times, counts and the clock slope after): a report outside them is
// rejected as corrupt, since later arithmetic on its values must not overflow.
bool parse_process_report(const std::string& text, ProcessReport* out, std::string* why,
                          FileProblem* problem = nullptr);
bool read_process_report(const std::string& path, ProcessReport* out, std::string* why,
                         FileProblem* problem = nullptr);
// The text of a report file, bounded as read_process_report reads it: false
// with *why (and *problem: kUnreadable or kTooLarge) when it cannot be read.
bool read_report_text(const std::string& path, std::string* text, std::string* why,
                      FileProblem* problem = nullptr);

// Reduces a counter series for plotting: per device, the `per_device` most
// active counters (most sample intervals with a change, then largest
// increase); counters that never change are left out. Cumulative counters
// (every column except those whose name contains "in_use", "max_" or
// "status", and that never go down other than by a reset or a failed read)
// become rates per second; the others are plotted as sampled. A read that
// failed (a 0 after a non-zero value) is skipped. At most max_points points
// per track, times on the wall clock: t_mono_ns + wall_offset_ns.
void reduce_counter_series(const CounterSeries& cs, int64_t wall_offset_ns, size_t per_device,
                           size_t max_points, std::vector<CounterTrack>* out);

}  // namespace fabtrace::report
