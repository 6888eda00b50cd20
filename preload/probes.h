// USDT probes for the node-wide session (`fabtrace record`): the points where
// the preload knows something the kernel can explain. Layouts of the arguments:
// bpf/fabtrace_events.h ("USDT probe arguments"); the BPF side: bpf/probes.bpf.c.
//
// Every probe has a semaphore, which the kernel raises while a session has the
// probe attached. Unattached (the normal case), a probe site costs one load and
// one predictable branch, and no argument is prepared: the fire_* functions run
// only behind `if (probes::on(...))`. They are out of line (probes.cpp) so that
// the probe notes live in one translation unit with the semaphores.
#pragma once

#include <cstdint>

#include "bpf/fabtrace_events.h"
#include "preload/inflight.h"
#include "preload/probe_list.h"

extern "C" {
FT_USDT_PROBES(FT_USDT_SEMAPHORE_DECLARE)
}

namespace fabtrace {
namespace probes {

inline bool thread_start_on() { return __builtin_expect(fabtrace_thread_start_semaphore, 0); }
inline bool cq_stall_on() { return __builtin_expect(fabtrace_cq_stall_semaphore, 0); }
inline bool slow_op_on() { return __builtin_expect(fabtrace_slow_op_semaphore, 0); }
inline bool op_error_on() { return __builtin_expect(fabtrace_op_error_semaphore, 0); }
inline bool polls_on() { return __builtin_expect(fabtrace_poll_semaphore, 0); }
inline bool mark_on() { return __builtin_expect(fabtrace_mark_semaphore, 0); }
inline bool phase_begin_on() { return __builtin_expect(fabtrace_phase_begin_semaphore, 0); }
inline bool phase_end_on() { return __builtin_expect(fabtrace_phase_end_semaphore, 0); }
// A session is attached to this process (it then samples the node's NIC counters
// itself, so the preload does not).
inline bool session_attached() { return thread_start_on(); }

// What the probes' arguments need from the runtime, handed over once it knows
// them (runtime_activate): the tick rate of the first calibration and the
// rank's text (kept by pointer: the runtime's, alive for the process). Until
// then a probe passes an empty rank and 1 ns per tick.
void configure(double ns_per_tick, const char* rank);

// The calling thread's first fabric activity.
void fire_thread_start();
// A poll of CQ#cq ended a gap [start, end] (ticks) above the stall threshold.
void fire_cq_stall(uint32_t cq, uint64_t start_ticks, uint64_t end_ticks);
// An op completed (at `now`, ticks) slower than the slow-op threshold.
void fire_slow_op(const OpRecord* rec, uint64_t bytes, uint64_t now);
// An op completed in error; err is the provider's (positive) error code.
void fire_op_error(const OpRecord* rec, uint64_t now, int err);
// The application's phase marks (include/fabtrace.h): name is its string.
void fire_mark(const char* name);
void fire_phase_begin(const char* name);
void fire_phase_end();
// --polls (preload/poll_runs.h): runs of a thread's polls, in ticks; handed
// over `n` (1 to kPollBatch) in one probe hit, converted to CLOCK_MONOTONIC.
struct PollRun {
  uint32_t cq;
  uint32_t polls;  // 0: no run
  int64_t ret;     // what its last poll returned
  uint64_t start;  // its first poll's start
  uint64_t end;    // its last poll's end
  uint64_t busy;   // inside its polls
};
constexpr uint32_t kPollBatch = FT_POLL_BATCH;
void fire_poll_runs(const PollRun* runs, uint32_t n);
// FT_POLL_RUN_NS in ticks: where a run of empty polls ends.
uint64_t poll_run_ticks();

}  // namespace probes
}  // namespace fabtrace
