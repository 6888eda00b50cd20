// The per-process report: what the preload measured, in plain values (ns,
// bytes, counts). Built by the preload at exit, written as text and JSON by
// report_writer, and read back by the userspace tools.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/input_limits.h"
#include "common/job_meta.h"
#include "common/report_format.h"

namespace fabtrace {

// An op row's outcomes other than its timed completions, in the report's
// order: X(member, its words in the text report); the JSON key is the member's
// name. The preload's cells (preload/stats.h) count them under the same names,
// and their merge, the text and JSON writers, both JSON readers and the job's
// byte form all take this list. (The CSV's columns are a contract of their own:
// userspace/report/tables.)
#define FABTRACE_OP_OUTCOMES(X)                                                           \
  X(errors, "err") /* completions in error (fi_cq_readerr, incl. cancelled) */            \
  /* accepted, not timed by design: no completion (inject, selective), context kept       \
   * (peek/claim, multi-recv, triggered); in version 1 reports also the ring_full ops */  \
  X(untimed, "untimed")                                                                   \
  X(ring_full, "ring full")   /* accepted, not timed: the in-flight ring had no record */ \
  X(unfinished, "unfinished") /* accepted, timed, never completed (CQ closed, or exit) */ \
  X(eagain, "EAGAIN")         /* refused at issue with -FI_EAGAIN */                      \
  X(refused, "refused")       /* refused at issue with another error */

// An op row's times (ns) and its rate, in the report's order: X(member), the
// JSON key its name.
#define FABTRACE_OP_TIMES(X) X(avg_ns) X(min_ns) X(max_ns) X(p50_ns) X(p99_ns) X(gbps)

// An op row's JSON keys, in the order the writer puts them (the readers look
// them up in this order), with version 1's "imm" before its later name.
#define FABTRACE_OP_KEY_NAME(m, words) #m,
#define FABTRACE_OP_TIME_KEY_NAME(m) #m,
inline constexpr std::string_view kOpRowKeys[] = {"op",
                                                  "bytes",
                                                  "size_unknown",
                                                  "count",
                                                  FABTRACE_OP_OUTCOMES(FABTRACE_OP_KEY_NAME) "imm",
                                                  "completed_within_50us",
                                                  FABTRACE_OP_TIMES(FABTRACE_OP_TIME_KEY_NAME)};
#undef FABTRACE_OP_KEY_NAME
#undef FABTRACE_OP_TIME_KEY_NAME

// The figures of one (op, size) of one link, without the op's name (a
// job's link table holds the name once per job: userspace/report/job/job.h).
struct OpStats {
  uint64_t bytes = 0;  // message size (received size for receives, unless size_unknown)
  uint64_t count = 0;  // timed successful completions
#define FABTRACE_OP_OUTCOME_MEMBER(m, words) uint64_t m = 0;
  FABTRACE_OP_OUTCOMES(FABTRACE_OP_OUTCOME_MEMBER)
#undef FABTRACE_OP_OUTCOME_MEMBER
  // Receives completed less than 50 us after they were posted: the message
  // was already waiting, or the receive was posted just in time on a fast
  // path; this count alone does not tell which (the job report's "posted
  // late" verdict comes from both ranks' per-op timelines).
  uint64_t within_50us = 0;
  // gbps: bytes / mean latency, per-op bandwidth (GB/s = bytes/ns)
#define FABTRACE_OP_TIME_MEMBER(m) double m = 0;
  FABTRACE_OP_TIMES(FABTRACE_OP_TIME_MEMBER)
#undef FABTRACE_OP_TIME_MEMBER
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
// One time bin of a NIC's activity (a "window" in the JSON): bin `index`
// starts index * window_ns after the rank's first fabric activity.
struct NicTimeBin {
  uint64_t index = 0;
  double busy_ns = 0;  // time in the bin with at least one op in flight
  uint64_t bytes = 0;  // bytes of the busy periods in it, spread over their time
};

// A NIC's whole-run figures, then its peak and what fell in no window, in the
// report's order: X(kind, member, JSON key), kind count (uint64_t) or real
// (double). The JSON writer and reader and the job's byte form take them.
#define FABTRACE_NIC_TOTALS(X)                                                      \
  X(count, ops, "ops") /* successful non-receive ops */                             \
  X(count, bytes, "bytes")                                                          \
  X(real, busy_ns, "busy_ns")     /* union of in-flight intervals, whole run */     \
  X(real, gbps, "achieved_gbps")  /* bytes / busy_ns: the whole run ("achieved") */ \
  X(real, window_ns, "window_ns") /* the width of the time windows (see windows) */
// The peak: the fastest time window of at most peak_limit_ns (10 ms), by the
// whole-run figure's basis: peak_gbps is its bytes over its busy time
// (peak_busy_ns), so peak_gbps >= gbps. Its activity lasted peak_span_ns (first
// issue to last completion in it), from peak_start_s (seconds after the first
// fabric activity). Where the periods in no window (unbinned) were faster
// still, they are the peak: peak_span_ns 0 (not placed in time). Unbinned:
// busy time and bytes in the whole-run figures but in no window nor stretch
// (periods a thread folded alone while another held the NIC's lock).
#define FABTRACE_NIC_PEAK(X)                    \
  X(real, peak_limit_ns, "peak_limit_ns")       \
  X(real, peak_gbps, "peak_gbps")               \
  X(real, peak_start_s, "peak_start_s")         \
  X(real, peak_span_ns, "peak_span_ns")         \
  X(count, peak_bytes, "peak_bytes")            \
  X(real, peak_busy_ns, "peak_busy_ns")         \
  X(real, unbinned_busy_ns, "unbinned_busy_ns") \
  X(count, unbinned_bytes, "unbinned_bytes")

namespace report_field {
using count = uint64_t;
using real = double;
}  // namespace report_field

// One per domain with any op (a domain that only received has ops == 0).
struct NicReport {
  std::string domain;               // domain name
  std::vector<std::string> locals;  // the addresses of its endpoints
#define FABTRACE_NIC_MEMBER(kind, m, key) report_field::kind m = 0;
  FABTRACE_NIC_TOTALS(FABTRACE_NIC_MEMBER)
  // Over time: the time bins with activity (JSON "windows"; bounded: at
  // most 4096; wider bins in long runs).
  std::vector<NicTimeBin> bins;
  FABTRACE_NIC_PEAK(FABTRACE_NIC_MEMBER)
#undef FABTRACE_NIC_MEMBER
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
