// Subcommands of the `fabtrace` command.
#pragma once

#include <cstdio>
#include <set>
#include <string>

namespace fabtrace {

// fabtrace run [--dir DIR] [--stderr] -- CMD [ARGS...]
int cmd_run(int argc, char** argv);

// fabtrace record [-o DIR] [--duration S] [--pid PID]... [--polls] [--list] [-- CMD ...]
int cmd_record(int argc, char** argv);

// fabtrace export ops FILE [--csv] [-o OUT]
int cmd_export(int argc, char** argv);

// fabtrace report DIR [-o OUTDIR] [--top N] [--no-html] [--no-trace]
int cmd_report(int argc, char** argv);

// fabtrace export kernel FILE [--csv] [--kind K,...] [--top N]
int cmd_export_kernel(int argc, char** argv);
// Writes the kernel log `in` (fabtrace record) as text or CSV to `out`, one row
// per event (only `kinds` when not empty; only the `top` longest, longest first,
// when not 0). Returns 0, or 1 when `in` is unusable or the output fails.
int export_kernel(const std::string& in, bool csv, std::FILE* out);
int export_kernel(const std::string& in, bool csv, const std::set<std::string>& kinds, size_t top,
                  std::FILE* out);

// Writes the oplog file `in` as CSV to `out` (a comment line with the clock
// anchors, a header row, one row per op in file order, times in
// CLOCK_MONOTONIC ns). Messages go to stderr. Returns the exit code: 0, or 1
// when `in` is missing, not an oplog, unreadable, or `out` fails.
int export_ops_csv(const std::string& in, std::FILE* out);
// fabtrace export marks FILE [--csv]: the marks of an oplog (time_ns,kind,name,tid).
int cmd_export_marks(int argc, char** argv);
int export_marks_csv(const std::string& in, std::FILE* out);

}  // namespace fabtrace
