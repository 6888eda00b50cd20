// The heatmap model of the HTML report (html_report.h): link rows merged into
// one cell per (local NIC, remote NIC), one map per (op, size class).
#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
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
  // Keys are views of the rows' interned names and the NICs' addresses, which
  // outlive this function, in hashed maps: at a million rows the string
  // copies and tree searches (addresses share long prefixes) were most of the
  // HTML report's time. Orders shown are the first-seen and sorted orders of
  // the strings, as before.
  using View = std::string_view;
  struct Owner {
    View host, rank;
  };
  // Who owns an address: its host and rank (the first row or NIC naming it).
  std::unordered_map<View, Owner> owner;
  {
    const std::string* last = nullptr;  // a rank's rows repeat its local address
    for (const LinkRow& l : job.links) {
      if (&l.local() == last) continue;
      last = &l.local();
      owner.emplace(l.local(), Owner{l.host(), l.rank()});
    }
  }
  for (const NicRow& n : job.nics)
    for (const std::string& a : n.nic.locals) owner.emplace(a, Owner{n.host, n.rank});

  size_t n_locals = 0, n_remotes = 0;
  {
    std::unordered_set<View> seen_l, seen_r;
    for (const LinkRow& l : job.links) {
      n_locals += seen_l.insert(l.local()).second;
      n_remotes += seen_r.insert(l.remote()).second;
    }
  }
  set.by_host = n_locals > max_axis || n_remotes > max_axis;

  const auto row_key = [&](const LinkRow& l) -> View { return set.by_host ? l.host() : l.local(); };
  const auto col_key = [&](const LinkRow& l) -> View {
    if (!set.by_host) return l.remote();
    const auto it = owner.find(l.remote());
    if (it != owner.end()) return it->second.host;
    return l.remote() == "(any)" ? View("(any)") : View("(other)");
  };
  std::unordered_map<View, size_t> ri, ci;  // a key's row (column) index
  {
    std::vector<View> rows, cols, extra;
    for (const LinkRow& l : job.links)
      if (ri.emplace(row_key(l), rows.size()).second) rows.push_back(row_key(l));
    std::unordered_set<View> cols_all;
    for (const LinkRow& l : job.links) cols_all.insert(col_key(l));
    // Columns that are also rows first, in row order, so the diagonal lines up.
    for (const View k : rows)
      if (cols_all.count(k) && ci.emplace(k, cols.size()).second) cols.push_back(k);
    for (const View k : cols_all)
      if (!ci.count(k)) extra.push_back(k);
    std::sort(extra.begin(), extra.end());
    for (const View k : extra) ci.emplace(k, cols.size()), cols.push_back(k);
    for (const View k : rows) set.row_keys.emplace_back(k);
    for (const View k : cols) set.col_keys.emplace_back(k);
  }
  const auto label = [&](const std::string& key) -> std::string {
    if (set.by_host) return key;
    const auto it = owner.find(key);
    if (it == owner.end()) return short_addr(key);
    return "r" + std::string(it->second.rank) + " " + short_addr(key);
  };
  for (const std::string& k : set.row_keys) set.row_labels.push_back(label(k));
  for (const std::string& k : set.col_keys) set.col_labels.push_back(label(k));
  const size_t ncells = set.row_keys.size() * set.col_keys.size();

  // One map per (op, size class): few, looked up by the op's one copy.
  struct Map {
    const std::string* op;
    int cls;
    Heatmap m;
    std::vector<double> p50_sum;  // count-weighted sums
  };
  std::vector<Map> maps;
  size_t at = 0;  // the previous row's map: rows of a link repeat it
  View last_row;
  size_t last_ri = 0;
  for (const LinkRow& l : job.links) {
    if (l.row.count == 0 || l.row.size_unknown) continue;  // no size class without a size
    const int cls = size_class(l.row.bytes);
    if (at >= maps.size() || maps[at].op != &l.op() || maps[at].cls != cls) {
      at = 0;
      while (at < maps.size() && (maps[at].op != &l.op() || maps[at].cls != cls)) ++at;
      if (at == maps.size()) {
        Map& n = maps.emplace_back(Map{&l.op(), cls, Heatmap(), std::vector<double>(ncells)});
        n.m.op = l.op();
        n.m.size_class = cls;
        n.m.cells.resize(ncells);
      }
    }
    Map& mp = maps[at];
    const View rk = row_key(l);
    if (rk.data() != last_row.data() || rk.size() != last_row.size()) {
      last_row = rk;
      last_ri = ri.at(rk);
    }
    const size_t idx = last_ri * set.col_keys.size() + ci.at(col_key(l));
    HeatCell& c = mp.m.cells[idx];
    c.count += l.row.count;
    c.rows += 1;
    c.p99_ns = std::max(c.p99_ns, l.row.p99_ns);
    if (!l.row.recv && l.outlier_ratio >= kOutlierRatio) c.outlier = true;
    mp.p50_sum[idx] += l.row.p50_ns * static_cast<double>(l.row.count);
    mp.m.count += l.row.count;
  }
  // By op name, then size class.
  std::sort(maps.begin(), maps.end(), [](const Map& a, const Map& b) {
    return *a.op != *b.op ? *a.op < *b.op : a.cls < b.cls;
  });
  for (Map& mp : maps) {
    for (size_t i = 0; i < ncells; ++i)
      if (mp.m.cells[i].count)
        mp.m.cells[i].p50_ns = mp.p50_sum[i] / static_cast<double>(mp.m.cells[i].count);
    set.maps.push_back(std::move(mp.m));
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
