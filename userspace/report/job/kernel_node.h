// The kernel logs of a job (`fabtrace record`, one per node), each read and
// reduced to what the report uses (analysis/kernel_join.h joins them with the
// ranks' outputs).
//
// What is kept of a log is bounded whatever its size or content: the longest
// stalls per (process, CQ) for at most kKernelStallKeys of them, the longest
// slow ops, the first op errors, network counts for kKernelConnections
// connections, interrupt load for kKernelCpus CPUs and kKernelIrqNames IRQ
// names, off-CPU time for kKernelCauses causes, the cxi driver's events (by
// class: a fixed set). A record whose key is past a bound is counted (KernelNode::
// over_bounds), one whose breakdown or error code is malformed too (malformed):
// neither is kept. The off-CPU intervals and IRQs themselves stay in the file:
// the Perfetto trace streams them from it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/kernel_log.h"

namespace fabtrace::report {

// Bounds of what load_kernel_node keeps.
constexpr size_t kKernelStallsPerCq = 16;
constexpr size_t kKernelSlowOps = 64;
constexpr size_t kKernelOpErrors = 64;
constexpr size_t kKernelConnections = 4096;
constexpr size_t kKernelStallKeys = 4096;  // (process, CQ) pairs
constexpr size_t kKernelCpus = 4096;
constexpr size_t kKernelIrqNames = 1024;
constexpr size_t kKernelCauses = 1024;  // off-CPU causes (one per syscall blocked in)

// A stall, slow op or op error as the kernel explained it.
struct KernelExplanation {
  uint16_t kind = 0;  // FT_EV_STALL, FT_EV_SLOW_OP, FT_EV_OP_ERROR
  uint32_t pid = 0, tid = 0, cpu = 0;
  uint64_t cq = 0;  // stalls: the CQ's index in the rank's report
  // ops:
  uint32_t op = 0;
  uint64_t bytes = 0;
  int32_t err = 0;
  std::string local, remote;
  ft_breakdown w{};
  std::string verdict;  // breakdown_verdict(w)
  uint64_t dur_ns() const { return w.end > w.start ? w.end - w.start : 0; }
};

// Retransmits and drops of one connection (local side first), by its owner.
struct KernelConn {
  ft_tuple t{};
  uint32_t owner = 0;  // traced tgid owning the socket, 0 when unknown
  uint64_t retrans = 0, drops = 0;
  uint64_t first_ns = 0, last_ns = 0;
};

struct KernelLoad {
  uint64_t ns = 0, count = 0;
};

// One node's log, reduced.
struct KernelNode {
  std::string host, path;
  KernelLogMeta meta;
  KernelStats stats;
  bool truncated = false, ended = false;
  uint64_t records = 0, bad_records = 0;
  uint64_t first_ns = 0, last_ns = 0;       // the events' span (CLOCK_MONOTONIC)
  std::vector<KernelExplanation> stalls;    // longest first
  std::vector<KernelExplanation> slow_ops;  // longest first
  std::vector<KernelExplanation> op_errors;
  std::vector<KernelConn> conns;  // busiest first
  uint64_t conns_dropped = 0;     // connections past kKernelConnections (their events counted here)
  uint64_t over_bounds = 0;  // records of a (process, CQ), CPU, IRQ name or cause past the bounds
  uint64_t malformed = 0;    // breakdowns or error codes out of range (kernel_explain.h): not kept
  uint64_t retrans = 0, drops = 0;                              // every one, attributed or not
  std::map<uint32_t, KernelLoad> irq_per_cpu, softirq_per_cpu;  // taken from traced threads
  std::map<std::string, KernelLoad> irq_by_name;                // hard IRQs
  std::map<std::string, KernelLoad> offcpu_by_cause;            // every traced thread
  uint64_t faults = 0;
  uint64_t cxi_errors = 0;
  std::map<std::string, KernelLoad> cxi_work;  // by work class
  std::vector<KernelTask> tasks;
  // The loads above come from the collector's sums of the raw events
  // (FT_EV_SUMMARY; a log that has them says so in its options): whatever raw
  // records the log's bound left, the loads count every event.
  bool summed = false;
  // The collector's own effect on the traced threads (from the sums): the
  // off-CPU intervals in which it took or held their CPU, and how long it held it.
  uint64_t collector_took = 0, collector_held_ns = 0;
};

// Reads and reduces one kernel log. False with one line in *why when it cannot
// be used at all (a cut-short log is used: truncated says so).
bool load_kernel_node(const std::string& path, KernelNode* node, std::string* why);

}  // namespace fabtrace::report
