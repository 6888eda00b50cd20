// The HTML report's latency heatmaps: a pair of SVG maps (p50, p99) per op
// and size class, and the selector between them.
#include "userspace/report/html/heatmap_model.h"
#include "userspace/report/html/sections.h"

#include <algorithm>
#include <string>

#include "userspace/report/html/svg.h"
#include "userspace/report/text/formats.h"
#include "userspace/report/text/summary.h"

namespace fabtrace::report::html_page {

using svg::escape;
using svg::num;

namespace {

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

}  // namespace

void section_heatmaps(const Job& job, Html* h) {
  h->h2("heatmaps", "Latency by NIC pair");
  const HeatmapSet set = build_heatmaps(job);
  if (set.maps.empty()) {
    h->note("No completed ops: nothing to map.");
    return;
  }
  h->note(
      std::string("Rows: local NIC; columns: remote NIC") +
      (set.hosts_per_row > 1 ? " (too many NICs and hosts: grouped by runs of " +
                                   std::to_string(set.hosts_per_row) + " hosts)"
       : set.by_host ? " (too many NICs: grouped by host)"
                     : "") +
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

}  // namespace fabtrace::report::html_page
