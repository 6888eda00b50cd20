// The per-process report: what the preload measured, in plain values (ns,
// bytes, counts). Built by the preload at exit, written as text and JSON by
// report_writer, and read back by the userspace tools.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/input_limits.h"
#include "common/job_meta.h"
#include "common/report_format.h"

namespace fabtrace {

// The figures of one (op, size) of one link, without the op's name (a
// job's link table holds the name once per job: userspace/report/job.h).
struct OpStats {
  uint64_t bytes = 0;   // message size (received size for receives, unless size_unknown)
  uint64_t count = 0;   // timed successful completions
  uint64_t errors = 0;  // completions in error (fi_cq_readerr, incl. cancelled)
  // Accepted, not timed by design: no completion (inject, selective), context
  // kept (peek/claim, multi-recv, triggered). In version 1 reports it also
  // held the ring_full ops.
  uint64_t untimed = 0;
  uint64_t ring_full = 0;  // accepted, not timed: the in-flight ring had no free record
  uint64_t unfinished =
      0;                 // accepted, timed, never completed (CQ closed or still in flight at exit)
  uint64_t eagain = 0;   // refused at issue with -FI_EAGAIN
  uint64_t refused = 0;  // refused at issue with another error
  // Receives completed less than 50 us after they were posted: the message
  // was already waiting, or the receive was posted just in time on a fast
  // path; this count alone does not tell which (the job report's "posted
  // late" verdict comes from both ranks' per-op timelines).
  uint64_t within_50us = 0;
  double avg_ns = 0, min_ns = 0, max_ns = 0, p50_ns = 0, p99_ns = 0;
  double gbps = 0;  // bytes / mean latency: per-op bandwidth (GB/s = bytes/ns)
  // A receive row whose completions carried no length (the provider's CQ had
  // no length field): bytes is the posted buffer size, and gbps is 0.
  bool size_unknown = false;
  bool recv = false;  // the flags last: no padding between the numbers
  uint64_t issued() const {
    return sat_add(sat_add(sat_add(count, errors), sat_add(untimed, ring_full)), unfinished);
  }
};

// One (op, size) of one link.
struct OpRow : OpStats {
  std::string op;  // "fi_tsend"
};

struct LinkReport {
  std::string local;   // local NIC / endpoint address
  std::string remote;  // peer address, "(any)" for receives from any source
  std::vector<OpRow> rows;
};

// One NIC (libfabric domain): concurrency-aware achieved bandwidth.
// One time window of a NIC's activity: window `index` starts index *
// window_ns after the rank's first fabric activity.
struct NicWindow {
  uint64_t index = 0;
  double busy_ns = 0;  // time in the window with at least one op in flight
  uint64_t bytes = 0;  // bytes of the busy periods in it, spread over their time
};

// One per domain with any op (a domain that only received has ops == 0).
struct NicReport {
  std::string domain;               // domain name
  std::vector<std::string> locals;  // the addresses of its endpoints
  uint64_t ops = 0;                 // successful non-receive ops
  uint64_t bytes = 0;
  double busy_ns = 0;  // union of in-flight intervals, whole run
  double gbps = 0;     // bytes / busy_ns: the whole run ("achieved")
  // Over time: the windows with activity (bounded: at most 4096; wider
  // windows in long runs).
  double window_ns = 0;
  std::vector<NicWindow> windows;
  // The peak: the fastest time window of at most peak_limit_ns (10 ms), by
  // the whole-run figure's basis: peak_gbps is its bytes over its busy time
  // (peak_busy_ns), so peak_gbps >= gbps. Its activity lasted peak_span_ns
  // (first issue to last completion in it), from peak_start_s. Where the
  // periods in no window (unbinned) were faster still, they are the peak:
  // peak_span_ns 0 (not placed in time).
  double peak_limit_ns = 0;
  double peak_gbps = 0;
  double peak_start_s = 0;  // seconds after the first fabric activity
  double peak_span_ns = 0;
  uint64_t peak_bytes = 0;
  double peak_busy_ns = 0;
  // Busy time and bytes in the whole-run figures but in no window nor
  // stretch (periods a thread folded alone while another held the NIC's lock).
  double unbinned_busy_ns = 0;
  uint64_t unbinned_bytes = 0;
};

struct CqReport {
  uint32_t id = 0;
  uint64_t polls = 0;
  uint64_t gaps[kGapClasses] = {};  // <10us <100us <1ms <10ms <100ms >=100ms
  double max_gap_ns = 0;
  double max_gap_end_s = 0;  // seconds since the first fabric activity
};

struct ProcessReport {
  // The fabtrace that wrote the report: the writer puts its own (common/
  // version.h) when this is empty; the reader fills it ("" before version 3).
  std::string fabtrace_version;
  JobMeta job;
  std::string host;
  std::string rank;  // as the launcher set it, "NA" when none
  long pid = 0;
  std::string providers;  // provider names, comma separated
  // Who measured it: "" the preload; "uprobes" `fabtrace record --uprobes`
  // for a process without the preload (userspace/record/uprobes/uprobe_report.h).
  std::string source;
  uint64_t start_mono_ns = 0;  // first fabric activity, CLOCK_MONOTONIC
  uint64_t start_wall_ns = 0;  // the same instant, CLOCK_REALTIME
  double duration_s = 0;       // first fabric activity -> report
  bool tsc = false;
  double ns_per_tick = 1.0;
  double clock_residual_ns = 0;  // largest |fit - CLOCK_MONOTONIC| over the fitted pairs
  uint64_t clock_pairs = 0;
  uint64_t ring_slots = 0;
  uint64_t ring_full = 0;   // ops not timed because every probed record was busy
  uint64_t cells_full = 0;  // ops not aggregated: row table at its limit
  std::vector<NicReport> nics;
  std::vector<CqReport> cqs;
  std::vector<LinkReport> links;
};

}  // namespace fabtrace
