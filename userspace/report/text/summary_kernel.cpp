// The kernel's part of the summary (fabtrace record's logs): why each stall
// happened, the slow ops with their causes, and one short section per node.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include "common/kernel_explain.h"
#include "common/op_kinds.h"
#include "common/printable.h"
#include "userspace/report/analysis/kernel_join.h"
#include "userspace/report/text/formats.h"
#include "userspace/report/text/summary.h"

namespace fabtrace::report {

namespace {

std::string op_label(uint32_t op) {
  return op < static_cast<uint32_t>(kOpKindCount) ? op_name(static_cast<OpKind>(op)) : "op?";
}

std::string load_line(const std::map<uint32_t, KernelLoad>& per_cpu, uint64_t span_ns) {
  std::string s;
  for (const auto& kv : per_cpu) {
    char b[96];
    std::snprintf(
        b, sizeof(b), "%scpu%u %s (%.2f%%)", s.empty() ? "" : ", ", kv.first,
        fmt_ns(static_cast<double>(kv.second.ns)).c_str(),
        span_ns ? 100.0 * static_cast<double>(kv.second.ns) / static_cast<double>(span_ns) : 0.0);
    s += b;
  }
  return s;
}

}  // namespace

std::string collector_line(const KernelNode& n) {
  const KernelStats& st = n.stats;
  if (!st.collector_wall_ns) return "";  // a log of a collector that did not say
  char b[160];
  std::snprintf(
      b, sizeof(b), "%.2f%% of a core over %s",
      100.0 * static_cast<double>(st.collector_cpu_ns) / static_cast<double>(st.collector_wall_ns),
      fmt_ns(static_cast<double>(st.collector_wall_ns)).c_str());
  std::string s =
      "    the collector (fabtrace record): " + fmt_ns(static_cast<double>(st.collector_cpu_ns)) +
      " CPU (" + b + ") for " + fmt_count(st.collector_events) + " events";
  if (!printable(st.collector_sched).empty()) s += ", " + printable(st.collector_sched);
  if (n.summed)
    s += "; it took or held a traced thread's CPU " + fmt_count(n.collector_took) + " times (" +
         fmt_ns(static_cast<double>(n.collector_held_ns)) + " held)";
  return s + "\n";
}

std::string kernel_summary(const Job& job, size_t top, const std::string& links_table) {
  if (job.kernel.empty()) return "";
  std::string s;
  // Slow ops, as the kernel explained them (longest first over every node).
  // A node's log has every traced process's slow ops, those of processes of
  // other jobs on the node too: only the job's ranks are listed, by rank.
  struct Slow {
    const KernelExplanation* w;
    const Rank* rank;
  };
  std::vector<Slow> slow;
  std::set<std::pair<std::string, uint32_t>> outside;  // (host, pid) not of the job
  size_t outside_ops = 0;
  std::map<std::pair<std::string, long>, const Rank*> ranks;  // by (host, pid)
  for (const Rank& r : job.ranks) ranks[{r.host(), r.pid()}] = &r;
  for (const KernelNode& n : job.kernel)
    for (const KernelExplanation& w : n.slow_ops) {
      const auto r = ranks.find({n.host, static_cast<long>(w.pid)});
      if (r != ranks.end()) {
        slow.push_back({&w, r->second});
      } else {
        ++outside_ops;
        outside.insert({n.host, w.pid});
      }
    }
  std::stable_sort(slow.begin(), slow.end(),
                   [](const Slow& a, const Slow& b) { return a.w->dur_ns() > b.w->dur_ns(); });
  if (!slow.empty() || outside_ops) {
    s += "slow ops (>= FABTRACE_SLOW_OP_US) and why, from the kernel\n";
    for (size_t i = 0; i < slow.size() && i < top; ++i) {
      const KernelExplanation& w = *slow[i].w;
      const Rank& r = *slow[i].rank;
      s += "  " + who(r.host(), r.rank(), r.pid()) + " tid " + std::to_string(w.tid) + "  " +
           op_label(w.op) + " " + fmt_size(w.bytes) + " " + short_addr(printable(w.local)) +
           " -> " + short_addr(printable(w.remote)) + "  " +
           fmt_ns(static_cast<double>(w.dur_ns())) + ": " + printable(w.verdict) + "\n";
    }
    if (outside_ops)
      s += "  (" + fmt_count(outside_ops) + " slow ops of " + fmt_count(outside.size()) +
           (outside.size() == 1 ? " process" : " processes") +
           " outside the job, traced on its nodes, not listed)\n";
  }
  s += "kernel (fabtrace record)\n";
  for (const KernelNode& n : job.kernel) {
    const uint64_t span = n.last_ns > n.first_ns ? n.last_ns - n.first_ns : 0;
    s += "  " + printable(n.host) + "  " + fmt_count(n.records) + " events over " +
         fmt_ns(static_cast<double>(span));
    if (n.stats.lost_total()) s += ", " + fmt_count(n.stats.lost_total()) + " lost (ring full)";
    if (n.stats.recursion_misses)
      s += ", " + fmt_count(n.stats.recursion_misses) + " program runs missed";
    s += "\n";
    // The raw events the log's bound left out: given way, never lost (the
    // loads below count them all).
    const uint64_t given = n.stats.given_way_total(), evicted = n.stats.evicted_total();
    const uint64_t short_irqs = n.stats.short_softirqs;
    if (given || evicted || short_irqs)
      s += "    raw events not in the log: " + fmt_count(given) +
           " outside the windows kept around stalls and slow ops" +
           (evicted ? ", " + fmt_count(evicted) + " dropped oldest first to stay within its bound"
                    : std::string()) +
           (short_irqs ? ", " + fmt_count(short_irqs) + " " + short_softirqs_what(n.meta)
                       : std::string()) +
           " (counted in the loads below)\n";
    s += collector_line(n);
    // What the session or this report did not keep: never silent.
    std::string dropped;
    const auto add = [&dropped](uint64_t k, const char* what) {
      if (k) dropped += (dropped.empty() ? "" : ", ") + fmt_count(k) + " " + what;
    };
    add(n.stats.usdt_over_budget, "probe records over their process's budget");
    add(n.stats.usdt_malformed, "probes with malformed arguments");
    add(n.stats.threads_full, "events of threads not tracked (the thread table full)");
    add(n.stats.threads_over_share, "events of threads not tracked over their process's share");
    add(n.malformed, "malformed records");
    add(n.stats.over_size, "records past the log's bound (--max-size)");
    add(n.over_bounds + n.conns_dropped, "records past the report's bounds");
    if (!dropped.empty()) s += "    not explained: " + dropped + "\n";
    std::string absent;
    for (const KernelAttach& a : n.meta.attach)
      if (a.state != "attached") absent += (absent.empty() ? "" : ", ") + printable(a.point);
    if (!absent.empty()) s += "    not attached: " + absent + "\n";
    if (!n.irq_per_cpu.empty())
      s += "    IRQ time taken from traced threads: " + load_line(n.irq_per_cpu, span) + "\n";
    if (!n.softirq_per_cpu.empty())
      s += "    softirq time taken from traced threads: " + load_line(n.softirq_per_cpu, span) +
           "\n";
    if (n.retrans || n.drops) {
      uint64_t traced = 0;
      for (const KernelConn& c : n.conns)
        if (c.owner) traced += c.retrans + c.drops;
      s += "    TCP: " + fmt_count(n.retrans) + " retransmitted segments, " + fmt_count(n.drops) +
           " dropped packets (" + fmt_count(traced) + " on traced connections; per link in " +
           links_table + ")\n";
    }
    if (n.cxi_errors || !n.cxi_work.empty()) {
      s += "    cxi driver: " + fmt_count(n.cxi_errors) + " errors (cass_err)";
      for (const auto& kv : n.cxi_work)
        s += ", " + printable(kv.first) + " work x" + fmt_count(kv.second.count) + " " +
             fmt_ns(static_cast<double>(kv.second.ns));
      s += "\n";
    }
  }
  size_t without = 0;
  for (const std::string& h : job.hosts())
    if (!kernel_node(job, h)) ++without;
  if (without)
    s += "  " + std::to_string(without) + (without == 1 ? " host" : " hosts") +
         " of the job had no kernel log (no fabtrace record there)\n";
  return s;
}

}  // namespace fabtrace::report
