// What a kernel log record means, in words: the one-line verdict on a stall or
// slow-op window ("preempted by stress-ng[4312] for 48.1 of 50.2 ms"), and the
// labels of off-CPU causes. Shared by `fabtrace export kernel` and the report, so
// that both say the same thing about the same record.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bpf/fabtrace_events.h"

namespace fabtrace {

// The parts of a stall's or slow op's breakdown (ft_breakdown: its window
// [start, end] split by what the thread went through), in the order they
// are listed.
struct BreakdownPart {
  const char* name;  // "on-cpu", "runnable", "futex", "sleep", "nanosleep", "disk", "stopped",
                     // "other", "irq", "softirq"
  uint64_t ns;
};
// Every part of the breakdown (IRQ and softirq time are inside on-cpu).
std::vector<BreakdownPart> breakdown_parts(const ft_breakdown& w);

// A breakdown the kernel could have made: its window not reversed, and no
// part longer than the window (the parts before IRQs adding up to it at most).
// Anything else (a crafted log, a probe whose arguments were never checked)
// is malformed: counted, never explained.
bool breakdown_valid(const ft_breakdown& w);
// An op_error record's code is one (1 .. FT_MAX_ERR).
inline bool op_error_valid(int32_t err) { return err > 0 && err <= FT_MAX_ERR; }
constexpr const char* kMalformedBreakdown = "malformed window (not explained)";

// The cause that took most of the window, with its length against the window's
// (kMalformedBreakdown for one that is not breakdown_valid):
//   "preempted by stress-ng[4312] for 48.1 of 50.2 ms"
//   "stopped (SIGSTOP or a debugger) for 200.0 of 200.4 ms"
//   "blocked in futex for 9.8 of 10.0 ms", "in uninterruptible sleep (I/O) for ..."
//   "on CPU for 49.9 of 50.0 ms (running, not polling)"
// A thread blocked in a sleeping syscall is named by it, with what it waited on
// where the kernel told ("blocked in read (pipe) for 200.0 of 200.1 ms");
// then what else stands out ("; 120 page faults", "; IRQs 3.1 ms"), and a note
// when the kernel's history did not cover the whole window. A page-fault count
// that is not exact says so: "at least N" (the history did not reach the
// window's start: the faults it holds for certain), "about N" (a burst over an
// edge of the window prorated by time).
std::string breakdown_verdict(const ft_breakdown& w);

// The class of the cause that took most of the window, one word of a fixed
// set (a metric's label: cardinality 10): "preempted", "stopped", "futex",
// "nanosleep", "sleep" (another sleeping syscall), "disk", "other", "on-cpu",
// "interrupts", and "malformed" for a breakdown that is not breakdown_valid.
const char* breakdown_cause(const ft_breakdown& w);

// The window's page faults as the verdict words them ("131072 page faults",
// "at least ...", "about ..."), and as a word for tables: "exact", "at_least",
// "about".
std::string page_faults_text(const ft_breakdown& w);
const char* faults_bound(const ft_breakdown& w);

// "pipe", "socket", "file", "character device", "other file"; "" for
// FT_ON_NONE (enum ft_wait_on).
std::string wait_on_name(uint32_t on);

// The segments a retransmit record stands for: one skb sent again can carry
// several (TSO), and the kernel's RetransSegs counts segments; a log from
// before the field says 0: one record, one segment.
inline uint32_t retrans_segments(const ft_net& r) { return r.segs ? r.segs : 1; }

// "futex", "nanosleep", "epoll_wait", ... for the x86_64 syscall numbers a blocked
// thread is commonly in; "syscall N" otherwise, "" for -1.
std::string syscall_name(int32_t nr);

// The cause of one off-CPU interval: "preempted", "futex", "sleep:epoll_wait",
// "sleep:read(pipe)", "disk", "stopped", "other".
std::string offcpu_cause(const ft_offcpu& r);

// Softirq vector names (HI, TIMER, NET_TX, NET_RX, BLOCK, IRQ_POLL, TASKLET, SCHED,
// HRTIMER, RCU).
const char* softirq_name(uint32_t vec);

// "1.234 ms", "56.7 us", "890 ns".
std::string human_ns(uint64_t ns);

}  // namespace fabtrace
