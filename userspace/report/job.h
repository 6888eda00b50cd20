// The whole job as `fabtrace report` sees it: every rank's outputs found under
// a directory, merged. Built by load_job() (job_loader.cpp), consumed by the
// summary, the tables, the HTML report and the Perfetto trace writers.
//
// Per-op records and counter samples are NOT held here: they are streamed from
// their files (oplog_file.h, cxi_counters.h readers) by the writers that need
// them, so memory does not grow with the number of ops.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/report_model.h"

namespace fabtrace::report {

// One process (rank) of the job.
struct Rank {
  std::string host;
  std::string rank;          // as the launcher set it ("NA" when unknown)
  long pid = 0;
  std::string providers;
  uint64_t start_mono_ns = 0;  // first fabric activity, the rank's CLOCK_MONOTONIC
  uint64_t start_wall_ns = 0;  // the same instant, CLOCK_REALTIME
  double duration_s = 0;
  // wall_ns = mono_ns + wall_offset_ns: how this rank's monotonic times align
  // with the other nodes' (ranks on one host share CLOCK_MONOTONIC).
  int64_t wall_offset_ns() const {
    return static_cast<int64_t>(start_wall_ns) - static_cast<int64_t>(start_mono_ns);
  }
  std::string report_path;    // fabtrace.<host>.r<rank>.p<pid>.json
  std::string oplog_path;     // fabtrace_ops.<...>.oplog, empty when none
  std::string counters_path;  // fabtrace_nic.<...>.csv, empty when none
  ProcessReport report;       // the rank's own report, as read back
};

// One row of the job-wide link table: a link (local NIC -> remote NIC) x (op, size).
struct LinkRow {
  std::string host;   // host of the local side
  std::string rank;   // rank that owns the local endpoint
  std::string local, remote;
  OpRow row;          // counts and latency of that rank's row
  double outlier_ratio = 0;  // p99 / median p99 of the rows of the same (op, size); 0 if alone
};

struct NicRow {
  std::string host, rank;
  NicReport nic;
};

// A poll gap worth naming: a CQ's largest gap, with when it ended on the wall clock.
struct Stall {
  std::string host, rank;
  CqReport cq;
  uint64_t end_wall_ns = 0;
};

// Receives that found their message already waiting (posted late).
struct LateReceiver {
  std::string host, rank, local, remote, op;
  uint64_t bytes = 0, count = 0, imm = 0;
};

struct Skipped {
  std::string path;
  std::string why;  // one line: corrupt, truncated, foreign, unreadable
};

struct Job {
  std::vector<Rank> ranks;          // sorted by (host, numeric rank, pid)
  std::vector<LinkRow> links;       // every link row of every rank
  std::vector<NicRow> nics;
  std::vector<Stall> stalls;        // one per CQ with polls, worst first
  std::vector<LateReceiver> late;   // receive rows with imm > 0, worst share first
  std::vector<Skipped> skipped;     // files under DIR that could not be used
  // Totals.
  uint64_t ops = 0, bytes = 0, errors = 0, eagain = 0, untimed = 0, unfinished = 0;
  uint64_t ring_full = 0, ops_dropped = 0;
  uint64_t first_wall_ns = 0, last_wall_ns = 0;  // the job's span on the wall clock
  std::vector<std::string> hosts() const;
  std::vector<std::string> nic_names() const;  // distinct local NIC addresses
};

// Reads every fabtrace output under dir (recursively). Unusable files are
// listed in job.skipped with a reason, never fatal. Returns false only when
// dir itself cannot be read.
bool load_job(const std::string& dir, Job* job, std::string* error);

// The outlier threshold: a link row is an outlier when its p99 is at least this
// many times the median p99 of the rows with the same (op, size).
constexpr double kOutlierRatio = 3.0;

}  // namespace fabtrace::report
