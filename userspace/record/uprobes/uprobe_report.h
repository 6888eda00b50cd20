// --uprobes: a process's kernel-side rows (uprobe_rows.h, UprobeRow) as the
// per-rank report the preload writes (common/report_model.h), so that
// `fabtrace report DIR` reads a process that ran without the preload as it
// reads the others. Marked uprobe-derived (source "uprobes").
//
// One link per (endpoint, peer) the process's ops named, labelled as the
// preload labels it (uprobe_names.h): local = the endpoint's address, remote =
// the peer's ("(any)" for receives from any source; a connected endpoint's one
// peer for all its ops); the fallbacks "pid N ep 0x..." and "fi_addr#N"
// ("(connected)") where the session did not see the endpoint named or the
// address inserted (connected). Rows of one op kind and size class whose
// links carry the same labels are one row. Within a link, each op kind has a
// row per size class (powers of two, bpf/uprobe_ops.h's ft_up_size_class)
// whose size is the mean of its ops, paired or pending: the size itself
// wherever the class holds one (the preload keeps one row per exact size).
// Receives are sized as they arrived (their CQ entry's len), as the preload
// sizes them; as posted (size_unknown) where the CQ's format has no length,
// and while pending, refused or untimed. Its CQs (those it polled) with their
// polls, gap classes and longest gap, as the preload's CQ rows; numbered in
// the order they were opened (those opened before the session after, by
// address). No NIC or clock figures.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/report_model.h"
#include "userspace/record/uprobes/uprobe_names.h"
#include "userspace/record/uprobes/uprobe_rows.h"

namespace fabtrace {

// Where and when: the session's start on both clocks and its length.
struct UprobeReportContext {
  std::string host;
  std::string rank;  // from the process's environment; "NA" when none
  uint64_t start_mono_ns = 0, start_wall_ns = 0;
  double duration_s = 0;
};

// The report of process `pid` from `rows` and `cqs` (every process's; the
// polls row and other processes are left out), its links named from `names`.
// Empty links when the process has no op row.
ProcessReport uprobe_process_report(uint32_t pid, const std::vector<UprobeRow>& rows,
                                    const UprobeNames& names, const UprobeReportContext& ctx,
                                    const std::vector<UprobeCq>& cqs = {});

}  // namespace fabtrace
