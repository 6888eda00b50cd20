// The HTML report's CQ poll-gap table, and why the longest gaps happened
// (from the nodes' kernel logs).
#include "userspace/report/html/sections.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "common/kernel_explain.h"
#include "userspace/report/analysis/kernel_join.h"
#include "userspace/report/text/formats.h"
#include "userspace/report/text/summary.h"

namespace fabtrace::report::html_page {

using svg::escape;

namespace {

// The parts of a stall's breakdown drawn in its bar, in order, with their colours.
struct WhyPart {
  const char* label;
  const char* color;
  uint64_t (*ns)(const ft_breakdown&);
};
const WhyPart kWhyParts[] = {
    {"on CPU", "#4c78a8",
     [](const ft_breakdown& w) -> uint64_t {
       const uint64_t irq = w.irq_ns + w.softirq_ns;
       return w.on_cpu_ns > irq ? w.on_cpu_ns - irq : 0;
     }},
    {"runnable (another task ran)", "#f58518",
     [](const ft_breakdown& w) -> uint64_t { return w.runnable_ns; }},
    {"blocked (futex, sleep, I/O)", "#54a24b",
     [](const ft_breakdown& w) -> uint64_t {
       return w.futex_ns + w.sleep_ns + w.nanosleep_ns + w.disk_ns + w.other_ns;
     }},
    {"stopped", "#e45756", [](const ft_breakdown& w) -> uint64_t { return w.stopped_ns; }},
    {"IRQ / softirq", "#b279a2",
     [](const ft_breakdown& w) -> uint64_t { return w.irq_ns + w.softirq_ns; }},
};

std::string why_bar(const ft_breakdown& w) {
  const double len = w.end > w.start ? static_cast<double>(w.end - w.start) : 0;
  const double width = 220;
  std::string s = "<svg class=\"why-bar\" width=\"" + fixed(width, 0) +
                  "\" height=\"12\" role=\"img\" xmlns=\"http://www.w3.org/2000/svg\">";
  double x = 0;
  for (const WhyPart& p : kWhyParts) {
    const double part = len > 0 ? std::min(1.0, static_cast<double>(p.ns(w)) / len) * width : 0;
    if (part <= 0) continue;
    s += "<rect x=\"" + fixed(x, 1) + "\" y=\"0\" width=\"" + fixed(part, 1) +
         "\" height=\"12\" fill=\"" + p.color + "\"><title>" + escape(p.label) + " " +
         escape(fmt_ns(static_cast<double>(p.ns(w)))) + "</title></rect>";
    x += part;
  }
  return s + "</svg>";
}

}  // namespace

void section_stalls(const Job& job, const HtmlOptions& opt, Html* h) {
  h->h2("stalls", "CQ poll gaps");
  if (job.stalls.empty()) {
    h->note("No CQ was polled.");
    return;
  }
  h->note(
      "Per CQ, the longest time between two polls and when it ended (wall clock, UTC, and seconds "
      "since the job's first activity). A progress thread that was descheduled or blocked shows "
      "up here; so do idle phases of the application: compare ranks.");
  std::vector<std::pair<std::string, bool>> cols = {
      {"host", false},       {"rank", false},        {"CQ", true},  {"polls", true},
      {"longest gap", true}, {"ended (UTC)", false}, {"t+ s", true}};
  for (int k = 0; k < kGapClasses; ++k)
    cols.push_back({std::string("gaps ") + kGapClassNames[k], true});
  Table t(cols, "stall-table");
  for (size_t i = 0; i < job.stalls.size() && i < opt.max_table_rows; ++i) {
    const Stall& s = job.stalls[i];
    t.row(s.cq.max_gap_ns >= 1e7);
    t.td(s.host);
    t.td(s.rank);
    t.n("#" + std::to_string(s.cq.id));
    t.n(fmt_count(s.cq.polls));
    t.n(fmt_ns(s.cq.max_gap_ns));
    t.td(fmt_wall(s.end_wall_ns, true));
    t.n(fixed(s.end_job_s, 3));
    for (int k = 0; k < kGapClasses; ++k) t.n(fmt_count(s.cq.gaps[k]));
    t.end_row();
  }
  h->raw(t.done());
  if (job.stalls.size() > opt.max_table_rows)
    h->note(std::to_string(job.stalls.size() - opt.max_table_rows) + " more CQs not shown.");
}

// Why each stall happened, from the nodes' kernel logs (fabtrace record).
void section_stall_causes(const Job& job, const HtmlOptions& opt, Html* h) {
  if (job.kernel.empty()) return;
  h->h2("why", "Why the CQs were not polled (kernel)");
  h->note(
      "For each CQ's longest poll gap, what the thread that ended it went through inside the gap, "
      "worked out in the kernel by fabtrace record: on CPU (running, not polling this CQ), "
      "runnable while another task ran, blocked, stopped, or in interrupt handlers.");
  std::string legend = "<p class=\"why-legend\">";
  for (const WhyPart& p : kWhyParts)
    legend += std::string("<span><i style=\"background:") + p.color + "\"></i>" + escape(p.label) +
              "</span>";
  h->raw(legend + "</p>\n");
  Table t({{"host", false},
           {"rank", false},
           {"CQ", true},
           {"gap", true},
           {"breakdown", false},
           {"why", false},
           {"faults", true}},
          "why-table");
  size_t rows = 0;
  for (const Stall& s : job.stalls) {
    if (rows == opt.max_table_rows) break;
    if (!s.kernel_logged) continue;
    ++rows;
    t.row(s.has_cause && s.cause.w.runnable_ns + s.cause.w.stopped_ns > s.cause.w.on_cpu_ns);
    t.td(s.host);
    t.td(s.rank);
    t.n("#" + std::to_string(s.cq.id));
    t.n(fmt_ns(s.cq.max_gap_ns));
    if (s.has_cause) {
      t.raw_td(why_bar(s.cause.w));
      t.td(s.cause.verdict);
      // "at least" or "about" where the count is not exact.
      const std::string bound = faults_bound(s.cause.w);
      t.n((bound == "at_least" ? "at least "
           : bound == "about"  ? "about "
                               : "") +
          fmt_count(s.cause.w.faults));
    } else {
      t.td("");
      t.td(stall_why(s));
      t.n("");
    }
    t.end_row();
  }
  h->raw(t.done());
}

}  // namespace fabtrace::report::html_page
