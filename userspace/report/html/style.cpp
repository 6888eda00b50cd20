// The HTML report's inline style sheet and its one script (the heatmap
// selector; the page reads fine without it), and the start of every page.
#include "userspace/report/html/page.h"

namespace fabtrace::report::html_page {

const char* const kStyle = R"CSS(
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

const char* const kScript = R"JS(
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

void begin_page(Html* h, const std::string& title, const std::string& heading) {
  h->raw(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>");
  h->text(title);
  h->raw("</title>\n<style>");
  h->raw(kStyle);
  h->raw("</style>\n</head>\n<body>\n<header>\n<h1>");
  h->text(heading);
  h->raw("</h1>\n");
}

}  // namespace fabtrace::report::html_page
