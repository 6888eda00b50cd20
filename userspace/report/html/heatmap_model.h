// The HTML report's latency heatmaps as data (heatmap_model.cpp): NIC x NIC
// (or host x host) cells per (op, size class), also read by the tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "userspace/report/job/job.h"

namespace fabtrace::report {

// Message size classes of the heatmaps.
int size_class(uint64_t bytes);        // 0 .. kSizeClasses-1
const char* size_class_name(int cls);  // "≤ 64 B", ..., "> 4 MiB"
constexpr int kSizeClasses = 6;

struct HeatCell {
  uint64_t count = 0;    // completions of the rows merged into the cell; 0: no data
  uint64_t rows = 0;     // link rows merged
  double p50_ns = 0;     // count-weighted mean of the rows' p50
  double p99_ns = 0;     // the largest of the rows' p99
  bool outlier = false;  // one of the rows is an outlier link (not for receives)
};

struct Heatmap {
  std::string op;
  int size_class = 0;
  uint64_t count = 0;           // completions over the whole map
  std::vector<HeatCell> cells;  // row-major, rows x cols of the set's axes
};

struct HeatmapSet {
  bool by_host = false;  // too many NICs: rows and columns are hosts
  // Too many hosts too: each row (and the column of the same hosts) is a run
  // of this many consecutive hosts, keyed "first..last".
  size_t hosts_per_row = 1;
  std::vector<std::string> row_keys, col_keys;      // addresses (or hosts)
  std::vector<std::string> row_labels, col_labels;  // short names for the axes
  std::vector<Heatmap> maps;                        // sorted by op, then size class
  size_t default_map = 0;                           // the busiest non-receive map
};

// Builds the maps. Rows are the local NICs of the job's link rows, columns
// their remote NICs (the ones that are also local NICs first, in row order).
// With more than max_axis rows or columns both axes become hosts, and with
// more than max_axis hosts, runs of hosts (hosts_per_row).
HeatmapSet build_heatmaps(const Job& job, size_t max_axis = 48);

}  // namespace fabtrace::report
