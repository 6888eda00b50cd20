// The statistics of the uprobe-assisted mode (`fabtrace record --uprobes`, one
// FT_EV_UPROBE_OPS record per process, op kind and link, bpf/fabtrace_events.h) read
// back: the op's name, quantiles of the log2 histogram, and the one-line form
// that `fabtrace record` prints and `fabtrace export kernel` shows.
#pragma once

#include <cstdint>
#include <string>

#include "bpf/fabtrace_events.h"

namespace fabtrace {

// "fi_tsend", ..., "cq_read" for the polls row, "op<N>" otherwise.
std::string uprobe_op_name(uint32_t op);

// Adds `from` into `into`: counts and histograms summed, min and max kept (a
// 0 minimum is "none"): one CPU's row into the total, one link's into another.
void add_uprobe_stats(ft_up_stats* into, const ft_up_stats& from);

// The log2 bucket of a latency: [2^i, 2^(i+1)) ns -> i (0 and 1 ns -> 0), the
// last bucket for everything above: bpf/uprobe_ops.h's ft_up_hist_bucket, which
// the BPF program runs.
uint32_t uprobe_hist_bucket(uint64_t ns);

// The upper edge (ns) of the bucket that holds quantile q (0 < q <= 1) of the
// histogram; 0 when it is empty. Within a factor of 2 of the true value.
uint64_t uprobe_hist_quantile(const ft_up_stats& s, double q);

// "ep=0x..;peer=..;calls=..;refused=..;eagain=..;completions=..;untimed=..;untimed_bytes=..;
// by_order=..;bytes=..;size_class=..;pending=..;
// unmatched=..;avg_ns=..;min_ns=..;max_ns=..;p50_le_ns=..;p99_le_ns=.." (the latencies only
// when something completed; peer "any" for FI_ADDR_UNSPEC); polls: "calls=..;entries=..;
// unmatched=..;unwalked=..;early=..;remote=..".
std::string uprobe_stats_detail(const ft_uprobe_ops& r);

// "cq=0x..;opened=..;polls=..;gaps0=..;...;gaps5=..;max_gap_ns=..;max_gap_end=.." (gap
// classes <10us <100us <1ms <10ms <100ms >=100ms; times CLOCK_MONOTONIC ns).
std::string uprobe_cq_detail(const ft_uprobe_cq& r);

}  // namespace fabtrace
