// The HTML report's root causes of waiting (root_causes.h) and the rank x rank
// matrix of the time each rank waited on each other. Nothing when no root costs
// kMinRootCostNs: the page of a job without waits is unchanged.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "userspace/report/html/sections.h"
#include "userspace/report/text/formats.h"
#include "userspace/report/text/summary.h"
#include "userspace/report/text/waits_text.h"

namespace fabtrace::report::html_page {

namespace {

constexpr size_t kMatrixRanks = 32;  // the ranks that waited or were waited on most

}  // namespace

void section_waits(const Job& job, const HtmlOptions& opt, Html* h) {
  const WaitAnalysis wa = analyze_waits(job);
  size_t named = 0;
  for (const RootCause& rc : wa.roots) named += rc.cost_ns >= kMinRootCostNs;
  if (!named) return;
  h->h2("waits", "Root causes of waiting");
  h->note(wa.roots[0].weak
              ? "Weaker evidence (no per-op timelines): CQ poll gaps that overlap a longer gap "
                "of a rank they have links with. Overlap in time is not proof of waiting."
              : "Each receive a rank waited for (at least 1 ms, by the per-op timelines) is a "
                "wait on its sender, followed along the chain to the first rank that was not "
                "itself waiting: the root. Its cause is the kernel's record of it then, else "
                "late to post or the message in transit. Cost: the time all ranks waited "
                "because of it.");
  Table t(
      {{"rank", false}, {"cost", true}, {"waits", true}, {"waited on it", false}, {"cause", false}},
      "root-table");
  for (size_t i = 0; i < named && i < opt.max_table_rows; ++i) {
    const RootCause& rc = wa.roots[i];
    const std::string list = waiters_text(job, rc, 8);
    t.row(i == 0);
    t.td(rank_name(job, rc.rank));
    t.n(fmt_ns(static_cast<double>(rc.cost_ns)));
    t.n(fmt_count(rc.waits));
    t.td(list);
    t.td(rc.cause + classes_text(rc));
    t.end_row();
  }
  h->raw(t.done());

  // Who waited on whom: the ranks with the most waiting, either way.
  std::map<uint32_t, int64_t> total;
  for (const auto& [k, ns] : wa.matrix) total[k.first] += ns, total[k.second] += ns;
  std::vector<std::pair<uint32_t, int64_t>> by(total.begin(), total.end());
  std::stable_sort(by.begin(), by.end(),
                   [](const auto& x, const auto& y) { return x.second > y.second; });
  if (by.size() > kMatrixRanks) by.resize(kMatrixRanks);
  std::vector<uint32_t> ranks;
  for (const auto& p : by) ranks.push_back(p.first);
  std::sort(ranks.begin(), ranks.end());
  std::vector<std::pair<std::string, bool>> cols = {{"waited \u2193 on \u2192", false}};
  for (uint32_t r : ranks) cols.push_back({rank_name(job, r), true});
  Table m(cols, "wait-matrix");
  for (uint32_t a : ranks) {
    m.row();
    m.td(rank_name(job, a));
    for (uint32_t b : ranks) {
      const auto it = wa.matrix.find({a, b});
      m.n(it == wa.matrix.end() ? "" : fmt_ns(static_cast<double>(it->second)));
    }
    m.end_row();
  }
  h->raw(m.done());
  if (total.size() > kMatrixRanks)
    h->note(std::to_string(total.size() - kMatrixRanks) + " more ranks with waits not shown.");
}

}  // namespace fabtrace::report::html_page
