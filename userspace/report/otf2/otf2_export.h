// The job as an OTF2 archive (`fabtrace report DIR --otf2`), for the HPC trace
// viewers (Vampir, Score-P's tools, otf2-print).
//
// OUTDIR/otf2/trace.otf2 (with trace.def and trace/), all from the ranks'
// files under DIR, streamed:
//   - system tree: the job, a node per host; a location group per rank;
//   - a location per traced thread ("tid N"): its ops as enter/leave of a
//     region per op kind ("fi_tsend", ...). Ops of one thread that overlap (in
//     flight together) cannot nest, so they go on further locations of the
//     same rank, "tid N lane 2", ... (the first lane free at the op's start),
//     at most kOtf2MaxLanes per thread; ops beyond are counted, not written;
//   - a location "tid N marks" per marking thread: the application's phases as
//     enter/leave of a region per phase name, its marks as zero-length regions,
//     and the capture window's changes ("timeline capture on/off") on "capture";
//   - with per-op timelines whose sends and receives were matched
//     (post_evidence.h), a location "messages" per rank: each matched message
//     as an MPI send (at its issue) and receive (at its completion) event with
//     its size, tag 0, on communicator 0 (every rank of the job, by index), so
//     that the viewers draw message lines;
//   - the Cassini counters of the rank's counter CSV as metrics (one member
//     per column, accumulated for cumulative counters, absolute for the
//     others) on a metric location "NIC counters".
// Clock: CLOCK_MONOTONIC ns of the job's first rank; other ranks are aligned
// on their (monotonic, wall) anchors, as everywhere in the report (ranks of one
// host share the clock). The clock properties carry the wall time of the
// global offset.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "userspace/report/job/job.h"

namespace fabtrace::report {

constexpr uint32_t kOtf2MaxLanes = 64;

struct Otf2Stats {
  uint64_t ranks = 0;
  uint64_t locations = 0;           // every kind
  uint64_t thread_locations = 0;    // "tid N" (lane 1 of a traced thread)
  uint64_t lane_locations = 0;      // lanes beyond the first
  uint64_t enters = 0, leaves = 0;  // of op regions
  uint64_t mark_events = 0;         // enters and leaves of marks and phases
  uint64_t metric_events = 0;
  uint64_t message_sends = 0, message_recvs = 0;  // matched messages (post_evidence.h)
  uint64_t overlap_dropped = 0;                   // ops beyond kOtf2MaxLanes lanes
  uint64_t bad_times = 0;                         // ops or marks without a time on any clock
  std::vector<std::string> warnings;
};

// Whether this build can write OTF2 (libopen-trace-format2-dev was found).
bool otf2_built();

// Writes out_dir/otf2/trace.otf2. False with *error when the archive cannot
// be written (or this build has no OTF2); unreadable inputs of a rank are
// warnings, not failures. *archive: the path of the anchor file.
bool write_otf2(const Job& job, const std::string& out_dir, std::string* archive, Otf2Stats* stats,
                std::string* error);

}  // namespace fabtrace::report
