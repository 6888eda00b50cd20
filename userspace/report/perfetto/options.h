// What the Perfetto trace (perfetto_trace.h) is asked to do, and what it
// tells back: its options and its statistics, apart from the writer's entry
// points so that the trace's builder (builder.h) takes them without them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

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

}  // namespace fabtrace::report
