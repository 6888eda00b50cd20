// The HTML report and what feeds it: the heatmap model, the counter series
// reduced for plotting, and load_job over a synthetic job's files (reports,
// timelines and counters spread over per-node directories).
#include "userspace/report/html/html_report.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "fixtures/synthetic_job.h"
#include "fixtures/synthetic_tables.h"
#include "userspace/report/analysis/kernel_join.h"
#include "userspace/report/html/svg.h"
#include "userspace/report/job/job.h"
#include "userspace/report/job/report_reader.h"
#include "userspace/report/text/formats.h"
#include "userspace/report/text/summary.h"

namespace fabtrace::report {
namespace {

using test::job_of;

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) ++n;
  return n;
}

// The markup of the first <svg ...> whose opening tag contains `marker`.
std::string svg_with(const std::string& html, const std::string& marker) {
  const size_t m = html.find(marker);
  if (m == std::string::npos) return "";
  const size_t start = html.rfind("<svg", m);
  const size_t end = html.find("</svg>", m);
  if (start == std::string::npos || end == std::string::npos) return "";
  return html.substr(start, end + 6 - start);
}

// The heatmaps, at most `max_axis` keys an axis, of the synthetic job on
// `nodes` nodes of `ranks_per_node` ranks.
HeatmapSet heatmaps_of(int nodes, int ranks_per_node, size_t max_axis) {
  test::SyntheticOptions o;
  o.nodes = nodes;
  o.ranks_per_node = ranks_per_node;
  return build_heatmaps(job_of(test::make_synthetic_job(o)), max_axis);
}

TEST(ReportHeatmap, OneCellPerNicPairAndPlantedSlowLinkInItsCell) {
  const test::SyntheticJob sj = test::make_synthetic_job();
  const Job job = job_of(sj);
  const HeatmapSet set = build_heatmaps(job);
  EXPECT_FALSE(set.by_host);
  // Rows: the 4 local NICs; columns: the same 4 (in the same order) and "(any)".
  ASSERT_EQ(set.row_keys.size(), 4u);
  ASSERT_EQ(set.col_keys.size(), 5u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(set.row_keys[i], set.col_keys[i]);
  EXPECT_EQ(set.col_keys[4], "(any)");
  // Maps: fi_tsend 64 KiB, fi_write 1 MiB, fi_trecv 64 KiB.
  ASSERT_EQ(set.maps.size(), 3u);
  const Heatmap* tsend = nullptr;
  for (const Heatmap& m : set.maps) {
    EXPECT_EQ(m.cells.size(), 20u);
    if (m.op == "fi_tsend") tsend = &m;
  }
  ASSERT_NE(tsend, nullptr);
  EXPECT_EQ(std::string(size_class_name(tsend->size_class)), "\u2264 256 KiB");
  EXPECT_EQ(set.maps[set.default_map].op, "fi_tsend");  // the busiest non-receive map
  size_t r = 0, c = 0;
  for (size_t i = 0; i < 4; ++i) {
    if (set.row_keys[i] == sj.slow_local) r = i;
    if (set.col_keys[i] == sj.slow_remote) c = i;
  }
  const HeatCell& slow = tsend->cells[r * 5 + c];
  EXPECT_EQ(slow.count, 1000u);
  EXPECT_DOUBLE_EQ(slow.p99_ns, sj.slow_p99_ns);
  EXPECT_TRUE(slow.outlier);
  EXPECT_EQ(tsend->cells[0].count, 0u);  // nobody sends to itself
  size_t outliers = 0;
  for (const HeatCell& hc : tsend->cells) outliers += hc.outlier;
  EXPECT_EQ(outliers, 1u);
}

TEST(ReportHeatmap, ManyNicsGroupByHost) {
  const HeatmapSet set = heatmaps_of(4, 4, 8);
  EXPECT_TRUE(set.by_host);
  EXPECT_EQ(set.row_keys, (std::vector<std::string>{"node01", "node02", "node03", "node04"}));
  EXPECT_EQ(set.col_keys.size(), 5u);  // 4 hosts and "(any)"
  uint64_t total = 0;
  for (const Heatmap& m : set.maps)
    if (m.op == "fi_tsend")
      for (const HeatCell& hc : m.cells) total += hc.count;
  EXPECT_EQ(total, 16u * 15u * 1000u);
}

// More hosts than an axis holds: runs of consecutive hosts share a row and
// a column, and every op is still counted once.
TEST(ReportHeatmap, ManyHostsGroupIntoRuns) {
  const HeatmapSet set = heatmaps_of(9, 2, 4);
  EXPECT_TRUE(set.by_host);
  EXPECT_EQ(set.hosts_per_row, 3u);
  EXPECT_EQ(set.row_keys,
            (std::vector<std::string>{"node01..node03", "node04..node06", "node07..node09"}));
  EXPECT_EQ(set.col_keys, (std::vector<std::string>{"node01..node03", "node04..node06",
                                                    "node07..node09", "(any)"}));
  for (const Heatmap& m : set.maps) {
    if (m.op != "fi_tsend") continue;
    uint64_t total = 0, rows = 0;
    for (const HeatCell& hc : m.cells) total += hc.count, rows += hc.rows;
    EXPECT_EQ(total, 18u * 17u * 1000u);
    EXPECT_EQ(rows, 18u * 17u);
    // The diagonal cell of a run: its 6 ranks to each other.
    EXPECT_EQ(m.cells[0].rows, 6u * 5u);
    EXPECT_EQ(m.cells[1].rows, 6u * 6u);
  }
}

TEST(ReportHtml, SelfContainedWithEverySection) {
  const test::SyntheticJob sj = test::make_synthetic_job();
  const std::string dir = test::make_fixture_dir("html");
  test::write_synthetic_job(sj, dir);
  Job job;
  std::string err;
  ASSERT_TRUE(load_job(dir, &job, &err)) << err;
  HtmlOptions opt;
  opt.dir = dir;
  opt.outputs = {dir + "/out/links.csv"};
  const std::string html = html_report(job, opt);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  // Nothing from outside the document.
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(html.find("url(http"), std::string::npos);
  std::string no_ns = html;
  const std::string ns = "xmlns=\"http://www.w3.org/2000/svg\"";
  for (size_t p = no_ns.find(ns); p != std::string::npos; p = no_ns.find(ns, p))
    no_ns.erase(p, ns.size());
  EXPECT_EQ(no_ns.find("http://"), std::string::npos);
  EXPECT_EQ(no_ns.find("https://"), std::string::npos);
  // The default heatmaps (p50, p99) of fi_tsend, one cell per NIC pair.
  const std::string p50 = svg_with(html, "id=\"heatmap-");
  ASSERT_FALSE(p50.empty());
  EXPECT_NE(p50.find("class=\"heatmap\""), std::string::npos);
  EXPECT_EQ(count(p50, "class=\"hm-cell"), 20u);
  EXPECT_EQ(count(html, "<svg class=\"heatmap\""), 6u);  // 3 maps x (p50, p99)
  EXPECT_EQ(count(html, "class=\"hm-cell hm-outlier\""),
            2u);  // the slow link, in its p50 and p99 map
  EXPECT_EQ(count(html, "<option value=\"hm-"), 3u);
  EXPECT_NE(html.find("id=\"hm-select\""), std::string::npos);
  // Bandwidth bars, one per NIC.
  const std::string bars = svg_with(html, "id=\"bandwidth-bars\"");
  EXPECT_EQ(count(bars, "<g class=\"bar-row\">"), 4u);
  // Counter plots: 4 counters for each of the 4 ranks.
  EXPECT_EQ(count(html, "class=\"chart line-chart\""), 16u);
  EXPECT_NE(html.find(">hni_sts_tx_ok_octets</text>"), std::string::npos);
  EXPECT_EQ(html.find(">hni_idle</text>"), std::string::npos);  // never changes
  // Stall table, planted stall first.
  const size_t st = html.find("id=\"stall-table\"");
  ASSERT_NE(st, std::string::npos);
  const size_t first_row = html.find("<tr class=\"hi\">", st);
  ASSERT_NE(first_row, std::string::npos);
  EXPECT_NE(html.substr(first_row, 400).find("2026-01-01 00:00:03.750000 UTC"), std::string::npos);
  // Outlier table names the slow link.
  const size_t ot = html.find("id=\"outlier-table\"");
  ASSERT_NE(ot, std::string::npos);
  EXPECT_NE(html.find(short_addr(sj.slow_local), ot), std::string::npos);
  EXPECT_NE(html.find("id=\"late-table\""), std::string::npos);
  EXPECT_NE(html.find("id=\"problem-table\""), std::string::npos);
  EXPECT_NE(html.find("<a href=\"links.csv\">"), std::string::npos);
  // Well-formed enough: every svg closed.
  EXPECT_EQ(count(html, "<svg"), count(html, "</svg>"));
  EXPECT_EQ(count(html, "<table"), count(html, "</table>"));

  const std::string path = dir + "/report.html";
  ASSERT_TRUE(write_html_report(job, path, opt, &err)) << err;
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), html);
  test::remove_tree(dir);
}

TEST(ReportHtml, EmptyishJobStillRenders) {
  Job job;
  ProcessReport r;
  r.host = "h<1>";
  r.rank = "0";
  r.pid = 1;
  job.ranks.push_back(make_rank(r));
  build_job_tables(&job);
  const std::string html = html_report(job, HtmlOptions());
  EXPECT_NE(html.find("No completed ops"), std::string::npos);
  EXPECT_NE(html.find("h&lt;1&gt;"), std::string::npos);
  EXPECT_EQ(html.find("h<1>"), std::string::npos);
  EXPECT_NE(html.find("</html>"), std::string::npos);
}

TEST(ReportCounters, RatesOfCumulativeCountersLevelsOfTheRest) {
  const test::SyntheticJob sj = test::make_synthetic_job();
  const std::string dir = test::make_fixture_dir("counters");
  test::write_synthetic_job(sj, dir);
  CounterSeries cs;
  std::string err;
  ASSERT_TRUE(read_counter_csv(dir + "/" + test::counter_name(sj.reports[0]), &cs, &err)) << err;
  std::vector<CounterTrack> tracks;
  const int64_t offset = static_cast<int64_t>(sj.reports[0].start_wall_ns) -
                         static_cast<int64_t>(sj.reports[0].start_mono_ns);
  reduce_counter_series(cs, offset, 4, 400, &tracks);
  ASSERT_EQ(tracks.size(), 4u);
  std::map<std::string, const CounterTrack*> by;
  for (const CounterTrack& t : tracks) {
    EXPECT_EQ(t.device, "cxi0");
    by[t.name] = &t;
  }
  ASSERT_TRUE(by.count("hni_sts_tx_ok_octets"));
  ASSERT_TRUE(by.count("hni_pkts_sent"));
  ASSERT_TRUE(by.count("cq_in_use"));
  ASSERT_TRUE(by.count("rh:nacks"));
  EXPECT_FALSE(by.count("hni_idle"));       // never changes
  EXPECT_FALSE(by.count("hni_rx_paused"));  // changes least: not among the 4
  const CounterTrack& oct = *by["hni_sts_tx_ok_octets"];
  EXPECT_TRUE(oct.cumulative);
  EXPECT_EQ(oct.increase, 49ULL * 100000000ULL);  // the failed read (0) at sample 20 skipped
  ASSERT_EQ(oct.values.size(), 48u);
  for (double v : oct.values) EXPECT_DOUBLE_EQ(v, sj.octets_rate_per_s);
  // Times on the wall clock: the last sample, 4.9 s after the rank's start.
  EXPECT_EQ(oct.wall_ns.back(), sj.reports[0].start_wall_ns + 4900000000ULL);
  const CounterTrack& in_use = *by["cq_in_use"];
  EXPECT_FALSE(in_use.cumulative);
  for (double v : in_use.values) EXPECT_TRUE(v >= 3 && v <= 5) << v;
  // Fewer points than samples: rates over buckets keep the mean rate.
  reduce_counter_series(cs, offset, 1, 7, &tracks);
  ASSERT_EQ(tracks.size(), 1u);
  EXPECT_LE(tracks[0].values.size(), 7u);
  test::remove_tree(dir);
}

TEST(ReportLoader, ReadsASyntheticJobSpreadOverNodeDirectories) {
  const test::SyntheticJob sj = test::make_synthetic_job();
  const std::string dir = test::make_fixture_dir("loader");
  test::write_synthetic_job(sj, dir, /*per_node_dirs=*/true);
  // A previous report's output inside DIR is not read back as input.
  std::filesystem::create_directories(dir + "/out");
  std::ofstream(dir + "/out/" + test::report_name(sj.reports[0])) << "{}";
  LoadOptions opt;
  opt.exclude_dirs = {dir + "/out"};
  Job job;
  std::string err;
  ASSERT_TRUE(load_job(dir, opt, &job, &err)) << err;
  EXPECT_TRUE(job.skipped.empty()) << job.skipped[0].path << ": " << job.skipped[0].why;
  EXPECT_TRUE(job.partial.empty());
  ASSERT_EQ(job.ranks.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    const Rank& r = job.ranks[i];
    EXPECT_EQ(r.rank(), std::to_string(i));  // sorted by host, then rank
    EXPECT_FALSE(r.oplog_path.empty());
    EXPECT_EQ(r.oplog_ops, sj.oplog_ops_per_rank);
    EXPECT_TRUE(r.oplog_ended);
    EXPECT_FALSE(r.counters_path.empty());
    EXPECT_EQ(r.counter_samples, 50u);
    EXPECT_EQ(r.counter_tracks.size(), 4u);
    EXPECT_EQ(r.wall_offset_ns(),
              static_cast<int64_t>(sj.reports[i].start_wall_ns - sj.reports[i].start_mono_ns));
  }
  EXPECT_EQ(job.ops_dropped, sj.ops_dropped);
  EXPECT_EQ(job.ops, sj.ops);
  EXPECT_EQ(job.stalls[0].end_wall_ns, sj.stall_end_wall_ns);
  // Without the exclusion, the stray file is named.
  Job again;
  ASSERT_TRUE(load_job(dir, &again, &err));
  ASSERT_EQ(again.skipped.size(), 1u);
  EXPECT_EQ(again.skipped[0].path, dir + "/out/" + test::report_name(sj.reports[0]));
  test::remove_tree(dir);
}

TEST(ReportLoader, TimelineCutShortOrWithoutReportIsSaidSo) {
  const test::SyntheticJob sj = test::make_synthetic_job();
  const std::string dir = test::make_fixture_dir("loader-cut");
  test::write_synthetic_job(sj, dir);
  // Rank 3's timeline loses its tail; rank 2's report is gone.
  const std::string op3 = dir + "/" + test::oplog_name(sj.reports[3]);
  std::filesystem::resize_file(op3, std::filesystem::file_size(op3) - 30);
  std::filesystem::remove(dir + "/" + test::report_name(sj.reports[2]));
  Job job;
  std::string err;
  ASSERT_TRUE(load_job(dir, &job, &err)) << err;
  EXPECT_EQ(job.ranks.size(), 3u);
  std::map<std::string, std::string> skipped, partial;
  for (const Skipped& s : job.skipped) skipped[s.path] = s.why;
  for (const Skipped& s : job.partial) partial[s.path] = s.why;
  EXPECT_EQ(skipped.size(), 2u);  // rank 2's timeline and counters have no report
  EXPECT_NE(skipped[dir + "/" + test::oplog_name(sj.reports[2])].find("no report"),
            std::string::npos);
  EXPECT_NE(skipped[dir + "/" + test::counter_name(sj.reports[2])].find("no report"),
            std::string::npos);
  ASSERT_EQ(partial.size(), 1u);
  EXPECT_FALSE(partial[op3].empty());
  test::remove_tree(dir);
}

TEST(ReportSvg, Helpers) {
  EXPECT_EQ(svg::escape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
  EXPECT_EQ(svg::num(1.0), "1");
  EXPECT_EQ(svg::num(2.25), "2.25");
  EXPECT_EQ(svg::num(0.1), "0.1");
  EXPECT_EQ(svg::hex(svg::ramp(0)), "#440154");
  EXPECT_EQ(svg::hex(svg::ramp(1)), "#fde725");
  EXPECT_EQ(svg::nice_ticks(0, 10, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  const svg::Scale log(10, 1000, true);
  EXPECT_DOUBLE_EQ(log(100), 0.5);
  EXPECT_EQ(svg::short_num(1500), "1.5k");
  EXPECT_EQ(size_class(64), 0);
  EXPECT_EQ(size_class(65), 1);
  EXPECT_EQ(size_class(1 << 20), 4);
  EXPECT_EQ(size_class(5 << 20), 5);
}

// A bar's value label ("0.009 GB/s (peak 0.021 GB/s)", the longest bar's
// drawn right of it) fits inside the chart at 7 px a character of its 12 px
// font: the value column was a fixed 110 px, and the demo's label was cut at
// "(peak 0".
TEST(ReportHtml, BarValueFits) {
  std::vector<svg::Bar> bars(2);
  bars[0].label = "host r0 pid 1 tcp 10.0.0.1:1234";
  bars[0].value = 9;
  bars[0].value_text = "0.009 GB/s (peak 0.021 GB/s)";
  bars[1].label = "host r1 pid 2 tcp 10.0.0.2:1234";
  bars[1].value = 3;
  bars[1].value_text = "0.003 GB/s (peak 12345.678 GB/s)";
  const std::string s = svg::bar_chart("b", bars, 900);
  const double width = std::stod(s.substr(s.find(" width=\"") + 8));
  const std::string key = "<text class=\"bar-value\" x=\"";
  size_t at = 0, seen = 0;
  while ((at = s.find(key, at)) != std::string::npos) {
    at += key.size();
    const double x = std::stod(s.substr(at));
    const size_t text = s.find('>', at) + 1;
    const size_t len = s.find("</text>", text) - text;
    EXPECT_LE(x + 7.0 * static_cast<double>(len), width) << s.substr(text, len);
    ++seen;
  }
  EXPECT_EQ(seen, 2u);
}

}  // namespace
}  // namespace fabtrace::report
