// The heatmap model of the HTML report (html_report.h): link rows merged into
// one cell per (local NIC, remote NIC), one map per (op, size class).
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "userspace/report/html/heatmap_model.h"
#include "userspace/report/text/formats.h"
#include "userspace/report/text/summary.h"

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
  // outlive this function. A row's names are looked up by their numbers
  // (Interned::id) in tables, not hashed: at a million rows hashing strings
  // was most of the HTML report's time. Orders shown are the first-seen and
  // sorted orders of the strings, as before.
  using View = std::string_view;
  struct Owner {
    View host, rank;
  };
  const size_t ids = interned_count();
  // Who owns an address: its host and rank (the first row or NIC naming it).
  std::unordered_map<View, Owner> owner;
  size_t n_locals = 0, n_remotes = 0;
  {
    std::vector<char> local_seen(ids, 0), remote_seen(ids, 0);
    for (const LinkRow& l : job.links) {
      if (!local_seen[l.local_id()]) {
        local_seen[l.local_id()] = 1;
        ++n_locals;
        owner.emplace(l.local(), Owner{l.host(), l.rank()});
      }
      if (!remote_seen[l.remote_id()]) {
        remote_seen[l.remote_id()] = 1;
        ++n_remotes;
      }
    }
  }
  for (const NicRow& n : job.nics)
    for (const std::string& a : n.nic.locals) owner.emplace(a, Owner{n.host, n.rank});
  set.by_host = n_locals > max_axis || n_remotes > max_axis;

  // A row's row key and column key, each worked out once per name.
  constexpr uint32_t kUnset = UINT32_MAX;
  std::vector<uint32_t> col_key_of(ids, kUnset);  // by remote id: index into col_views
  std::vector<View> col_views;
  const auto col_key = [&](const LinkRow& l) -> uint32_t {
    uint32_t& k = col_key_of[l.remote_id()];
    if (k != kUnset) return k;
    View v = l.remote();
    if (set.by_host) {
      const auto it = owner.find(l.remote());
      v = it != owner.end()             ? it->second.host
          : l.remote() == View("(any)") ? View("(any)")
                                        : View("(other)");
    }
    k = static_cast<uint32_t>(col_views.size());
    col_views.push_back(v);
    return k;
  };
  // Rows by local address, or by host (the host's one string per rank owner).
  std::vector<uint32_t> row_of_local(ids, kUnset);
  std::unordered_map<const std::string*, uint32_t> row_of_host;
  std::unordered_map<View, uint32_t> host_row;
  std::vector<View> rows;  // keys in first-seen order
  const std::string* last_host = nullptr;
  uint32_t last_host_row = 0;
  const auto row_index = [&](const LinkRow& l) -> uint32_t {
    if (!set.by_host) {
      uint32_t& r = row_of_local[l.local_id()];
      if (r == kUnset) {
        r = static_cast<uint32_t>(rows.size());
        rows.push_back(l.local());
      }
      return r;
    }
    if (&l.host() == last_host) return last_host_row;
    const auto it = row_of_host.find(&l.host());
    uint32_t r;
    if (it != row_of_host.end()) {
      r = it->second;
    } else {
      r = host_row.emplace(l.host(), static_cast<uint32_t>(rows.size())).first->second;
      if (r == rows.size()) rows.push_back(l.host());
      row_of_host.emplace(&l.host(), r);
    }
    last_host = &l.host();
    last_host_row = r;
    return r;
  };
  for (const LinkRow& l : job.links) {
    row_index(l);
    col_key(l);
  }
  // Columns: the keys that are also rows first, in row order, so the diagonal
  // lines up; then the others, sorted. (Column keys of equal text, from
  // different names in by-host maps, are one column.)
  std::unordered_map<View, uint32_t> ci;
  std::vector<View> cols;
  {
    std::unordered_set<View> cols_all(col_views.begin(), col_views.end());
    for (const View k : rows)
      if (cols_all.count(k) && ci.emplace(k, cols.size()).second) cols.push_back(k);
    std::vector<View> extra;
    for (const View k : cols_all)
      if (!ci.count(k)) extra.push_back(k);
    std::sort(extra.begin(), extra.end());
    for (const View k : extra) ci.emplace(k, cols.size()), cols.push_back(k);
  }
  // Hosts beyond max_axis: runs of consecutive hosts share a row (and the
  // column of the same hosts), so a job of any size keeps a bounded map.
  std::vector<uint32_t> row_group(rows.size()), col_group(cols.size());
  for (size_t r = 0; r < rows.size(); ++r) row_group[r] = static_cast<uint32_t>(r);
  for (size_t c = 0; c < cols.size(); ++c) col_group[c] = static_cast<uint32_t>(c);
  if (set.by_host && rows.size() > max_axis) {
    set.hosts_per_row = (rows.size() + max_axis - 1) / max_axis;
    const size_t g = set.hosts_per_row, groups = (rows.size() + g - 1) / g;
    const auto group_key = [&](size_t k) {
      const size_t first = k * g, last = std::min(rows.size(), first + g) - 1;
      return first == last ? std::string(rows[first])
                           : std::string(rows[first]) + ".." + std::string(rows[last]);
    };
    for (size_t k = 0; k < groups; ++k) set.row_keys.push_back(group_key(k));
    for (size_t r = 0; r < rows.size(); ++r) row_group[r] = static_cast<uint32_t>(r / g);
    // Columns that are row hosts: their row's group; the others after.
    std::unordered_map<View, uint32_t> row_pos;
    for (size_t r = 0; r < rows.size(); ++r) row_pos.emplace(rows[r], static_cast<uint32_t>(r));
    size_t extras = 0;
    for (size_t c = 0; c < cols.size(); ++c) {
      const auto it = row_pos.find(cols[c]);
      col_group[c] = it != row_pos.end() ? static_cast<uint32_t>(it->second / g)
                                         : static_cast<uint32_t>(groups + extras++);
    }
    set.col_keys = set.row_keys;
    for (size_t c = 0; c < cols.size(); ++c)
      if (!row_pos.count(cols[c])) set.col_keys.emplace_back(cols[c]);
  } else {
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
  // A column key's shown column.
  std::vector<uint32_t> col_of_key(col_views.size());
  for (size_t k = 0; k < col_views.size(); ++k) col_of_key[k] = col_group[ci.at(col_views[k])];

  // One map per (op, size class): few, looked up by the op's one copy.
  struct Map {
    const std::string* op;
    int cls;
    Heatmap m;
    std::vector<double> p50_sum;  // count-weighted sums
  };
  std::vector<Map> maps;
  size_t at = 0;  // the previous row's map: rows of a link repeat it
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
    const size_t idx = size_t{row_group[row_index(l)]} * set.col_keys.size() +
                       col_of_key[col_key(l)];  // both known: looked up, not added
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
