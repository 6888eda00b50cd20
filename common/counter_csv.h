// The NIC counters CSV ("fabtrace-counters"), fabtrace_nic.<host>.r<rank>.p<pid>.csv
// (common/output_names.h): its name, version, columns, writer and reader, the
// one home that the sampler (sampler/cxi_counters.h, which writes it), the
// node-wide session (which writes it once per node) and the report (which
// reads it) share.
//
// Layout ("fabtrace-counters v1"):
//   # fabtrace-counters v1 host=<h> rank=<r> pid=<p>
//   # interval_ms=<req> achieved_mean_ms=<x.xxx> devices=<cxi0,...> counters=<n> samples=<n>
//     dropped=<n> read_errors=<n>                                    (one line)
//   # clock t_mono_ns=CLOCK_MONOTONIC ns (...); wall_ns=CLOCK_REALTIME; ...  (one line)
//   # dev <cxiN> nic_addr=<a> nid=<n>                        (one per device, "?" if unknown)
//   # writer fabtrace <version>          (common/version.h; files before 0.9.0 have none)
//   t_mono_ns,wall_ns,cxi0:telemetry_wall_ns,cxi0:<counter>,...,cxi0:rh:<stat>,...,cxi1:...
//   <one row of unsigned decimal integers per sample>
// Columns: t_mono_ns is the absolute CLOCK_MONOTONIC time the sample started;
// wall_ns the CLOCK_REALTIME time right after; per device, "cxiN:telemetry_wall_ns" is
// the newest "@sec.nsec" stamp (ns since the epoch) among that device's telemetry
// counters in the sample (0 when it has none), followed by that device's counters.
// A counter that could not be read in a sample is 0 in that row (counted in
// read_errors). achieved_mean_ms is the mean spacing of the stored samples: above
// interval_ms means sampling could not keep up. Comment lines other than these may
// be added in later versions; readers skip the ones they do not know.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fabtrace {

// The first words of the format line: "# fabtrace-counters v1".
constexpr const char* kCounterCsvFormatName = "fabtrace-counters";
constexpr int kCounterCsvVersion = 1;

// The comment line naming the fabtrace that wrote the file.
constexpr const char* kCounterWriterPrefix = "# writer fabtrace ";
constexpr size_t kCounterWriterPrefixLen = 18;

// The two columns every row starts with, and the per-device column that holds
// the device's newest telemetry stamp ("cxiN:" + kTelemetryWallColumn).
constexpr const char* kCounterMonoColumn = "t_mono_ns";
constexpr const char* kCounterWallColumn = "wall_ns";
constexpr const char* kTelemetryWallColumn = "telemetry_wall_ns";

// The rank field of the node-wide series that `fabtrace record` samples once per
// node (fabtrace_nic.<host>.node.p<pid>.csv); the report shows it with that
// host's ranks.
constexpr const char* kNodeCountersRank = "node";

// Everything of a counters CSV above its rows: what the writer is given and the
// reader fills in.
struct CounterCsvHeader {
  struct Device {
    std::string name, nic_addr, nid;
  };
  std::string host, rank;
  long pid = -1;
  std::string fabtrace_version;  // the writer's: "# writer fabtrace <v>" (read; written as is)
  uint64_t interval_ms = 0;
  double achieved_mean_ms = 0.0;
  std::vector<std::string> devices;  // the devices= field
  uint64_t counters = 0, samples = 0, dropped = 0, read_errors = 0;
  std::vector<Device> device_info;  // the "# dev" lines
  std::vector<std::string> columns;
};

// A counters CSV read back.
struct CounterSeries : CounterCsvHeader {
  std::vector<std::vector<uint64_t>> rows;
  bool truncated = false;  // an unfinished last line was dropped

  int column(const std::string& name) const;  // index into columns, -1 when absent
};

// Writes the new file `path` (common/safe_output.h: never over an existing file
// or through a symlink): `head`'s lines, then `nrows` rows of head.columns.size()
// values each, row after row in `values`. host and rank are written as output
// tokens (common/rank.h). False (with one message) when the file cannot be
// created or written.
bool write_counter_csv(const std::string& path, const CounterCsvHeader& head,
                       const uint64_t* values, uint64_t nrows);

// Reads a file written by write_counter_csv. A last line without its newline
// (the writer was cut short) is dropped and sets truncated. False with a
// message in *error for a missing file, a wrong format line or version, a
// missing header row, or a malformed complete row.
// The file must be a regular file within common/input_limits.h's bounds, as
// must its strings, times and number of values.
bool read_counter_csv(const std::string& path, CounterSeries* out, std::string* error);
// The same on the text of such a file; `path` only names it in messages.
bool parse_counter_csv(const std::string& text, const std::string& path, CounterSeries* out,
                       std::string* error);

}  // namespace fabtrace
