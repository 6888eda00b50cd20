// The slowest individual ops of a job, from the ranks' per-op timelines, and
// what each timeline covers (its capture window and marks).
//
// One streaming pass over every oplog: a bounded min-heap of the N longest
// ops per rank and per class (receives apart: their time includes waiting
// for the sender), merged into the job's N; memory is O(N) per rank, however
// many ops the files hold. Each op is compared with the p50 of its row (the
// rank's link x op x size row of its report).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "userspace/report/job/job.h"

namespace fabtrace::report {

struct SlowOp {
  std::string host, rank;
  long pid = 0;
  uint32_t tid = 0;
  std::string local, remote, op;
  uint64_t bytes = 0;
  bool size_unknown = false;
  bool error = false;
  int64_t start_mono_ns = 0;  // the rank's CLOCK_MONOTONIC
  int64_t start_wall_ns = 0;  // aligned like every other time of the report (the trace's clock)
  double start_job_s = 0;     // seconds since the job's first activity
  double dur_ns = 0;
  double row_p50_ns = 0;  // 0: no row with completions found
  double ratio = 0;       // dur_ns / row_p50_ns, 0 without a p50
};

// A rank's timeline: what it was asked to capture and what it did.
struct TimelineCover {
  std::string host, rank;
  long pid = 0;
  std::string spec;    // FABTRACE_OPS_WINDOW ("" = the whole run)
  std::string signal;  // the toggle signal, or why there is none
  // Captured spans (wall ns, job-aligned); to = 0: to the end of the rank's run.
  struct Span {
    int64_t from = 0, to = 0;
  };
  std::vector<Span> spans;
  bool whole = true;  // no window and no capture change: the whole run
  uint64_t ops = 0, marks = 0, outside = 0;
};

struct SlowestOps {
  size_t n = 10;
  std::vector<SlowOp> ops;            // sends, writes, reads, atomics: slowest first
  std::vector<SlowOp> recvs;          // receives: slowest first
  std::vector<TimelineCover> covers;  // one per rank with a per-op timeline
  uint64_t ops_seen = 0;              // ops read from the timelines
  uint64_t first_wall_ns = 0;         // the job's first activity (Job::first_wall_ns)
  std::vector<std::string> warnings;  // files skipped or cut short, one line each
};

// The pass over every rank's oplog: finish_slowest(job, n, slowest_part(job,
// every rank, n)).
SlowestOps find_slowest_ops(const Job& job, size_t n);

// The pass over some ranks (`fabtrace report --mpi`: each process reads its
// share of the oplogs), before the parts are merged. ops and recvs are the
// part's n longest under slower_op() (a total order: the n longest of a union
// are the n longest of its parts' n longest, however the ranks were split);
// their p50 is not looked up yet (the link rows are where the parts meet).
struct SlowestPart {
  std::vector<SlowOp> ops, recvs;
  std::vector<std::pair<uint32_t, TimelineCover>> covers;  // with the index in Job::ranks
  std::vector<std::pair<uint32_t, std::string>> warnings;  // idem, in each rank's order
  uint64_t ops_seen = 0;
};
SlowestPart slowest_part(const Job& job, const std::vector<uint32_t>& ranks, size_t n);
// Adds `from` to *into, keeping the n longest.
void merge_slowest_parts(SlowestPart* into, SlowestPart from, size_t n);
// The job's SlowestOps from the merge of every rank's part: covers and
// warnings in rank order, each op's row p50 and ratio from job.links.
SlowestOps finish_slowest(const Job& job, size_t n, SlowestPart all);
// Slower first; ops of equal length by every field printed, so that ops left
// in the same place by it are indistinguishable in every output.
bool slower_op(const SlowOp& a, const SlowOp& b);

// The byte form of a part (slowest_ops_codec.cpp), between MPI processes.
void encode_slowest_part(const SlowestPart& p, std::string* out);
bool decode_slowest_part(const char* bytes, size_t size, size_t* pos, SlowestPart* p);

// ---- outputs (slowest_ops_out.cpp)

// The summary's lines ("" when no rank has a per-op timeline).
std::string slowest_ops_text(const SlowestOps& s, size_t top_cover);
// The HTML report's section (<h2 id="slowest">, a table per class; each op
// links to its place in the Perfetto trace by time).
std::string slowest_ops_html(const SlowestOps& s);
// OUTDIR/slowest_ops.csv: both classes, with a "class" column.
bool write_slowest_ops_csv(const SlowestOps& s, const std::string& path, std::string* error);
// The ui.perfetto.dev address showing [start - margin, end + margin] of the
// trace and selecting the op's slice (its deep-link parameters).
std::string perfetto_link(int64_t start_wall_ns, double dur_ns);

}  // namespace fabtrace::report
