// --polls: a thread's polls folded into runs, one per CQ, and handed to the
// kernel in batches (bpf/fabtrace_events.h: struct ft_poll_run). A probe hit
// costs about half a microsecond here against a poll's 20-50 ns, and a busy
// poller makes dozens of polls per message: one hit per poll took an shm
// ping-pong to four times its latency. A run ends at the poll that finds
// entries or an error, or once its empty polls have lasted FT_POLL_RUN_NS.
// Ended runs wait, and go FT_POLL_BATCH to a probe hit at an empty poll (the
// thread is waiting then anyway) once the batch is full or its oldest run has
// waited FT_POLL_RUN_NS. Nothing here is shared between threads: no lock, no
// atomic.
#pragma once

#include <cstdint>

#include "preload/probes.h"

namespace fabtrace {
namespace poll_runs {

// A poll of CQ#cq from `start` to `end` (ticks) returned n (entries, or
// -errno). Called only while a session asks for polls.
void poll_ended(uint32_t cq, int64_t n, uint64_t start, uint64_t end);

// The calling thread's runs, ended or not, handed over now: when it closes a
// CQ, and when the process exits on it (a thread's end does it by itself).
void flush_thread();

// Where ended runs go: the poll probe (probes::fire_poll_runs), or a test's
// own sink (nullptr: the probe again).
using Sink = void (*)(const probes::PollRun* runs, uint32_t n);
void set_sink(Sink sink);

// A forked child's copy of the forking thread's runs, dropped: they are the
// parent's polls.
void forget_thread();

}  // namespace poll_runs
}  // namespace fabtrace
