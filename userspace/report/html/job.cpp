// The HTML report's job sections: the job's shape (a row of cards) and the
// ranks table.
#include "userspace/report/html/sections.h"

#include <string>
#include <utility>

#include "userspace/report/text/formats.h"
#include "userspace/report/text/summary.h"

namespace fabtrace::report::html_page {

using svg::escape;

// The job's shape: one card per figure.
void section_shape(const Job& job, Html* h) {
  h->raw("<div class=\"cards\" id=\"shape\">");
  card(h, std::to_string(job.hosts().size()), "nodes");
  card(h, std::to_string(job.ranks.size()), "ranks");
  card(h, std::to_string(job.nic_count()), "NICs (a domain of a rank)");
  card(h, std::to_string(job.distinct_links()), "links");
  card(h, fmt_count(job.ops), "ops (" + fmt_count(job.completed) + " completed)");
  card(h, fmt_bytes(job.bytes), "moved (sends, writes, reads, atomics)");
  card(h, job.first_wall_ns ? fixed((job.last_wall_ns - job.first_wall_ns) / 1e9, 3) + " s" : "?",
       "on the wall clock");
  const auto outl = outlier_links(job);
  card(h, std::to_string(outl.size()), "outlier links");
  card(h, job.stalls.empty() ? "-" : fmt_ns(job.stalls.front().cq.max_gap_ns),
       "longest CQ poll gap");
  card(h, fmt_count(job.errors), "completions in error");
  h->raw("</div>\n");
  if (job.hosts().size() > 1)
    h->note(
        "Ranks of different nodes are placed on one wall clock through each rank's (monotonic, "
        "wall) "
        "anchor pair.");
}

void section_ranks(const Job& job, const HtmlOptions& opt, Html* h) {
  h->h2("ranks", "Ranks");
  Table t({{"host", false},
           {"rank", false},
           {"pid", true},
           {"providers", false},
           {"start (UTC)", false},
           {"duration", true},
           {"links", true},
           {"CQs", true},
           {"timeline ops", true},
           {"counter samples", true}},
          "rank-table");
  for (size_t i = 0; i < job.ranks.size() && i < opt.max_table_rows; ++i) {
    const Rank& r = job.ranks[i];
    t.row();
    t.td(r.host());
    t.td(r.rank());
    t.n(std::to_string(r.pid()));
    t.td(r.providers());
    t.td(fmt_wall(r.start_wall_ns(), true));
    t.n(fixed(r.duration_s(), 3) + " s");
    t.n(std::to_string(r.link_count));
    t.n(std::to_string(r.report.cqs.size()));
    t.n(r.oplog_path.empty() ? "-" : fmt_count(r.oplog_ops));
    t.n(r.counters_path.empty() ? "-" : fmt_count(r.counter_samples));
    t.end_row();
  }
  h->raw(t.done());
  if (job.ranks.size() > opt.max_table_rows)
    h->note(std::to_string(job.ranks.size() - opt.max_table_rows) + " more ranks not shown.");
}

}  // namespace fabtrace::report::html_page
