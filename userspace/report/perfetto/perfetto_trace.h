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
//     track (perfetto/kernel.h): the traced threads' off-CPU intervals, the
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

#include "userspace/report/job/job.h"
#include "userspace/report/perfetto/options.h"

namespace fabtrace::report {

// Writes the trace of `job` under out_dir (created when missing). Unreadable
// oplog or counter files of a rank are skipped (that rank gets no slices /
// counters), not fatal. False, with *error set, when a file cannot be created
// or written; files_written then lists what was finished.
bool write_perfetto(const report::Job& job, const std::string& out_dir, const PerfettoOptions& opt,
                    std::vector<std::string>* files_written, std::string* error);

// What write_perfetto says on stderr after the trace: its warnings, ops with
// impossible times, ops not drawn.
void print_perfetto_notes(const PerfettoStats& stats);

// write_perfetto, also filling *stats (may be null).
bool write_perfetto_stats(const report::Job& job, const std::string& out_dir,
                          const PerfettoOptions& opt, std::vector<std::string>* files_written,
                          PerfettoStats* stats, std::string* error);

}  // namespace fabtrace::report
