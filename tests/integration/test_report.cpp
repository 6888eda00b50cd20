// `fabtrace report` on real traced runs: ft_app (tcp;ofi_rxm, tagged, with its
// per-op timelines and NIC counters sampled from a fake cxi tree) and
// fi_pingpong, two ranks each. The summary, links.csv and report.html are
// checked against the ranks' own JSON reports; bad files dropped into the
// directory are named and skipped; the HTML is rendered in headless Chromium
// (skipped when Chromium is not installed).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "fixtures/kernel_fixture.h"
#include "fixtures/synthetic_job.h"
#include "tests/integration/harness.h"
#include "tests/integration/sample_stepper.h"
#include "tests/support/require_program.h"
#include "tests/unit/fake_cxi_tree.h"

namespace fabtrace::test {
namespace {

constexpr const char* kChromium = "/usr/bin/chromium";

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::vector<std::string> with(std::vector<std::string> v, const std::vector<std::string>& more) {
  v.insert(v.end(), more.begin(), more.end());
  return v;
}

// A real two-rank ft_app run (tagged over tcp;ofi_rxm) with timelines on and
// NIC counters sampled from a fake cxi tree. The tree advances in step with the
// samplers' reads and the ranks stay up until 8 steps were read (SampleStepper),
// so the counter series change whatever the machine's load.
std::string ftapp_run() {
  const std::string dir = make_temp_dir("report-ftapp");
  FakeCxiTree tree;
  tree.populate_standard();
  SampleStepper stepper(tree, tree.telemetry_path("cxi0", "hni_sts_tx_ok_octets"), 8,
                        dir + "/release");
  EXPECT_TRUE(stepper.watching()) << stepper.error();
  const RunResult r = run(
      {FT_APP, "--prov", "tcp;ofi_rxm", "--test", "tagged", "--count", "400", "--size", "4096",
       "--timeout", "100", "--hold-until", stepper.release_path()},
      sampled_env(
          tree,
          {{"FABTRACE_DIR", dir}, {"FABTRACE_OPS_RANKS", "all"}, {"FABTRACE_OPS_MIN_BYTES", "0"}}),
      true, 240);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(stepper.steps_taken(), 8);
  ::unlink(stepper.release_path().c_str());  // not one of the job's files
  return dir;
}

std::string pingpong_run() {
  const std::string dir = make_temp_dir("report-pingpong");
  const std::string port = std::to_string(free_port());
  const std::vector<std::string> args = {"fi_pingpong", "-p",  "tcp;ofi_rxm", "-e",  "rdm",
                                         "-I",          "300", "-S",          "4096"};
  const int server =
      spawn(with(args, {"-B", port}), {{"FABTRACE_DIR", dir}, {"RANK", "1"}}, dir + "/server.log");
  EXPECT_TRUE(wait_listening(std::stoi(port))) << "the server never listened on " << port;
  const RunResult client =
      run(with(args, {"-P", port, "127.0.0.1"}), {{"FABTRACE_DIR", dir}, {"RANK", "0"}});
  EXPECT_EQ(client.exit_code, 0) << client.output;
  EXPECT_EQ(wait_for(server), 0);
  return dir;
}

std::vector<nlohmann::json> all_reports(const std::string& dir) {
  std::vector<nlohmann::json> out;
  for (const std::string& f : list_files(dir, "fabtrace.", ".json")) out.push_back(load_json(f));
  return out;
}

// The summary's per-op totals: the "ops" line and its continuation lines.
std::map<std::string, uint64_t> summary_ops(const std::string& summary) {
  std::map<std::string, uint64_t> out;
  std::istringstream in(summary);
  std::string line;
  bool in_ops = false;
  while (std::getline(in, line)) {
    if (line.rfind("ops       ", 0) == 0) {
      in_ops = true;
    } else if (!in_ops || line.rfind("          ", 0) != 0) {
      if (in_ops) break;
      continue;
    }
    std::istringstream words(line.substr(10));
    std::string op, n;
    while (words >> op >> n) {
      std::string digits;
      for (char c : n)
        if (c != ',') digits += c;
      out[op] = std::stoull(digits);
    }
  }
  return out;
}

std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  // The addresses and names of these runs hold no commas or quotes.
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(slurp(path));
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string x;
    while (std::getline(ss, x, ',')) f.push_back(x);
    if (!line.empty() && line.back() == ',') f.push_back("");
    rows.push_back(f);
  }
  return rows;
}

// Every check of one run's report against its ranks' JSON reports.
void check_report(const std::vector<nlohmann::json>& reps, const Cli& cli, const std::string& out) {
  ASSERT_EQ(cli.rc, 0) << cli.out << cli.err;
  ASSERT_EQ(reps.size(), 2u);
  EXPECT_NE(cli.out.find("1 node ("), std::string::npos) << cli.out;
  EXPECT_NE(cli.out.find(", 2 ranks,"), std::string::npos) << cli.out;

  // Op totals: the summary's equal the sums of the reports'.
  std::map<std::string, uint64_t> want;
  uint64_t issued = 0, completed = 0;
  for (const auto& rep : reps)
    for (const auto& kv : op_totals(rep)) {
      want[kv.first] += kv.second.issued();
      issued += kv.second.issued();
      completed += kv.second.count;
    }
  EXPECT_EQ(summary_ops(cli.out), want) << cli.out;
  std::ostringstream total;
  total << " ops (" << completed << " completed)";
  std::string summary_digits;  // the summary groups digits with commas
  for (char c : cli.out)
    if (c != ',') summary_digits += c;
  EXPECT_NE(summary_digits.find(std::to_string(issued) + total.str()), std::string::npos)
      << cli.out;

  // links.csv: one row per (rank, link, op, size) of the reports, same numbers.
  const auto csv = read_csv(out + "/links.csv");
  ASSERT_GE(csv.size(), 1u);
  ASSERT_EQ(csv[0][0], "host");
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < csv[0].size(); ++i) col[csv[0][i]] = i;
  size_t rows = 0;
  std::set<size_t> matched;
  for (const auto& rep : reps)
    for (const auto& link : rep.at("links"))
      for (const auto& o : link.at("ops")) {
        ++rows;
        bool found = false;
        for (size_t i = 1; i < csv.size() && !found; ++i) {
          const auto& c = csv[i];
          if (c.size() != csv[0].size() || matched.count(i)) continue;
          if (c[col["rank"]] != rep.at("rank").get<std::string>() ||
              c[col["pid"]] != std::to_string(rep.at("pid").get<long>()) ||
              c[col["local"]] != link.at("local").get<std::string>() ||
              c[col["remote"]] != link.at("remote").get<std::string>() ||
              c[col["op"]] != o.at("op").get<std::string>() ||
              c[col["bytes"]] != std::to_string(o.at("bytes").get<uint64_t>()))
            continue;
          found = true;
          matched.insert(i);
          for (const char* k :
               {"count", "errors", "untimed", "ring_full", "unfinished", "eagain", "refused"})
            EXPECT_EQ(c[col[k]], std::to_string(o.at(k).get<uint64_t>())) << k;
          EXPECT_EQ(c[col["host"]], rep.at("host").get<std::string>());
          EXPECT_DOUBLE_EQ(std::stod(c[col["p99_ns"]]), o.at("p99_ns").get<double>());
          EXPECT_DOUBLE_EQ(std::stod(c[col["p50_ns"]]), o.at("p50_ns").get<double>());
        }
        EXPECT_TRUE(found) << link.dump() << " " << o.dump();
      }
  EXPECT_EQ(csv.size() - 1, rows);
  // links.json has the same rows.
  const nlohmann::json lj = load_json(out + "/links.json");
  EXPECT_EQ(lj.size(), rows);

  // report.html is there and whole.
  const std::string html = slurp(out + "/report.html");
  EXPECT_GT(html.size(), 1000u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  EXPECT_NE(html.find("class=\"heatmap\""), std::string::npos);
  EXPECT_TRUE(exists(out + "/nics.csv"));
  EXPECT_TRUE(exists(out + "/nics.json"));
}

TEST(Report, RealFtAppRun) {
  SKIP_IF_RECORD_SESSION(kNeedsOwnSampler);
  const std::string dir = ftapp_run();
  const std::string out = dir + "/out";
  const Cli cli = report_cli(dir, out);
  check_report(all_reports(dir), cli, out);
  EXPECT_EQ(cli.err.find("skipped"), std::string::npos) << cli.err;
  // ft_app's ranks had timelines and counter series: both made it in.
  const std::string html = slurp(out + "/report.html");
  EXPECT_NE(html.find("class=\"chart line-chart\""), std::string::npos) << "no counter plot";
}

TEST(Report, RealFiPingpongRun) {
  const std::string dir = pingpong_run();
  const std::string out = dir + "/out";
  const Cli cli = report_cli(dir, out);
  check_report(all_reports(dir), cli, out);
  // fi_pingpong: receives are filed under their size; their imm share is listed in links.csv.
  const auto csv = read_csv(out + "/links.csv");
  bool recv = false;
  for (size_t i = 1; i < csv.size(); ++i)
    recv = recv || csv[i][5].find("recv") != std::string::npos;
  EXPECT_TRUE(recv);
}

// Corrupt and foreign files dropped among the real ones: each is named once
// on stderr and skipped; the rest is reported as before.
TEST(Report, BadFilesAreNamedAndSkipped) {
  SKIP_IF_RECORD_SESSION(kNeedsOwnSampler);
  const std::string dir = ftapp_run();
  const std::vector<nlohmann::json> real = all_reports(dir);
  const Cli before = report_cli(dir, dir + "/out1");
  ASSERT_EQ(before.rc, 0) << before.err;
  const auto reps = list_files(dir, "fabtrace.", ".json");
  ASSERT_EQ(reps.size(), 2u);
  const std::string good = slurp(reps[0]);
  const std::string corrupt = dir + "/fabtrace.node9.r5.p55.json";
  const std::string foreign = dir + "/fabtrace.node9.r6.p66.json";
  const std::string bad_oplog = dir + "/fabtrace_ops.node9.r7.p77.oplog";
  std::ofstream(corrupt) << good.substr(0, good.size() / 2);
  std::ofstream(foreign) << "{\"traceEvents\": [], \"displayTimeUnit\": \"ns\"}";
  std::ofstream(bad_oplog) << "definitely not an oplog";

  const std::string out = dir + "/out2";
  const Cli cli = report_cli(dir, out);
  check_report(real, cli, out);  // exit 0, 2 ranks, the same totals and rows
  for (const std::string& f : {corrupt, foreign, bad_oplog}) {
    const std::string msg = "fabtrace report: skipped " + f + ": ";
    const size_t at = cli.err.find(msg);
    EXPECT_NE(at, std::string::npos) << cli.err;
    EXPECT_EQ(cli.err.find(msg, at + 1), std::string::npos) << "named once: " << cli.err;
  }
  EXPECT_NE(cli.err.find(corrupt + ": truncated"), std::string::npos) << cli.err;
  EXPECT_NE(cli.err.find(foreign + ": foreign"), std::string::npos) << cli.err;
  EXPECT_NE(cli.out.find("skipped   3 files (named on stderr)"), std::string::npos) << cli.out;
  EXPECT_EQ(slurp(out + "/links.csv"), slurp(dir + "/out1/links.csv"));
  // The previous outputs under DIR (out1) were not taken for inputs.
  EXPECT_EQ(cli.err.find("/out1/"), std::string::npos) << cli.err;
}

// The ranks' reports parsed on one thread or on several: the same summary,
// the same stderr and the same files, byte for byte (tables, HTML, Perfetto
// trace), on a synthetic job with timelines and counters and a corrupt file.
TEST(Report, OneThreadAndTwoWriteTheSameOutputs) {
  const std::string dir = make_temp_dir("report-threads");
  SyntheticOptions o;
  o.nodes = 3;
  o.ranks_per_node = 4;
  const SyntheticJob sj = make_synthetic_job(o);
  write_synthetic_job(sj, dir + "/job", /*per_node_dirs=*/true);
  std::ofstream(dir + "/job/fabtrace.cut.r99.p99.json")
      << report_json_text(sj.reports[0]).substr(0, 100);
  const std::string out = dir + "/out";
  std::string first;
  for (const char* threads : {"1", "2"}) {
    const std::string err_file = dir + "/stderr";
    const RunResult r =
        run({"sh", "-c", "exec \"$0\" report \"$1\" -o \"$2\" --threads \"$3\" 2>\"$4\"",
             FABTRACE_CLI, dir + "/job", out, threads, err_file},
            {}, false, 120);
    ASSERT_EQ(r.exit_code, 0) << slurp(err_file);
    std::string all = "stdout\n" + r.output + "stderr\n" + slurp(err_file);
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::recursive_directory_iterator(out))
      if (e.is_regular_file()) files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    EXPECT_GE(files.size(), 7u);  // report.html, links/nics/stalls .csv/.json, a trace
    for (const std::string& f : files) all += "== " + f + "\n" + slurp(f);
    std::filesystem::remove_all(out);
    if (first.empty())
      first = all;
    else
      EXPECT_TRUE(all == first) << "--threads " << threads << " wrote other outputs";
  }
  EXPECT_NE(first.find("fabtrace.cut.r99.p99.json: truncated"), std::string::npos);
}

// --zstd-links-above N: a job of more link rows than N gets links.csv.zst
// (the bytes of the links.csv it gets otherwise, as `zstd -dc` reads them
// back) and no links.json; the summary and the HTML name the file.
TEST(Report, LinksCsvZstAboveTheThreshold) {
  const std::string dir = make_temp_dir("report-zst");
  SyntheticOptions o;
  o.nodes = 3;
  o.ranks_per_node = 4;  // 12 ranks, 156 link rows
  write_synthetic_job(make_synthetic_job(o), dir + "/job");
  const auto report = [&](const std::string& out, const char* above) {
    return run({FABTRACE_CLI, "report", dir + "/job", "-o", out, "--no-trace", "--zstd-links-above",
                above},
               {}, false, 120);
  };
  const RunResult csv = report(dir + "/csv", "156");
  ASSERT_EQ(csv.exit_code, 0) << csv.output;
  ASSERT_TRUE(exists(dir + "/csv/links.json"));
  EXPECT_FALSE(exists(dir + "/csv/links.csv.zst"));
  const RunResult zst = report(dir + "/zst", "155");
  ASSERT_EQ(zst.exit_code, 0) << zst.output;
  EXPECT_FALSE(exists(dir + "/zst/links.csv"));
  EXPECT_FALSE(exists(dir + "/zst/links.json"));
  EXPECT_NE(zst.output.find(dir + "/zst/links.csv.zst"), std::string::npos) << zst.output;
  EXPECT_EQ(zst.output.find(dir + "/zst/links.json"), std::string::npos) << zst.output;
  const RunResult dc = run({"zstd", "-dcq", dir + "/zst/links.csv.zst"}, {}, false, 60);
  ASSERT_EQ(dc.exit_code, 0);
  const std::string want = slurp(dir + "/csv/links.csv");
  EXPECT_EQ(std::count(want.begin(), want.end(), '\n'), 157);
  EXPECT_TRUE(dc.output == want) << "zstd -dc links.csv.zst differs from links.csv";
  const std::string html = slurp(dir + "/zst/report.html");
  EXPECT_NE(html.find("<a href=\"links.csv.zst\">"), std::string::npos);
  EXPECT_NE(html.find("Every link row is in links.csv.zst,"), std::string::npos);
}

TEST(Report, NothingUsableIsAnError) {
  const std::string dir = make_temp_dir("report-nothing");
  std::ofstream(dir + "/fabtrace.h.r0.p1.json") << "{\"format\": \"fabtrace-rep";
  const Cli cli = report_cli(dir, dir + "/out");
  EXPECT_EQ(cli.rc, 1);
  EXPECT_NE(cli.err.find("skipped " + dir + "/fabtrace.h.r0.p1.json: truncated"), std::string::npos)
      << cli.err;
  EXPECT_NE(cli.err.find("no usable fabtrace report"), std::string::npos) << cli.err;
  EXPECT_FALSE(exists(dir + "/out/report.html"));
  const Cli missing = report_cli(dir + "/nope", dir + "/out");
  EXPECT_EQ(missing.rc, 1);
  EXPECT_NE(missing.err.find(dir + "/nope"), std::string::npos) << missing.err;
}

// The report in a real browser: no script error, and the heatmap (one cell
// per NIC pair) in the rendered DOM.
// Runs headless Chromium on a page (`what`: --dump-dom, --screenshot=...), its
// stdout into stdout_file; returns its log (console messages are in it).
std::string chromium(const std::string& page, const std::string& what,
                     const std::string& stdout_file) {
  const std::string log = make_temp_dir("chromium-log") + "/stderr";
  const std::string profile = make_temp_dir("chromium-profile");
  const RunResult r = run({"sh",
                           "-c",
                           "out=$0; log=$1; shift; exec \"$@\" >\"$out\" 2>\"$log\"",
                           stdout_file,
                           log,
                           kChromium,
                           "--headless",
                           "--no-sandbox",
                           "--disable-gpu",
                           "--disable-quic",
                           "--no-first-run",
                           "--disable-background-networking",
                           "--disable-component-update",
                           "--disable-sync",
                           "--user-data-dir=" + profile,
                           "--enable-logging=stderr",
                           "--v=0",
                           "--window-size=1400,2000",
                           what,
                           page},
                          {}, false, 120);
  EXPECT_EQ(r.exit_code, 0) << slurp(log);
  return slurp(log);
}

// The page's DOM after its script ran, with no console message or uncaught error.
std::string rendered_dom(const std::string& out) {
  const std::string page = "file://" + out + "/report.html";
  const std::string dom_file = out + "/dom.html";
  const std::string log = chromium(page, "--dump-dom", dom_file);
  std::istringstream lines(log);
  std::string line;
  while (std::getline(lines, line)) {
    EXPECT_EQ(line.find("Uncaught"), std::string::npos) << line;
    if (line.find(":CONSOLE") != std::string::npos) ADD_FAILURE() << "console message: " << line;
  }
  const std::string dom = slurp(dom_file);
  EXPECT_FALSE(dom.empty()) << log;
  EXPECT_NE(dom.find("data-script=\"ok\""), std::string::npos)
      << "the inline script did not run to its end";
  return dom;
}

TEST(Report, HtmlRendersInHeadlessChromium) {
  SKIP_IF_RECORD_SESSION(kNeedsOwnSampler);
  REQUIRE_PROGRAM(kChromium, "chromium");
  const std::string dir = ftapp_run();
  const std::string out = dir + "/out";
  const Cli cli = report_cli(dir, out);
  ASSERT_EQ(cli.rc, 0) << cli.err;
  const std::string page = "file://" + out + "/report.html";
  const std::string dom = rendered_dom(out);
  ASSERT_FALSE(dom.empty());
  // The first heatmap and its cells: rows x columns of links.csv's local and remote NICs.
  const auto csv = read_csv(out + "/links.csv");
  std::set<std::string> locals, remotes;
  for (size_t i = 1; i < csv.size(); ++i)
    if (csv[i].size() > 8 && csv[i][7] != "0") {  // rows with completions
      locals.insert(csv[i][3]);
      remotes.insert(csv[i][4]);
    }
  const size_t at = dom.find("<svg class=\"heatmap\" id=\"heatmap-");
  ASSERT_NE(at, std::string::npos) << dom.substr(0, 2000);
  const std::string svg = dom.substr(at, dom.find("</svg>", at) - at);
  size_t cells = 0;
  for (size_t p = svg.find("class=\"hm-cell"); p != std::string::npos;
       p = svg.find("class=\"hm-cell", p + 1))
    ++cells;
  EXPECT_EQ(cells, locals.size() * remotes.size()) << svg.substr(0, 3000);
  EXPECT_GE(cells, 2u);

  // A picture, for people.
  const std::string png = out + "/report.png";
  chromium(page, "--screenshot=" + png, out + "/screenshot.stdout");
  const std::string img = slurp(png);
  ASSERT_GT(img.size(), 1000u);
  EXPECT_EQ(img.substr(1, 3), "PNG");
  std::printf("screenshot: %s\n", png.c_str());
}

// A job with a node's kernel log (the kernel fixture): the kernel sections of
// the page render in Chromium with the planted causes.
TEST(Report, KernelSectionsRenderInHeadlessChromium) {
  REQUIRE_PROGRAM(kChromium, "chromium");
  const std::string dir = make_temp_dir("report-kernel-html");
  write_kernel_fixture(dir);
  const std::string out = dir + "/out";
  const Cli cli = report_cli(dir, out);
  ASSERT_EQ(cli.rc, 0) << cli.err;
  const std::string dom = rendered_dom(out);
  for (const char* id : {"id=\"why-table\"", "id=\"net-table\"", "id=\"nodes\""})
    EXPECT_NE(dom.find(id), std::string::npos) << id;
  EXPECT_NE(dom.find("preempted by stress-ng[4312] for 48.1 of 50.2 ms"), std::string::npos);
  // The summary on stdout says the same.
  EXPECT_NE(cli.out.find("why: preempted by stress-ng[4312] for 48.1 of 50.2 ms"),
            std::string::npos)
      << cli.out;
}

}  // namespace
}  // namespace fabtrace::test
