// Subcommands of the `fabtrace` command: each declares its options on the one
// parser (userspace/cli/cli.h) and calls its work, which takes the parsed
// arguments. fabtrace(1) and fabtrace-<command>(1) are generated from these
// declarations (docs/man), and so is the bash completion.
#pragma once

#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace fabtrace {

namespace cli {
class Cli;
}

// fabtrace run [--dir DIR] [--stderr] [--] CMD [ARGS...]
struct RunArgs {
  std::string dir;  // "" : FABTRACE_DIR, else "."
  bool to_stderr = false;
  std::vector<std::string> command;
};
void add_run_command(cli::Cli& cli, CLI::App& parent);
int run_traced(const RunArgs& args);

// fabtrace record [options] [-- CMD [ARGS...]]
struct RecordArgs {
  std::string dir;  // "" : FABTRACE_DIR, else "."
  uint64_t duration_s = 0;
  std::vector<uint64_t> pids;
  bool only_pids = false, polls = false, net_all = false, no_preload = false, list = false;
  uint64_t min_offcpu_us = 0;
  uint64_t min_softirq_us = 10;          // --raw windows: softirqs written from this long
  uint64_t usdt_rate = 0, max_size = 0;  // 0: the collector's defaults
  std::string raw;                       // --raw: "" (the default), windows, all, none
  bool uprobes = false, uprobe_by_name = false, uprobe_perf_events = false;
  std::string uprobe_providers, symbols;
  std::string owner;  // --owner UID:GID
  std::vector<std::string> command;
};
void add_record_command(cli::Cli& cli, CLI::App& parent);
int record_session(const RecordArgs& args);

// fabtrace report DIR [options]
struct ReportArgs {
  std::string dir, out_dir;
  uint64_t top = 5;
  bool top_given = false;
  bool no_html = false, no_trace = false, kernel_events = false, otf2 = false, mpi = false;
  bool trace_per_rank = false;
  uint64_t threads = 0;
  uint64_t zstd_links_above = 0;  // set to report::kZstdLinksAbove by the declaration
};
void add_report_command(cli::Cli& cli, CLI::App& parent);
int job_report(const ReportArgs& args);

// fabtrace diff A B [options]: two runs compared (report/diff/job_diff.h).
struct DiffArgs {
  std::string dir_a, dir_b;
  double threshold = 1.2;
  uint64_t min_ops = 10;
  uint64_t stall_ms = 10;
  uint64_t top = 10;
  std::string html;       // "" : no page
  double fail_above = 0;  // 0 : no gate
};
void add_diff_command(cli::Cli& cli, CLI::App& parent);
// Exit code: 0; 1 when --fail-above is given and a gated figure is above it;
// 2 when A or B holds no usable report or an output cannot be written.
int diff_runs(const DiffArgs& args);

// fabtrace top [options]: the node's traced processes now (live/live_view.h).
struct TopArgs {
  bool once = false, json = false;
  uint64_t interval_s = 1;
  std::string rank, link, op, sort = "rank";
  uint64_t pid = 0;  // 0: every process
  std::string dir;   // "" : FABTRACE_LIVE_DIR, else /dev/shm
};
void add_top_command(cli::Cli& cli, CLI::App& parent);
// Exit code: 0; 1 when the snapshots cannot be read or stdout fails.
int top_view(const TopArgs& args);

// fabtrace metrics --textfile FILE [options] (live/metrics_text.h).
struct MetricsArgs {
  std::string textfile;
  uint64_t interval_s = 15;
  bool once = false;
  uint64_t max_links = 16;
  std::string dir;  // "" : FABTRACE_LIVE_DIR, else /dev/shm
};
void add_metrics_command(cli::Cli& cli, CLI::App& parent);
// Exit code: 0; 1 when a write failed (each said in one line; a loop goes on).
int write_metrics(const MetricsArgs& args);

// fabtrace export ops|marks|kernel FILE [options]
void add_export_command(cli::Cli& cli, CLI::App& parent);

// fabtrace version (and fabtrace --version)
void add_version_command(cli::Cli& cli, CLI::App& parent);
// fabtrace's version, `git describe` at build time, and the libfabric and
// libbpf it runs with, one per line. Returns 0, or 1 when `out` fails.
int print_version(std::FILE* out);

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
// The same into the file `out_path` ("" or "-": stdout), created only once
// `in` has been found to be an oplog.
int export_ops(const std::string& in, const std::string& out_path);
// The marks of an oplog as CSV (time_ns,kind,name,tid).
int export_marks_csv(const std::string& in, std::FILE* out);

}  // namespace fabtrace
