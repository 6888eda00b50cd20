// --uprobes: what the session reads out of bpf/uprobe_ops.bpf.c's maps at its
// end (uprobe_session.h): the rows the kernel paired, and the polled CQs, each
// as its kernel-log record (bpf/fabtrace_events.h).
#pragma once

#include <cstdint>

#include "bpf/uprobe_ops.h"
#include "common/kernel_log.h"

namespace fabtrace {

// What the kernel paired for one process's ops of one kind and size class on
// one link (endpoint, peer), or the process's polls row, summed over CPUs.
struct UprobeRow {
  uint32_t pid = 0;
  uint32_t op = 0;          // OpKind, or FT_UP_OP_POLLS
  uint64_t ep = 0;          // the application's endpoint (0 in the polls row)
  uint64_t peer = 0;        // the ops' fi_addr_t (FI_ADDR_UNSPEC: from any source)
  uint32_t size_class = 0;  // the ops' bytes (ft_up_size_class); 0 in the polls row
  bool posted = false;      // receives sized as posted (bpf/uprobe_ops.h, ft_up_stat_key)
  uint64_t pending = 0;
  uint64_t pending_bytes = 0;  // their bytes as posted
  ft_up_stats s{};

  // The row as the kernel log's FT_EV_UPROBE_OPS record, stamped `ts`.
  ft_uprobe_ops record(uint64_t ts) const {
    ft_uprobe_ops rec = log_record<ft_uprobe_ops>(FT_EV_UPROBE_OPS, ts, pid);
    rec.op = op;
    rec.size_class = static_cast<__u16>(size_class);
    rec.posted = posted ? 1 : 0;
    rec.pending = pending;
    rec.ep = ep;
    rec.peer = peer;
    rec.s = s;
    return rec;
  }
};

// One application CQ of a process, its polls and poll gaps
// (bpf/fabtrace_events.h, struct ft_uprobe_cq).
struct UprobeCq {
  uint32_t pid = 0;
  uint64_t cq = 0;
  uint64_t opened = 0;  // CLOCK_MONOTONIC ns of its open; 0: opened before the session
  uint64_t polls = 0;
  uint64_t gaps[FT_UP_GAP_CLASSES] = {};
  uint64_t max_gap_ns = 0, max_gap_end = 0;

  // As the kernel log's FT_EV_UPROBE_CQ record, stamped `ts`.
  ft_uprobe_cq record(uint64_t ts) const {
    ft_uprobe_cq rec = log_record<ft_uprobe_cq>(FT_EV_UPROBE_CQ, ts, pid);
    rec.cq = cq;
    rec.opened = opened;
    rec.polls = polls;
    for (int i = 0; i < FT_UP_GAP_CLASSES; ++i) rec.gaps[i] = gaps[i];
    rec.max_gap_ns = max_gap_ns;
    rec.max_gap_end = max_gap_end;
    return rec;
  }
};

}  // namespace fabtrace
