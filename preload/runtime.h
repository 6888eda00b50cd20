// Process-wide state of the preload: settings read once from the environment,
// the in-flight ring, and the registry of wrapped objects (control path only).
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "common/job_meta.h"
#include "common/rank.h"
#include "preload/inflight.h"
#include "preload/objects.h"
#include "preload/outputs.h"
#include "sampler/cxi_counters.h"

namespace fabtrace {

struct Config {
  bool enabled = true;    // FABTRACE (0 = loaded but inert)
  std::string dir = ".";  // FABTRACE_DIR ("stderr" or "-": text report to stderr, no files)
  bool to_stderr = false;
  uint64_t inflight = 16384;   // FABTRACE_INFLIGHT: records in the ring
  bool cqgap = true;           // FABTRACE_CQGAP
  bool json = true;            // FABTRACE_JSON
  uint64_t stall_us = 1000;    // FABTRACE_STALL_US: poll gaps reported to a session
  uint64_t slow_op_us = 1000;  // FABTRACE_SLOW_OP_US: ops reported to a session
};

struct Runtime {
  Config cfg;
  InflightRing ring;
  RankId rank;
  int pid = 0;
  // The job, read once at the first fabric activity (common/job_meta.h).
  JobMeta job;

  // Thresholds in ticks, from the first calibration.
  uint64_t within_50us_ticks = 0;         // 50 us: receives completed sooner are counted
  uint64_t gap_edges[5] = {};             // 10us 100us 1ms 10ms 100ms
  uint64_t stall_ticks = UINT64_MAX;      // FABTRACE_STALL_US, for the cq_stall probe
  uint64_t gap_fast = 0;                  // min(gap_edges[0], stall_ticks): a poll's common case
  uint64_t slow_ticks = UINT64_MAX;       // FABTRACE_SLOW_OP_US, for the slow_op probe
  double ns_per_tick = 1.0;               // from the first calibration (probe arguments)
  uint64_t start_ticks = 0;               // first fabric activity
  uint32_t nic_bin_shift = 0;             // NIC time bins: 1 << shift ticks, about 10 ms
  uint64_t nic_peak_span = 0;             // NIC busiest stretch: at most 10 ms, in ticks
  bool timeline_on = false;               // per-op timeline on (at activation; a forked child: off)
  CounterSampler* nic_sampler = nullptr;  // Cassini counters, when this node has any

  // Registry of wrapped objects, for the report. Appended on the control path.
  std::mutex mu;
  std::vector<FabricWrap*> fabrics;
  std::vector<DomainWrap*> domains;
  std::vector<EpWrap*> eps;
  std::vector<CqWrap*> cqs;
  std::atomic<uint32_t> ncq_ids{0};
};

// The process's Runtime. Inline because every shim asks for it; created on
// first use (another library's constructor may reach a shim before ours ran),
// never destroyed (shims may run during exit, after static destructors).
extern std::atomic<Runtime*> g_runtime;
Runtime* create_runtime();
inline Runtime& runtime() {
  Runtime* r = g_runtime.load(std::memory_order_acquire);
  if (__builtin_expect(r == nullptr, 0)) r = create_runtime();
  return *r;
}

// This process's output of that kind, where the configuration puts it
// (preload/outputs.h); empty when no file is written.
inline std::string runtime_output_path(OutputKind kind) {
  const Runtime& rt = runtime();
  return output_path(kind, OutputPlace{rt.cfg.dir, rt.cfg.to_stderr, rt.rank.text});
}

// Reads the configuration (once). Returns cfg.enabled.
bool runtime_configure();
// runtime_activate(), which starts the rest: preload/activate.h.

// Writes this process's report (text + JSON). Called once at exit.
void write_report();

}  // namespace fabtrace
