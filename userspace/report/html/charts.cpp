// The HTML report's charts: per-NIC achieved bandwidth bars and NIC counter
// series over time.
#include "userspace/report/html/sections.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "userspace/report/html/svg.h"
#include "userspace/report/text/formats.h"
#include "userspace/report/text/summary.h"

namespace fabtrace::report::html_page {

using svg::escape;

void section_bandwidth(const Job& job, Html* h) {
  h->h2("bandwidth", "NIC achieved bandwidth");
  if (job.nics.empty()) {
    h->note("No NIC statistics in the reports.");
    return;
  }
  h->note(
      "Bytes of completed sends, writes, reads and atomics divided by the time the NIC had at "
      "least "
      "one op in flight (overlapping ops count once), over the whole run; receives are left out. "
      "The slowest NIC is drawn in orange. The peak is the same figure over the NIC's fastest "
      "time window of at most 10 ms: its bytes over its busy time, so it is never below the "
      "whole-run figure. One slow op weighs on the whole-run figure, not on the peak unless it is "
      "in the same window.");
  std::vector<svg::Bar> bars;
  size_t slowest = 0;
  for (size_t i = 0; i < job.nics.size(); ++i)
    if (job.nics[i].nic.ops > 0 &&
        (job.nics[slowest].nic.ops == 0 || job.nics[i].nic.gbps < job.nics[slowest].nic.gbps))
      slowest = i;
  const size_t cap = 256;
  for (size_t i = 0; i < job.nics.size() && i < cap; ++i) {
    const NicRow& n = job.nics[i];
    svg::Bar b;
    b.label = who(n.host, n.rank, n.pid) + " " + n.nic.domain + " " + short_addrs(n.nic.locals, 1);
    if (b.label.size() > 56) b.label = b.label.substr(0, 53) + "...";
    b.value = n.nic.gbps;
    b.value_text = fmt_gbps(n.nic.gbps);
    if (n.nic.peak_gbps > 0) b.value_text += " (peak " + fmt_gbps(n.nic.peak_gbps) + ")";
    b.tooltip = n.host + " rank " + n.rank + " pid " + std::to_string(n.pid) + "\n" + n.nic.domain +
                " " + short_addrs(n.nic.locals, n.nic.locals.size()) + "\n" + fmt_count(n.nic.ops) +
                " ops, " + fmt_bytes(n.nic.bytes) + ", busy " + fmt_ns(n.nic.busy_ns);
    if (n.nic.peak_gbps > 0)
      b.tooltip += "\npeak " + fmt_gbps(n.nic.peak_gbps) + ": " + fmt_bytes(n.nic.peak_bytes) +
                   ", " + fmt_ns(n.nic.peak_busy_ns) + " busy in " + fmt_ns(n.nic.peak_span_ns) +
                   " at t+" + std::to_string(n.nic.peak_start_s) + " s";
    b.highlight = job.nics.size() > 1 && i == slowest && n.nic.ops > 0;
    bars.push_back(std::move(b));
  }
  h->raw(svg::bar_chart("bandwidth-bars", bars, 900));
  if (job.nics.size() > cap)
    h->note(std::to_string(job.nics.size() - cap) + " more NICs in nics.csv.");
}

void section_counters(const Job& job, const HtmlOptions& opt, Html* h) {
  h->h2("counters", "NIC counters over time");
  size_t with = 0;
  for (const Rank& r : job.ranks)
    if (!r.counters_path.empty()) ++with;
  if (!with) {
    h->note(
        "No NIC counter series (fabtrace_nic.*.csv): the nodes have no Cassini (cxi) NIC, or the "
        "sampler was off (FABTRACE_NIC=0).");
    return;
  }
  h->note(
      "The most active counters of each NIC (rates per second for cumulative counters, sampled "
      "values "
      "for levels), against seconds since the job's first activity.");
  size_t shown = 0;
  for (const Rank& r : job.ranks) {
    if (r.counters_path.empty()) continue;
    if (shown == opt.max_counter_ranks) {
      h->note(std::to_string(with - shown) + " more ranks have counters (see the Perfetto trace).");
      break;
    }
    ++shown;
    std::map<std::string, std::vector<const CounterTrack*>> by_dev;
    std::vector<std::string> devs;
    for (const CounterTrack& t : r.counter_tracks) {
      if (!by_dev.count(t.device)) devs.push_back(t.device);
      by_dev[t.device].push_back(&t);
    }
    if (devs.empty()) {
      h->raw("<h3>" + escape(who(r.host(), r.rank(), r.pid())) + "</h3>");
      h->note(fmt_count(r.counter_samples) + " samples; no counter changed.");
      continue;
    }
    for (const std::string& d : devs) {
      h->raw("<h3>" + escape(who(r.host(), r.rank(), r.pid()) + " " + d) +
             "</h3><div class=\"charts\">");
      for (const CounterTrack* t : by_dev[d]) {
        svg::LineChart c;
        c.title = t->name;
        c.width = 320;
        c.y_label = t->cumulative ? "per s" : "value";
        c.x_label = "s since job start";
        for (size_t i = 0; i < t->wall_ns.size() && i < t->values.size(); ++i) {
          c.x.push_back(job.first_wall_ns ? static_cast<double>(static_cast<int64_t>(
                                                t->wall_ns[i] - job.first_wall_ns)) /
                                                1e9
                                          : static_cast<double>(i));
          c.y.push_back(t->values[i]);
        }
        h->raw(svg::line_chart(c));
      }
      h->raw("</div>\n");
    }
  }
}

}  // namespace fabtrace::report::html_page
