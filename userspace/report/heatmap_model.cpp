// The heatmap model of the HTML report (html_report.h): link rows merged into
// one cell per (local NIC, remote NIC), one map per (op, size class).
#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "userspace/report/html_report.h"
#include "userspace/report/summary.h"

namespace fabtrace::report {

int size_class(uint64_t bytes) {
  static const uint64_t limits[] = {64, 1024, 16 * 1024, 256 * 1024, 4 * 1024 * 1024};
  for (int i = 0; i < 5; ++i)
    if (bytes <= limits[i]) return i;
  return 5;
}

const char* size_class_name(int cls) {
  static const char* const names[] = {"\u2264 64 B",    "\u2264 1 KiB", "\u2264 16 KiB",
                                      "\u2264 256 KiB", "\u2264 4 MiB", "> 4 MiB"};
  return cls >= 0 && cls < kSizeClasses ? names[cls] : "?";
}

HeatmapSet build_heatmaps(const Job& job, size_t max_axis) {
  HeatmapSet set;
  // Who owns an address: its host and rank.
  std::map<std::string, std::pair<std::string, std::string>> owner;
  for (const LinkRow& l : job.links) owner.emplace(l.local(), std::make_pair(l.host(), l.rank()));
  for (const NicRow& n : job.nics)
    for (const std::string& a : n.nic.locals) owner.emplace(a, std::make_pair(n.host, n.rank));

  std::vector<std::string> locals, remotes;
  std::set<std::string> seen_l, seen_r;
  for (const LinkRow& l : job.links) {
    if (seen_l.insert(l.local()).second) locals.push_back(l.local());
    if (seen_r.insert(l.remote()).second) remotes.push_back(l.remote());
  }
  set.by_host = locals.size() > max_axis || remotes.size() > max_axis;

  const auto row_key = [&](const LinkRow& l) { return set.by_host ? l.host() : l.local(); };
  const auto col_key = [&](const LinkRow& l) -> std::string {
    if (!set.by_host) return l.remote();
    const auto it = owner.find(l.remote());
    if (it != owner.end()) return it->second.first;
    return l.remote() == "(any)" ? "(any)" : "(other)";
  };
  {
    std::set<std::string> r, c;
    std::vector<std::string> extra;
    for (const LinkRow& l : job.links)
      if (r.insert(row_key(l)).second) set.row_keys.push_back(row_key(l));
    std::set<std::string> cols_all;
    for (const LinkRow& l : job.links) cols_all.insert(col_key(l));
    // Columns that are also rows first, in row order, so the diagonal lines up.
    for (const std::string& k : set.row_keys)
      if (cols_all.count(k) && c.insert(k).second) set.col_keys.push_back(k);
    for (const LinkRow& l : job.links) {
      const std::string k = col_key(l);
      if (c.insert(k).second) extra.push_back(k);
    }
    std::sort(extra.begin(), extra.end());
    set.col_keys.insert(set.col_keys.end(), extra.begin(), extra.end());
  }
  const auto label = [&](const std::string& key) -> std::string {
    if (set.by_host) return key;
    const auto it = owner.find(key);
    if (it == owner.end()) return short_addr(key);
    return "r" + it->second.second + " " + short_addr(key);
  };
  for (const std::string& k : set.row_keys) set.row_labels.push_back(label(k));
  for (const std::string& k : set.col_keys) set.col_labels.push_back(label(k));

  std::map<std::string, size_t> ri, ci;
  for (size_t i = 0; i < set.row_keys.size(); ++i) ri[set.row_keys[i]] = i;
  for (size_t i = 0; i < set.col_keys.size(); ++i) ci[set.col_keys[i]] = i;
  const size_t ncells = set.row_keys.size() * set.col_keys.size();

  std::map<std::pair<std::string, int>, Heatmap> maps;
  std::map<std::pair<std::string, int>, std::vector<double>> p50_sum;  // count-weighted sums
  for (const LinkRow& l : job.links) {
    if (l.row.count == 0 || l.row.size_unknown) continue;  // no size class without a size
    const std::pair<std::string, int> k{l.op(), size_class(l.row.bytes)};
    Heatmap& m = maps[k];
    std::vector<double>& sums = p50_sum[k];
    if (m.cells.empty()) {
      m.op = k.first;
      m.size_class = k.second;
      m.cells.resize(ncells);
      sums.assign(ncells, 0.0);
    }
    const size_t idx = ri[row_key(l)] * set.col_keys.size() + ci[col_key(l)];
    HeatCell& c = m.cells[idx];
    c.count += l.row.count;
    c.rows += 1;
    c.p99_ns = std::max(c.p99_ns, l.row.p99_ns);
    if (!l.row.recv && l.outlier_ratio >= kOutlierRatio) c.outlier = true;
    sums[idx] += l.row.p50_ns * static_cast<double>(l.row.count);
    m.count += l.row.count;
  }
  for (auto& kv : maps) {
    const std::vector<double>& sums = p50_sum[kv.first];
    for (size_t i = 0; i < ncells; ++i)
      if (kv.second.cells[i].count)
        kv.second.cells[i].p50_ns = sums[i] / static_cast<double>(kv.second.cells[i].count);
    set.maps.push_back(std::move(kv.second));
  }
  // The busiest map of a non-receive op is shown first.
  uint64_t best = 0;
  bool best_send = false;
  for (size_t i = 0; i < set.maps.size(); ++i) {
    const bool send = set.maps[i].op.find("recv") == std::string::npos;
    if ((send && !best_send) || (send == best_send && set.maps[i].count > best)) {
      best = set.maps[i].count;
      best_send = send;
      set.default_map = i;
    }
  }
  return set;
}

}  // namespace fabtrace::report
