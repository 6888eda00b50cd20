#include "userspace/report/text/waits_text.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "userspace/report/job/job.h"
#include "userspace/report/text/formats.h"

namespace fabtrace::report {

std::string root_causes_text(const Job& job, const WaitAnalysis& wa, size_t top) {
  size_t named = 0, under = 0;
  int64_t under_ns = 0;
  for (const RootCause& rc : wa.roots) {
    if (rc.cost_ns >= kMinRootCostNs)
      ++named;
    else
      ++under, under_ns += rc.cost_ns;
  }
  if (!named) return "";
  const bool weak = wa.roots[0].weak;
  std::string s = weak ? "root causes of waiting (weaker evidence: poll gaps overlapping a linked "
                         "rank's; no per-op timelines)\n"
                       : "root causes of waiting (waits for a peer in the per-op timelines, "
                         "followed to the first rank not itself waiting; cost: the time ranks "
                         "waited)\n";
  for (size_t i = 0; i < wa.roots.size() && i < top && i < named; ++i) {
    const RootCause& rc = wa.roots[i];
    const std::string list = waiters_text(job, rc, 4);
    s += "  " + rank_name(job, rc.rank) + "  cost " + fmt_ns(static_cast<double>(rc.cost_ns)) +
         " in " + fmt_count(rc.waits) + (rc.waits == 1 ? " wait" : " waits") + " (" + list +
         "): " + rc.cause + classes_text(rc) + "\n";
  }
  if (named > top) s += "  (+" + std::to_string(named - top) + " more roots)\n";
  if (under)
    s += "  (" + fmt_count(under) + (under == 1 ? " root" : " roots") + " under " +
         fmt_ns(static_cast<double>(kMinRootCostNs)) + ", " +
         fmt_ns(static_cast<double>(under_ns)) + " in all)\n";
  return s;
}

std::string classes_text(const RootCause& rc, size_t max) {
  std::string s;
  for (size_t k = 1; k < rc.classes.size() && k <= max; ++k)
    s += (k == 1 ? "; also " : ", ") + rc.classes[k].first + " " +
         fmt_ns(static_cast<double>(rc.classes[k].second));
  if (rc.classes.size() > max + 1)
    s += ", +" + std::to_string(rc.classes.size() - max - 1) + " more";
  return s;
}

std::string waiters_text(const Job& job, const RootCause& rc, size_t max) {
  std::vector<std::pair<uint32_t, int64_t>> w(rc.by_waiter.begin(), rc.by_waiter.end());
  std::stable_sort(w.begin(), w.end(),
                   [](const auto& x, const auto& y) { return x.second > y.second; });
  std::string list;
  for (size_t k = 0; k < w.size() && k < max; ++k)
    list += (k ? ", " : "") + rank_name(job, w[k].first) + " " +
            fmt_ns(static_cast<double>(w[k].second));
  if (w.size() > max) list += ", +" + std::to_string(w.size() - max) + " more";
  return list;
}

std::string stall_wait_text(const Job& job, const WaitAnalysis& wa, size_t i) {
  if (i >= wa.stalls.size() || !wa.stalls[i].known) return "";
  const StallWait& sw = wa.stalls[i];
  const std::string on = rank_name(job, sw.on);
  if (sw.weak)
    return "      overlaps " + on + "'s poll gap (" + sw.cause +
           ") on a link of theirs (weaker evidence: no per-op timelines)\n";
  if (sw.root == sw.on) return "      waiting for " + on + " (" + on + " " + sw.cause + ")\n";
  return "      waiting for " + on + " (root " + rank_name(job, sw.root) + ": " + sw.cause + ")\n";
}

}  // namespace fabtrace::report
