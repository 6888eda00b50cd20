// --uprobes: a process's kernel-side rows (bpf_session.h, UprobeRow) as the
// per-rank report the preload writes (common/report_model.h), so that
// `fabtrace report DIR` reads a process that ran without the preload as it
// reads the others. Marked uprobe-derived (source "uprobes").
//
// What the kernel knows is less than the preload: the rows are per process and
// op kind, not per peer and size, so the process has one link (local "pid N",
// remote "(any)") and each op kind one row whose size is the mean of its paired
// ops; no NIC, CQ gap or clock figures.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/report_model.h"
#include "userspace/record/bpf_session.h"

namespace fabtrace {

// Where and when: the session's start on both clocks and its length.
struct UprobeReportContext {
  std::string host;
  std::string rank;  // from the process's environment; "NA" when none
  uint64_t start_mono_ns = 0, start_wall_ns = 0;
  double duration_s = 0;
};

// The report of process `pid` from `rows` (every process's; the polls row and
// other processes are left out). Empty links when the process has no op row.
ProcessReport uprobe_process_report(uint32_t pid, const std::vector<UprobeRow>& rows,
                                    const UprobeReportContext& ctx);

}  // namespace fabtrace
