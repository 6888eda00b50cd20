// The Perfetto trace of `fabtrace report` (native protobuf format, .pftrace;
// open it in ui.perfetto.dev or trace_processor).
//
// Content, all ranks on one wall-clock timeline (each rank's CLOCK_MONOTONIC
// times shifted by Rank::wall_offset_ns()):
//   - a process track per rank, "rank R (host)", with its pid;
//   - under it a track per link "local -> remote" with one slice per op of the
//     rank's per-op timeline (name = the op, args bytes and error). Ops of a
//     link that overlap in time go on child tracks "lane 2", "lane 3", ...
//     (greedy: the first lane whose last op ended at or before the op's start),
//     at most kPerfettoMaxLanes per link; an op finding no free lane then is
//     not drawn and is counted (PerfettoStats::overlap_dropped, and an instant
//     on the rank's track);
//   - the application's marks (include/fabtrace.h): a track "marks tid N" per
//     marking thread with its phases as slices and its marks as instants; the
//     timeline's capture changes as instants on the rank's track;
//   - instants: ops completed in error (on the op's lane, at its end), and the
//     long CQ poll gaps of the Job's stalls (max gap >= long_gap_ms, at the
//     gap's end) on a "CQ poll gaps" track;
//   - counter tracks "cxiN:counter" from the rank's counter CSV: per-second
//     rates for cumulative counters (every column except those whose name
//     contains "in_use", "max_" or "status", which are plotted as sampled);
//   - per node with a kernel log (fabtrace record), a "kernel (host)" process
//     track (perfetto_kernel.h): the traced threads' off-CPU intervals, the
//     CPUs' IRQs, network and cxi driver events; an explained stall's instant
//     carries its cause ("why") and the flows from the intervals behind it;
//   - a flow from each send to its receive where the per-op timelines matched
//     them (post_evidence.h; Job::waits.messages, at most kMaxMessages), in
//     a trace not split per rank (a flow does not cross files);
//   - in a trace not split per rank, who waited on whom (root_causes.h): a
//     track "waits (who waited on whom, and why)" per rank with a slice per
//     wait for a peer ("waiting for rank R (host)", its root and cause as
//     args) and an instant "root cause: CAUSE" at the end of each delay that
//     was the root of waits, a flow from each of those waits to it.
// Nothing is held per op: oplogs are streamed through a bounded reorder window.
//
// Files: <out_dir>/trace.pftrace; when that would pass max_file_bytes it is
// renamed trace.0.pftrace and the trace continues in trace.1.pftrace, ...;
// with split_per_rank, trace.r<rank>.pftrace per rank (trace.r<rank>.<N>.pftrace
// when one rank's part is too large) and trace.kernel.<host>.pftrace per node
// with a kernel log. Every file stands alone (its own clock snapshot, track
// descriptors and interned names). Per rank, a rank's track ids do not depend
// on the other ranks' files (its process tracks as in the single trace, the
// rest from (rank index + 1) << 32), so any process can write any rank's file
// and make the same bytes (fabtrace report --mpi --trace-per-rank).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "userspace/report/job.h"

namespace fabtrace::report {

struct PerfettoOptions {
  uint64_t max_file_bytes = 512ull << 20;
  double long_gap_ms = 10;
  bool split_per_rank = false;
  // split_per_rank only: the files of item i (the ranks in Job order, then the
  // nodes with a kernel log) are written only when mine(i) (unset: all), the
  // others being another process's (fabtrace report --mpi).
  std::function<bool(size_t item)> mine;
};

// Writes the trace of `job` under out_dir (created when missing). Unreadable
// oplog or counter files of a rank are skipped (that rank gets no slices /
// counters), not fatal. False, with *error set, when a file cannot be created
// or written; files_written then lists what was finished.
bool write_perfetto(const report::Job& job, const std::string& out_dir, const PerfettoOptions& opt,
                    std::vector<std::string>* files_written, std::string* error);

// ---- extras: what the trace holds and what it had to leave out.

// Most lanes (tracks) per link; ops overlapping more than this are counted, not drawn.
constexpr uint32_t kPerfettoMaxLanes = 64;
// Ops per rank held to reorder a rank's oplog (written in completion order) by
// start time before lanes are assigned.
constexpr size_t kPerfettoReorderWindow = 16384;

struct PerfettoStats {
  uint64_t ranks = 0;            // process tracks
  uint64_t link_tracks = 0;      // distinct (rank, link)
  uint64_t lane_tracks = 0;      // lanes beyond the first, over all links
  uint64_t slices = 0;           // ops drawn (one BEGIN + one END each)
  uint64_t error_instants = 0;   // ops completed in error
  uint64_t overlap_dropped = 0;  // ops not drawn: kPerfettoMaxLanes lanes of their link busy
  uint64_t late_ops = 0;         // ops starting before an op already laid out (outside the window);
                                 // drawn anyway when a lane was free
  uint64_t bad_times = 0;        // ops whose end preceded their start (drawn with zero length), or
                                 // whose times are beyond any clock (not drawn)
  uint64_t stall_instants = 0;   // long CQ poll gaps
  uint64_t wait_slices = 0;      // waits for a peer (root_causes.h)
  uint64_t root_instants = 0;    // delays that were the root of waits
  uint64_t wait_flows = 0;       // from a wait to its root's instant
  uint64_t marks = 0;            // the application's marks, phase ends and capture changes drawn
  uint64_t counter_tracks = 0;
  uint64_t counter_values = 0;
  uint64_t nic_tracks = 0;  // per-NIC bandwidth tracks (from the NIC time windows)
  uint64_t nic_values = 0;
  uint64_t kernel_tracks = 0;         // kernel tracks (threads' off-CPU, CPUs' IRQs, network, cxi)
  uint64_t kernel_slices = 0;         // off-CPU intervals, IRQs, driver work items
  uint64_t kernel_instants = 0;       // retransmits, drops, driver errors, faults, slow ops
  uint64_t kernel_flows = 0;          // intervals tied to the explained stall they caused
  uint32_t max_lanes = 0;             // most lanes any link needed
  std::vector<std::string> warnings;  // files skipped, one line each
  // split_per_rank: the item (see PerfettoOptions::mine) of each file written
  // and of each warning, so that several processes' lists merge in item order.
  std::vector<uint32_t> file_items, warning_items;
};

// What write_perfetto says on stderr after the trace: its warnings, ops with
// impossible times, ops not drawn.
void print_perfetto_notes(const PerfettoStats& stats);

// write_perfetto, also filling *stats (may be null).
bool write_perfetto_stats(const report::Job& job, const std::string& out_dir,
                          const PerfettoOptions& opt, std::vector<std::string>* files_written,
                          PerfettoStats* stats, std::string* error);

}  // namespace fabtrace::report
