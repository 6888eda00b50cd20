// The kernel's tracks in the Perfetto trace: one process track per node with a
// kernel log, "kernel (host)", and under it
//   - per traced thread, "tid T comm (rank R) off CPU": a slice per off-CPU
//     interval named by its cause and the task that held the CPU meanwhile
//     ("preempted: stress-ng", "futex", "stopped"), instants for its slow ops
//     and page-fault bursts;
//   - per CPU, "cpuN IRQs" and "cpuN softirqs": the handlers that ran while a
//     traced thread had the CPU;
//   - "network": retransmits and drops with their connection;
//   - "cxi driver": the driver's errors and work items.
// The intervals inside the window of an explained stall carry a flow that ends
// at the stall's instant on the rank's "CQ poll gaps" track, so the UI draws
// an arrow from the cause to the stall. Streamed from the log file; memory is
// one entry per track.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "userspace/report/job/job.h"
#include "userspace/report/perfetto/writer.h"

namespace fabtrace::report {

struct KernelTraceStats {
  uint64_t tracks = 0, slices = 0, instants = 0, flows = 0;
};

struct KernelTraceContext {
  PerfettoWriter* w = nullptr;
  // Makes room for `bound` more bytes (may start the next file: the writer's
  // generation then changes and descriptors are written again).
  std::function<bool(size_t bound)> room;
  uint64_t* next_uuid = nullptr;
  int32_t pid = 0;          // of the node's process track (synthetic)
  int32_t order = 0;        // its sibling rank among process tracks
  int64_t wall_offset = 0;  // trace ns = CLOCK_MONOTONIC ns + wall_offset
};

// The flow id that ties an explained stall to its causes.
uint64_t stall_flow_id(const Stall& s);

// Writes node n's tracks. False only when the trace could not be written (the
// caller's error); an unreadable log adds a line to *warnings.
bool write_kernel_tracks(const KernelNode& n, const Job& job, KernelTraceContext& ctx,
                         KernelTraceStats* stats, std::vector<std::string>* warnings);

}  // namespace fabtrace::report
