#include "userspace/report/html_report.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <utility>

#include "common/safe_output.h"
#include "userspace/report/slowest_ops.h"
#include "userspace/report/summary.h"
#include "userspace/report/svg.h"

namespace fabtrace::report {

using svg::escape;
using svg::num;

// ---- heatmap model ----------------------------------------------------------------

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
  for (const LinkRow& l : job.links) owner.emplace(l.local, std::make_pair(l.host, l.rank));
  for (const NicRow& n : job.nics)
    for (const std::string& a : n.nic.locals) owner.emplace(a, std::make_pair(n.host, n.rank));

  std::vector<std::string> locals, remotes;
  std::set<std::string> seen_l, seen_r;
  for (const LinkRow& l : job.links) {
    if (seen_l.insert(l.local).second) locals.push_back(l.local);
    if (seen_r.insert(l.remote).second) remotes.push_back(l.remote);
  }
  set.by_host = locals.size() > max_axis || remotes.size() > max_axis;

  const auto row_key = [&](const LinkRow& l) { return set.by_host ? l.host : l.local; };
  const auto col_key = [&](const LinkRow& l) -> std::string {
    if (!set.by_host) return l.remote;
    const auto it = owner.find(l.remote);
    if (it != owner.end()) return it->second.first;
    return l.remote == "(any)" ? "(any)" : "(other)";
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
    const std::pair<std::string, int> k{l.row.op, size_class(l.row.bytes)};
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

namespace {

std::string fixed(double v, int decimals) {
  char b[64];
  std::snprintf(b, sizeof(b), "%.*f", decimals, v);
  return b;
}

std::string ns_label(double ns) { return fmt_ns(ns); }

// A compact latency for inside a cell: "12us", "3.4ms".
std::string cell_text(double ns) {
  char b[32];
  if (ns < 1e3)
    std::snprintf(b, sizeof(b), "%.0fns", ns);
  else if (ns < 1e6)
    std::snprintf(b, sizeof(b), ns < 1e4 ? "%.1fus" : "%.0fus", ns / 1e3);
  else if (ns < 1e9)
    std::snprintf(b, sizeof(b), ns < 1e7 ? "%.1fms" : "%.0fms", ns / 1e6);
  else
    std::snprintf(b, sizeof(b), "%.1fs", ns / 1e9);
  return b;
}

const char* kStyle = R"CSS(
:root { --fg:#1d2330; --muted:#5b6474; --line:#d9dee7; --bg:#ffffff; --panel:#f6f8fb; --accent:#c2410c; --bar:#3b6ea8; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color: var(--fg); background: var(--bg); margin: 0; padding: 0 28px 40px; font-size: 14px; line-height: 1.45; }
header { border-bottom: 1px solid var(--line); padding: 18px 0 10px; margin-bottom: 8px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 14px; margin: 16px 0 6px; }
.sub, .note { color: var(--muted); }
.note { font-size: 13px; margin: 4px 0 8px; }
nav a { margin-right: 14px; color: var(--bar); text-decoration: none; font-size: 13px; }
nav a:hover { text-decoration: underline; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 12px 0; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 8px 14px; min-width: 120px; }
.card .v { font-size: 20px; font-weight: 600; }
.card .k { color: var(--muted); font-size: 12px; }
table { border-collapse: collapse; margin: 6px 0 10px; font-size: 13px; }
th, td { border-bottom: 1px solid var(--line); padding: 3px 10px 3px 0; text-align: left; vertical-align: top; }
th { color: var(--muted); font-weight: 600; white-space: nowrap; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.addr { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 12px; }
tr.hi td { background: #fff1e6; }
.bad { color: var(--accent); font-weight: 600; }
.ok { color: #15803d; }
.hm-controls { margin: 6px 0 10px; }
.hm-controls select { font-size: 14px; padding: 2px 6px; }
.hm-pair { display: flex; flex-wrap: wrap; gap: 24px; align-items: flex-start; }
figure { margin: 0; }
figcaption { font-weight: 600; margin-bottom: 4px; }
svg text { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; }
.heatmap .hm-cell { stroke: #ffffff; stroke-width: 1; }
.heatmap .hm-cell:hover { stroke: #111111; stroke-width: 2; }
.heatmap .hm-empty { fill: #eef0f4; }
.heatmap .hm-outlier { stroke: var(--accent); stroke-width: 3; }
.heatmap .axis { font-size: 11px; fill: var(--muted); }
.heatmap .cell-text { font-size: 10px; pointer-events: none; }
.chart-title { font-size: 12px; font-weight: 600; fill: var(--fg); }
.tick { font-size: 10px; fill: var(--muted); }
.grid { stroke: #e4e8ef; stroke-width: 1; }
.plot-bg { fill: #fbfcfe; stroke: var(--line); }
.series { fill: none; stroke: var(--bar); stroke-width: 1.5; }
.series-dot { fill: var(--bar); }
.bar { fill: var(--bar); }
.why-bar { vertical-align: middle; }
.why-legend span { display: inline-block; margin-right: 12px; }
.why-legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
.bar-hi { fill: var(--accent); }
.bar-label, .bar-value { font-size: 12px; fill: var(--fg); }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
.legend .tick { font-size: 11px; }
footer { margin-top: 36px; color: var(--muted); font-size: 12px; }
)CSS";

const char* kScript = R"JS(
(function () {
  var sel = document.getElementById('hm-select');
  if (!sel) return;
  function show() {
    var groups = document.querySelectorAll('.hm-group');
    for (var i = 0; i < groups.length; i++)
      groups[i].style.display = (groups[i].id === sel.value) ? '' : 'none';
  }
  sel.addEventListener('change', show);
  show();
})();
document.body.setAttribute('data-script', 'ok');
)JS";

class Html {
 public:
  void raw(const std::string& s) { out_ += s; }
  void text(const std::string& s) { out_ += escape(s); }
  void h2(const std::string& id, const std::string& title) {
    out_ += "<h2 id=\"" + escape(id) + "\">" + escape(title) + "</h2>\n";
  }
  void note(const std::string& s) { out_ += "<p class=\"note\">" + escape(s) + "</p>\n"; }
  std::string& str() { return out_; }

 private:
  std::string out_;
};

// A table built cell by cell.
class Table {
 public:
  explicit Table(const std::vector<std::pair<std::string, bool>>& cols,
                 const std::string& id = "") {
    s_ = "<table" + (id.empty() ? std::string() : " id=\"" + escape(id) + "\"") + "><thead><tr>";
    for (const auto& c : cols)
      s_ += std::string("<th") + (c.second ? " class=\"n\"" : "") + ">" + escape(c.first) + "</th>";
    s_ += "</tr></thead><tbody>\n";
  }
  void row(bool hi = false) { s_ += hi ? "<tr class=\"hi\">" : "<tr>"; }
  void td(const std::string& v, const char* cls = nullptr, const std::string& title = "") {
    s_ += "<td";
    if (cls) s_ += std::string(" class=\"") + cls + "\"";
    if (!title.empty()) s_ += " title=\"" + escape(title) + "\"";
    s_ += ">" + escape(v) + "</td>";
  }
  void n(const std::string& v) { td(v, "n"); }
  void raw_td(const std::string& html) { s_ += "<td>" + html + "</td>"; }
  void end_row() { s_ += "</tr>\n"; }
  std::string done() { return s_ + "</tbody></table>\n"; }

 private:
  std::string s_;
};

std::string heatmap_svg(const HeatmapSet& set, const Heatmap& m, size_t index, bool p99,
                        const svg::Scale& scale) {
  const size_t nr = set.row_keys.size(), nc = set.col_keys.size();
  const double cell = std::clamp(600.0 / static_cast<double>(std::max<size_t>(nc, 1)), 12.0, 60.0);
  size_t longest_row = 4, longest_col = 4;
  for (const auto& l : set.row_labels) longest_row = std::max(longest_row, l.size());
  for (const auto& l : set.col_labels) longest_col = std::max(longest_col, l.size());
  const double left = std::min(260.0, 12 + 6.2 * static_cast<double>(longest_row));
  const double top = std::min(200.0, 14 + 4.6 * static_cast<double>(longest_col));
  const double w = left + cell * static_cast<double>(nc) + 10;
  const double h = top + cell * static_cast<double>(nr) + 10;
  const std::string metric = p99 ? "p99" : "p50";
  std::string s = "<svg class=\"heatmap\" id=\"heatmap-" + std::to_string(index) + "-" + metric +
                  "\" data-metric=\"" + metric + "\" data-op=\"" + escape(m.op) +
                  "\" data-rows=\"" + std::to_string(nr) + "\" data-cols=\"" + std::to_string(nc) +
                  "\" width=\"" + num(w) + "\" height=\"" + num(h) + "\" viewBox=\"0 0 " + num(w) +
                  " " + num(h) + "\" xmlns=\"http://www.w3.org/2000/svg\" role=\"img\">";
  s += "<title>" +
       escape(m.op + " " + size_class_name(m.size_class) + " " + metric +
              " latency, local (rows) x remote (columns)") +
       "</title>";
  for (size_t c = 0; c < nc; ++c) {
    const double x = left + cell * (static_cast<double>(c) + 0.5);
    s += "<text class=\"axis\" transform=\"translate(" + num(x + 3) + "," + num(top - 4) +
         ") rotate(-50)\"><title>" + escape(set.col_keys[c]) + "</title>" +
         escape(set.col_labels[c]) + "</text>";
  }
  for (size_t r = 0; r < nr; ++r) {
    const double y = top + cell * (static_cast<double>(r) + 0.5);
    s += "<text class=\"axis\" text-anchor=\"end\" x=\"" + num(left - 5) + "\" y=\"" + num(y + 4) +
         "\"><title>" + escape(set.row_keys[r]) + "</title>" + escape(set.row_labels[r]) +
         "</text>";
  }
  const bool with_text = cell >= 40;
  for (size_t r = 0; r < nr; ++r) {
    for (size_t c = 0; c < nc; ++c) {
      const HeatCell& hc = m.cells[r * nc + c];
      const double x = left + cell * static_cast<double>(c),
                   y = top + cell * static_cast<double>(r);
      const std::string geo = "x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(cell) +
                              "\" height=\"" + num(cell) + "\"";
      const std::string data = " data-local=\"" + escape(set.row_keys[r]) + "\" data-remote=\"" +
                               escape(set.col_keys[c]) + "\"";
      if (!hc.count) {
        s += "<rect class=\"hm-cell hm-empty\" " + geo + data + "><title>" +
             escape(set.row_labels[r] + " -> " + set.col_labels[c] + ": no " + m.op) +
             "</title></rect>";
        continue;
      }
      const double v = p99 ? hc.p99_ns : hc.p50_ns;
      const svg::Rgb color = svg::ramp(scale(v));
      std::string tip = set.row_keys[r] + " -> " + set.col_keys[c] + "\n" + m.op + " " +
                        size_class_name(m.size_class) + ": p50 " + fmt_ns(hc.p50_ns) + ", p99 " +
                        fmt_ns(hc.p99_ns) + ", " + fmt_count(hc.count) + " ops";
      if (hc.rows > 1)
        tip += " (" + std::to_string(hc.rows) + " rows merged: p50 weighted mean, p99 max)";
      if (hc.outlier) tip += "\noutlier link";
      s += "<rect class=\"hm-cell" + std::string(hc.outlier ? " hm-outlier" : "") + "\" " + geo +
           data + " data-ns=\"" + num(v) + "\" fill=\"" + svg::hex(color) + "\"><title>" +
           escape(tip) + "</title></rect>";
      if (with_text)
        s += "<text class=\"cell-text\" text-anchor=\"middle\" x=\"" + num(x + cell / 2) +
             "\" y=\"" + num(y + cell / 2 + 3.5) + "\" fill=\"" + svg::hex(svg::text_on(color)) +
             "\">" + escape(cell_text(v)) + "</text>";
    }
  }
  s += "</svg>";
  return s;
}

void section_heatmaps(const Job& job, Html* h) {
  h->h2("heatmaps", "Latency by NIC pair");
  const HeatmapSet set = build_heatmaps(job);
  if (set.maps.empty()) {
    h->note("No completed ops: nothing to map.");
    return;
  }
  h->note(
      std::string("Rows: local NIC; columns: remote NIC") +
      (set.by_host ? " (too many NICs: grouped by host)" : "") +
      ". Color: latency on a log scale shared by the p50 and p99 maps of one op and size class "
      "(dark: fast, yellow: slow). Grey: no ops of that kind on that pair. Orange border: an "
      "outlier link (p99 >= 3x the median p99 of its op and size). Receives are timed from "
      "posting, so they include waiting for the sender; \"(any)\" is a receive from any source.");
  h->raw("<div class=\"hm-controls\"><label>op and message size: <select id=\"hm-select\">");
  for (size_t i = 0; i < set.maps.size(); ++i) {
    const Heatmap& m = set.maps[i];
    h->raw(
        "<option value=\"hm-" + std::to_string(i) + "\"" +
        (i == set.default_map ? " selected" : "") + ">" +
        escape(m.op + "  " + size_class_name(m.size_class) + "  (" + fmt_count(m.count) + " ops)") +
        "</option>");
  }
  h->raw("</select></label></div>\n");
  for (size_t i = 0; i < set.maps.size(); ++i) {
    const Heatmap& m = set.maps[i];
    double lo = 0, hi = 0;
    for (const HeatCell& c : m.cells) {
      if (!c.count) continue;
      for (double v : {c.p50_ns, c.p99_ns}) {
        if (v <= 0) continue;
        lo = lo > 0 ? std::min(lo, v) : v;
        hi = std::max(hi, v);
      }
    }
    const svg::Scale scale(lo, hi, true);
    h->raw("<div class=\"hm-group\" id=\"hm-" + std::to_string(i) + "\" data-op=\"" + escape(m.op) +
           "\" data-size-class=\"" + escape(size_class_name(m.size_class)) + "\"" +
           (i == set.default_map ? "" : " style=\"display:none\"") + ">");
    h->raw("<h3>" + escape(m.op + ", messages " + size_class_name(m.size_class)) + "</h3>");
    h->raw("<div class=\"hm-pair\">");
    for (bool p99 : {false, true}) {
      h->raw("<figure><figcaption>" + std::string(p99 ? "p99" : "p50") + "</figcaption>");
      h->raw(heatmap_svg(set, m, i, p99, scale));
      h->raw("</figure>");
    }
    h->raw("</div>");
    h->raw(svg::legend("legend-grad-" + std::to_string(i), scale, 320, "latency (log scale)",
                       ns_label));
    h->raw("</div>\n");
  }
}

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
      "The slowest NIC is drawn in orange. The peak is the NIC's busiest stretch of at most 10 "
      "ms (the one whose ops completed the most bytes): those bytes over its length, from the "
      "first issue to the last completion in it. One slow op weighs on the whole-run figure, not "
      "on the peak unless it is within 10 ms of it.");
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
                   " in " + fmt_ns(n.nic.peak_span_ns) + " at t+" +
                   std::to_string(n.nic.peak_start_s) + " s";
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
      h->raw("<h3>" + escape(who(r.host, r.rank, r.pid)) + "</h3>");
      h->note(fmt_count(r.counter_samples) + " samples; no counter changed.");
      continue;
    }
    for (const std::string& d : devs) {
      h->raw("<h3>" + escape(who(r.host, r.rank, r.pid) + " " + d) + "</h3><div class=\"charts\">");
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

// The parts of a stall's breakdown drawn in its bar, in order, with their colours.
struct WhyPart {
  const char* label;
  const char* color;
  uint64_t (*ns)(const ft_window&);
};
const WhyPart kWhyParts[] = {
    {"on CPU", "#4c78a8",
     [](const ft_window& w) -> uint64_t {
       const uint64_t irq = w.irq_ns + w.softirq_ns;
       return w.on_cpu_ns > irq ? w.on_cpu_ns - irq : 0;
     }},
    {"runnable (another task ran)", "#f58518",
     [](const ft_window& w) -> uint64_t { return w.runnable_ns; }},
    {"blocked (futex, sleep, I/O)", "#54a24b",
     [](const ft_window& w) -> uint64_t {
       return w.futex_ns + w.sleep_ns + w.nanosleep_ns + w.disk_ns + w.other_ns;
     }},
    {"stopped", "#e45756", [](const ft_window& w) -> uint64_t { return w.stopped_ns; }},
    {"IRQ / softirq", "#b279a2",
     [](const ft_window& w) -> uint64_t { return w.irq_ns + w.softirq_ns; }},
};

std::string why_bar(const ft_window& w) {
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
      t.n(fmt_count(s.cause.w.faults));
    } else {
      t.td("");
      t.td(stall_why(s));
      t.n("");
    }
    t.end_row();
  }
  h->raw(t.done());
}

// Retransmits and drops per link, from the nodes' kernel logs.
void section_link_net(const Job& job, const HtmlOptions& opt, Html* h) {
  if (job.kernel.empty()) return;
  h->h2("network", "TCP retransmits and drops per link (kernel)");
  std::map<std::tuple<std::string, std::string, long, std::string, std::string>, const LinkRow*>
      per_link;  // a link's rows all carry its counts: one per link
  for (const LinkRow& l : job.links)
    if (l.kernel_logged && (l.retrans || l.drops))
      per_link.emplace(std::make_tuple(l.host, l.rank, l.pid, l.local, l.remote), &l);
  uint64_t retrans = 0, drops = 0;
  for (const KernelNode& n : job.kernel) {
    retrans += n.retrans;
    drops += n.drops;
  }
  h->note(fmt_count(retrans) + " segments retransmitted and " + fmt_count(drops) +
          " packets dropped on the traced processes' connections over the nodes with a kernel "
          "log; the links they belong to below (links.csv has the same per link).");
  if (per_link.empty()) return;
  std::vector<const LinkRow*> rows;
  for (const auto& kv : per_link) rows.push_back(kv.second);
  std::stable_sort(rows.begin(), rows.end(), [](const LinkRow* a, const LinkRow* b) {
    return a->retrans + a->drops > b->retrans + b->drops;
  });
  Table t({{"host", false},
           {"rank", false},
           {"local", false},
           {"remote", false},
           {"retransmits", true},
           {"drops", true}},
          "net-table");
  for (size_t i = 0; i < rows.size() && i < opt.max_table_rows; ++i) {
    t.row(rows[i]->retrans > 0);
    t.td(rows[i]->host);
    t.td(rows[i]->rank);
    t.td(short_addr(rows[i]->local));
    t.td(short_addr(rows[i]->remote));
    t.n(fmt_count(rows[i]->retrans));
    t.n(fmt_count(rows[i]->drops));
    t.end_row();
  }
  h->raw(t.done());
}

// One block per node's kernel log: what attached, interrupt load, the driver.
void section_kernel_nodes(const Job& job, Html* h) {
  if (job.kernel.empty()) return;
  h->h2("nodes", "Nodes (kernel)");
  for (const KernelNode& n : job.kernel) {
    const uint64_t span = n.last_ns > n.first_ns ? n.last_ns - n.first_ns : 0;
    h->raw("<h3>" + escape(n.host) + "</h3>");
    std::string line = fmt_count(n.records) + " events over " + fmt_ns(static_cast<double>(span)) +
                       "; " + fmt_count(n.stats.lost_total()) + " lost (ring buffer full); " +
                       fmt_count(n.faults) + " page faults of traced threads";
    if (n.cxi_errors || !n.cxi_work.empty()) {
      line += "; cxi driver: " + fmt_count(n.cxi_errors) + " errors";
      for (const auto& kv : n.cxi_work)
        line += ", " + kv.first + " work x" + fmt_count(kv.second.count);
    }
    h->note(line + ".");
    std::string absent;
    for (const KernelAttach& a : n.meta.attach)
      if (a.state != "attached")
        absent += (absent.empty() ? "" : ", ") + a.point + " (" + a.detail + ")";
    if (!absent.empty()) h->note("Not attached: " + absent + ".");
    Table t({{"CPU", true},
             {"IRQ time", true},
             {"IRQs", true},
             {"softirq time", true},
             {"softirqs", true},
             {"share of the span", true}});
    std::set<uint32_t> cpus;
    for (const auto& kv : n.irq_per_cpu) cpus.insert(kv.first);
    for (const auto& kv : n.softirq_per_cpu) cpus.insert(kv.first);
    for (uint32_t c : cpus) {
      const auto i = n.irq_per_cpu.find(c);
      const auto si = n.softirq_per_cpu.find(c);
      const KernelLoad irq = i == n.irq_per_cpu.end() ? KernelLoad{} : i->second;
      const KernelLoad soft = si == n.softirq_per_cpu.end() ? KernelLoad{} : si->second;
      t.row();
      t.n(std::to_string(c));
      t.n(fmt_ns(static_cast<double>(irq.ns)));
      t.n(fmt_count(irq.count));
      t.n(fmt_ns(static_cast<double>(soft.ns)));
      t.n(fmt_count(soft.count));
      t.n(span ? fixed(100.0 * static_cast<double>(irq.ns + soft.ns) / static_cast<double>(span),
                       2) +
                     " %"
               : "-");
      t.end_row();
    }
    if (!cpus.empty()) {
      h->note("Interrupt time taken from traced threads, per CPU:");
      h->raw(t.done());
    }
  }
}

// A table of link rows: the columns every one opens with (where the link is,
// which op and size; `remote` names the peer's column), then `more`.
Table link_rows_table(const char* remote, std::vector<std::pair<std::string, bool>> more,
                      const std::string& id) {
  std::vector<std::pair<std::string, bool>> cols = {{"host", false},  {"rank", false},
                                                    {"local", false}, {remote, false},
                                                    {"op", false},    {"size", true}};
  cols.insert(cols.end(), more.begin(), more.end());
  return Table(cols, id);
}

// The cells of those first columns; the row is highlighted when `hi`.
void link_row_start(const LinkRow& l, bool hi, Table* t) {
  t->row(hi);
  t->td(l.host);
  t->td(l.rank);
  t->td(short_addr(l.local), "addr", l.local);
  t->td(short_addr(l.remote), "addr", l.remote);
  t->td(l.row.op);
  t->n(fmt_row_size(l.row));
}

void link_table(const std::vector<const LinkRow*>& rows, const std::string& id, Html* h) {
  Table t = link_rows_table("remote",
                            {{"ops", true},
                             {"p50", true},
                             {"p99", true},
                             {"max", true},
                             {"x median p99", true},
                             {"GB/s", true}},
                            id);
  for (const LinkRow* l : rows) {
    link_row_start(*l, l->outlier_ratio >= kOutlierRatio && !l->row.recv, &t);
    t.n(fmt_count(l->row.count));
    t.n(fmt_ns(l->row.p50_ns));
    t.n(fmt_ns(l->row.p99_ns));
    t.n(fmt_ns(l->row.max_ns));
    t.n(l->outlier_ratio > 0 ? fixed(l->outlier_ratio, 2) : "-");
    t.n(fixed(l->row.gbps, 3));
    t.end_row();
  }
  h->raw(t.done());
}

void section_links(const Job& job, const HtmlOptions& opt, Html* h) {
  h->h2("outliers", "Outlier and slowest links");
  const auto outl = outlier_links(job);
  char buf[200];
  std::snprintf(buf, sizeof(buf),
                "Outliers: links whose p99 is at least %.0fx the median p99 of the links with the "
                "same op and "
                "message size (receives left out). %zu found.",
                kOutlierRatio, outl.size());
  h->note(buf);
  if (!outl.empty()) {
    std::vector<const LinkRow*> rows(
        outl.begin(), outl.begin() + static_cast<long>(std::min(outl.size(), opt.max_table_rows)));
    link_table(rows, "outlier-table", h);
  }
  h->raw("<h3>Slowest by p99</h3>");
  const auto slow = slowest_links(job, opt.top);
  if (slow.empty())
    h->note("No completed sends, writes, reads or atomics.");
  else
    link_table(slow, "slowest-table", h);
}

void section_late(const Job& job, const HtmlOptions& opt, Html* h) {
  h->h2("late", "Receives posted late");
  h->note(
      "A receive was posted late when it was posted after the send of its message was issued. "
      "Only the per-op timelines of both ranks tell: each receive is paired with its send (per "
      "link and message family, in order, sizes checked) and their times compared on the "
      "aligned clock. Rows without that evidence say why; they are never called late. \"Done "
      "< 50 us\" is a different count: receives that completed less than 50 us after they were "
      "posted, which a message already waiting and a receive posted just in time on a fast path "
      "both give.");
  std::vector<const LinkRow*> rows;
  for (const LinkRow& l : job.links)
    if (l.row.recv && l.row.count) rows.push_back(&l);
  std::stable_sort(rows.begin(), rows.end(), [](const LinkRow* a, const LinkRow* b) {
    return a->posted.late > b->posted.late;
  });
  if (rows.empty()) {
    h->note("No receives.");
    return;
  }
  Table t = link_rows_table("from",
                            {{"receives", true},
                             {"done < 50 us", true},
                             {"matched", true},
                             {"posted late", true},
                             {"median lateness", true},
                             {"no verdict because", false}},
                            "late-table");
  for (size_t i = 0; i < rows.size() && i < opt.max_table_rows; ++i) {
    const LinkRow& l = *rows[i];
    link_row_start(l, l.posted.late > 0, &t);
    t.n(fmt_count(l.row.count));
    t.n(fmt_count(l.row.within_50us));
    t.n(fmt_count(l.posted.matched));
    t.n(fmt_count(l.posted.late));
    t.n(l.posted.late ? fmt_ns(l.posted.late_median_ns) : "");
    t.td(l.posted.unknown);
    t.end_row();
  }
  h->raw(t.done());
}

void section_problems(const Job& job, const HtmlOptions& opt, Html* h) {
  h->h2("problems", "Errors, refusals, ops not timed for a full ring, unfinished ops");
  // Ops untimed by design (injects and the like) are a count, not a problem.
  std::vector<const LinkRow*> rows;
  for (const LinkRow& l : job.links)
    if (l.row.errors || l.row.eagain || l.row.refused || l.row.ring_full || l.row.unfinished)
      rows.push_back(&l);
  std::stable_sort(rows.begin(), rows.end(), [](const LinkRow* a, const LinkRow* b) {
    const auto w = [](const OpRow& o) {
      return o.errors * 1000000 + o.unfinished * 1000 + o.ring_full + o.refused + o.eagain;
    };
    return w(a->row) > w(b->row);
  });
  std::string totals =
      fmt_count(job.errors) + " completions in error, " + fmt_count(job.eagain) +
      " EAGAIN refusals, " + fmt_count(job.refused) + " other refusals, " +
      fmt_count(job.unfinished) + " unfinished; " + fmt_count(job.ring_full) +
      " not timed for a full in-flight ring, " + fmt_count(job.cells_full) + " not aggregated, " +
      fmt_count(job.ops_dropped) +
      " per-op timeline records dropped. Not a problem: " + fmt_count(job.untimed) +
      " ops untimed by design (no completion will come: fi_inject*, FI_INJECT without "
      "FI_COMPLETION, selective completion; or their context must reach the provider "
      "unchanged).";
  h->note(totals);
  if (!rows.empty()) {
    Table t = link_rows_table("remote",
                              {{"errors", true},
                               {"EAGAIN", true},
                               {"refused", true},
                               {"ring full", true},
                               {"unfinished", true}},
                              "problem-table");
    for (size_t i = 0; i < rows.size() && i < opt.max_table_rows; ++i) {
      const LinkRow* l = rows[i];
      link_row_start(*l, l->row.errors > 0 || l->row.unfinished > 0, &t);
      t.n(fmt_count(l->row.errors));
      t.n(fmt_count(l->row.eagain));
      t.n(fmt_count(l->row.refused));
      t.n(fmt_count(l->row.ring_full));
      t.n(fmt_count(l->row.unfinished));
      t.end_row();
    }
    h->raw(t.done());
  }
  if (!job.partial.empty() || !job.skipped.empty()) {
    h->raw("<h3>Files</h3>");
    Table t({{"file", false}, {"", false}}, "file-table");
    for (const Skipped& s : job.skipped) {
      t.row(true);
      t.td(s.path, "addr");
      t.td("skipped: " + s.why);
      t.end_row();
    }
    for (const Skipped& s : job.partial) {
      t.row();
      t.td(s.path, "addr");
      t.td("used, but " + s.why);
      t.end_row();
    }
    h->raw(t.done());
  }
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
    t.td(r.host);
    t.td(r.rank);
    t.n(std::to_string(r.pid));
    t.td(r.providers);
    t.td(fmt_wall(r.start_wall_ns, true));
    t.n(fixed(r.duration_s, 3) + " s");
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

void card(Html* h, const std::string& v, const std::string& k) {
  h->raw("<div class=\"card\"><div class=\"v\">" + escape(v) + "</div><div class=\"k\">" +
         escape(k) + "</div></div>");
}

}  // namespace

std::string html_report(const Job& job, const HtmlOptions& opt) {
  Html h;
  h.raw(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>");
  h.text("fabtrace report" + (opt.dir.empty() ? std::string() : " - " + opt.dir));
  h.raw("</title>\n<style>");
  h.raw(kStyle);
  h.raw("</style>\n</head>\n<body>\n<header>\n<h1>fabtrace report</h1>\n<div class=\"sub\">");
  h.text(opt.dir.empty() ? std::string() : opt.dir + " \u00b7 ");
  h.text(job.first_wall_ns
             ? fmt_wall(job.first_wall_ns, true) + " .. " + fmt_wall(job.last_wall_ns, false)
             : std::string("no wall-clock anchor"));
  h.raw(
      "</div>\n<nav><a href=\"#heatmaps\">latency heatmaps</a><a href=\"#bandwidth\">bandwidth</a>"
      "<a href=\"#counters\">counters</a><a href=\"#stalls\">poll gaps</a><a "
      "href=\"#slowest\">slowest ops</a><a href=\"#outliers\">outliers</a>"
      "<a href=\"#late\">receives posted late</a><a href=\"#problems\">problems</a><a "
      "href=\"#ranks\">ranks</a>");
  if (!job.kernel.empty())
    h.raw(
        "<a href=\"#why\">why (kernel)</a><a href=\"#network\">network</a><a "
        "href=\"#nodes\">nodes</a>");
  for (const std::string& o : opt.outputs) {
    const size_t slash = o.find_last_of('/');
    const std::string name = slash == std::string::npos ? o : o.substr(slash + 1);
    h.raw("<a href=\"" + escape(name) + "\">" + escape(name) + "</a>");
  }
  h.raw("</nav>\n</header>\n");

  h.raw("<div class=\"cards\" id=\"shape\">");
  card(&h, std::to_string(job.hosts().size()), "nodes");
  card(&h, std::to_string(job.ranks.size()), "ranks");
  card(&h, std::to_string(job.nic_count()), "NICs (a domain of a rank)");
  card(&h, std::to_string(job.distinct_links()), "links");
  card(&h, fmt_count(job.ops), "ops (" + fmt_count(job.completed) + " completed)");
  card(&h, fmt_bytes(job.bytes), "moved (sends, writes, reads, atomics)");
  card(&h, job.first_wall_ns ? fixed((job.last_wall_ns - job.first_wall_ns) / 1e9, 3) + " s" : "?",
       "on the wall clock");
  const auto outl = outlier_links(job);
  card(&h, std::to_string(outl.size()), "outlier links");
  card(&h, job.stalls.empty() ? "-" : fmt_ns(job.stalls.front().cq.max_gap_ns),
       "longest CQ poll gap");
  card(&h, fmt_count(job.errors), "completions in error");
  h.raw("</div>\n");
  if (job.hosts().size() > 1)
    h.note(
        "Ranks of different nodes are placed on one wall clock through each rank's (monotonic, "
        "wall) "
        "anchor pair.");

  section_heatmaps(job, &h);
  section_bandwidth(job, &h);
  section_counters(job, opt, &h);
  section_stalls(job, opt, &h);
  section_stall_causes(job, opt, &h);
  if (opt.slowest) h.raw(slowest_ops_html(*opt.slowest));
  section_links(job, opt, &h);
  section_link_net(job, opt, &h);
  section_late(job, opt, &h);
  section_problems(job, opt, &h);
  section_ranks(job, opt, &h);
  section_kernel_nodes(job, &h);
  h.raw(
      "<footer>Written by fabtrace report. Every link row is in links.csv / links.json, every NIC "
      "in "
      "nics.csv / nics.json.</footer>\n");
  h.raw("<script>");
  h.raw(kScript);
  h.raw("</script>\n</body>\n</html>\n");
  return std::move(h.str());
}

bool write_html_report(const Job& job, const std::string& path, const HtmlOptions& opt,
                       std::string* error) {
  const std::string html = html_report(job, opt);
  ReplacingFile f;
  if (!f.open(path, error)) return false;
  std::FILE* stream = f.stream();
  if (!stream || std::fwrite(html.data(), 1, html.size(), stream) != html.size()) {
    if (error) *error = "writing " + path + " failed: " + std::strerror(errno);
    return false;
  }
  return f.commit(error);
}

}  // namespace fabtrace::report
