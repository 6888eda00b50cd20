// `fabtrace metrics`: the node's live view (live_view.h) in the Prometheus
// text format that node_exporter's textfile collector reads
// (https://prometheus.io/docs/instrumenting/exposition_formats/), named by
// Prometheus's conventions: fabtrace_ prefix, base units (seconds, bytes),
// _total for counters.
//
// Series (labels: jobid, rank, pid; link rows also local, remote, op):
//   fabtrace_processes                       gauge: traced processes listed
//   fabtrace_record_session                  gauge: 1 while a record session runs
//   fabtrace_process_info{..., comm}         gauge 1
//   fabtrace_snapshot_age_seconds            gauge
//   fabtrace_ops_total, fabtrace_bytes_total counters: successful completions
//   fabtrace_op_errors_total, fabtrace_op_eagain_total,
//   fabtrace_untimed_ops_total               counters
//   fabtrace_op_latency_seconds{quantile="0.5|0.9|0.99"}, _sum, _count  summary
//   fabtrace_cq_polls_total{cq}              counter
//   fabtrace_cq_gap_max_seconds{cq}          gauge: longest poll gap, whole run
//   fabtrace_cq_gap_interval_max_seconds{cq} gauge: longest in the last interval
//   fabtrace_cq_gaps_1ms_total{cq}           counter
//   fabtrace_stalls_total{cause}, fabtrace_slow_ops_total{cause}  counters,
//                                            while a record session runs
//
// Cardinality, per process: at most max_links link rows (the busiest; the rest
// summed into one row local="other" remote="other" op="other" without
// quantiles, 5 series), each 10 series; at most 64 CQs, 4 each; at most 10
// causes, 2 each; 2 more. With the default 16 links: at most 16*10 + 5 +
// 64*4 + 20 + 2 = 443 series per process (and 2 for the node), a few dozen
// for a typical rank.
#pragma once

#include <cstddef>
#include <string>

#include "userspace/live/live_view.h"

namespace fabtrace {
namespace live {

constexpr size_t kDefaultMetricsLinks = 16;

std::string metrics_text(const NodeView& v, size_t max_links);

// A label value escaped as the format wants (\\, \", \n).
std::string metric_label_value(const std::string& s);

}  // namespace live
}  // namespace fabtrace
