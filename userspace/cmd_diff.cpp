// fabtrace diff A B: two runs compared (report/diff/job_diff.h): what changed on
// stdout, --html FILE a page of it, and with --fail-above R an exit status a
// CI job can gate on.
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "common/printable.h"
#include "common/safe_output.h"
#include "userspace/cli/cli.h"
#include "userspace/commands.h"
#include "userspace/report/job/job.h"
#include "userspace/report/diff/job_diff.h"
#include "userspace/report/job/json_tree.h"
#include "userspace/report/tables/manifest.h"
#include "userspace/report/job/report_reader.h"

namespace fabtrace {

namespace {

constexpr int kGateTripped = 1;
constexpr int kCannot = 2;  // an input that cannot be used, an output that cannot be written

// The job directory a report directory (fabtrace report's OUTDIR) was
// written from: the "dir" its manifest.json names, when that holds reports;
// else "" (not a report directory, or its job is not where it was).
std::string job_of_report_dir(const std::string& dir) {
  std::string text, why;
  if (!report::read_report_text(dir + "/manifest.json", &text, &why)) return "";
  report::JsonTree tree;
  report::JsonError err;
  report::JsonNode format, job_dir;
  if (!tree.parse(text, &err, 8) || !tree.root().find("format", &format) ||
      format.str() != report::kManifestFormat || !tree.root().find("dir", &job_dir))
    return "";
  return std::string(job_dir.str());
}

// Loads run `which` from `dir`: a directory of rank reports (read
// recursively, as fabtrace report reads it), or a report directory, whose
// manifest names its job directory (relative to where fabtrace report ran:
// tried as it is, then as the report directory's parent, the default
// layout DIR/fabtrace-report).
bool load_run(const char* which, const std::string& dir, report::Job* job) {
  report::LoadOptions lopt;
  lopt.read_counters = false;
  lopt.match_receives = [](report::Job*) {};  // the "posted late" evidence is not compared
  std::string err;
  if (!report::load_job(dir, lopt, job, &err)) {
    std::fprintf(stderr, "fabtrace diff: %s: %s\n", which, printable(err).c_str());
    return false;
  }
  if (job->ranks.empty()) {
    const std::string named = job_of_report_dir(dir);
    if (!named.empty()) {
      std::string parent = dir;
      while (parent.size() > 1 && parent.back() == '/') parent.pop_back();
      parent = parent.find('/') == std::string::npos ? "." : parent.substr(0, parent.rfind('/'));
      for (const std::string& cand : {named, parent}) {
        report::Job j;
        if (!report::load_job(cand, lopt, &j, &err) || j.ranks.empty()) continue;
        std::fprintf(stderr,
                     "fabtrace diff: %s: %s is a report directory: its job is read from %s\n",
                     which, printable(dir).c_str(), printable(cand).c_str());
        *job = std::move(j);
        break;
      }
    }
  }
  for (const report::Skipped& s : job->skipped)
    std::fprintf(stderr, "fabtrace diff: %s: skipped %s: %s\n", which, printable(s.path).c_str(),
                 printable(s.why).c_str());
  if (job->ranks.empty()) {
    std::fprintf(
        stderr,
        "fabtrace diff: %s: no usable fabtrace report (fabtrace.<host>.r<rank>.p<pid>.json) "
        "under %s\n",
        which, printable(dir).c_str());
    return false;
  }
  return true;
}

bool write_file(const std::string& path, const std::string& text) {
  std::string err;
  ReplacingFile f;
  if (f.open(path, &err)) {
    std::FILE* out = f.stream();
    if (out && std::fwrite(text.data(), 1, text.size(), out) == text.size() && f.commit(&err))
      return true;
    if (err.empty()) err = "writing " + path + " failed: " + std::strerror(errno);
  }
  std::fprintf(stderr, "fabtrace diff: --html: %s\n", printable(err).c_str());
  return false;
}

}  // namespace

void add_diff_command(cli::Cli& cli, CLI::App& parent) {
  auto a = std::make_shared<DiffArgs>();
  CLI::App* c = cli.add_command(
      parent, "diff",
      "two runs compared, B against A: the links, NICs and ops whose p50, p99 or bandwidth "
      "changed, with ratios; stalls new or gone and why; the op mix and counts. --fail-above R: "
      "exit 1 when a link or NIC is more than R times slower",
      [a] { return diff_runs(*a); });
  cli.require(c->add_option("A", a->dir_a,
                            "the first run: its per-rank outputs (FABTRACE_DIR), or the "
                            "directory fabtrace report wrote"));
  cli.require(c->add_option("B", a->dir_b, "the second run, the same way"));
  cli::add_ratio(c, "--threshold",
                 "list a figure that changed by R times or more either way (default 1.2)", 1.001,
                 1e6, [a](double v) { a->threshold = v; });
  cli::add_number(c, "--min-ops",
                  "compare a link row or NIC only when it has at least N completions in both "
                  "runs (default 10)",
                  1, UINT64_MAX, [a](uint64_t v) { a->min_ops = v; });
  cli::add_number(c, "--stall-ms",
                  "a CQ whose longest poll gap is at least N ms is a stall (default 10)", 1,
                  3600000, [a](uint64_t v) { a->stall_ms = v; });
  cli::add_number(c, "--top", "rows per list (default 10)", 1, 100000,
                  [a](uint64_t v) { a->top = v; });
  c->add_option("--html", a->html, "also write the comparison as an HTML page, FILE")
      ->type_name("FILE");
  cli::add_ratio(c, "--fail-above",
                 "exit 1 when a gated figure's slowdown is above R: the p50, p99 (B/A) and per-op "
                 "bandwidth (A/B) of every non-receive link row compared, and the achieved "
                 "bandwidth (A/B) of every NIC compared; else exit 0 (exit 2: a command line, "
                 "input or output that cannot be used)",
                 1, 1e6, [a](double v) { a->fail_above = v; });
}

int diff_runs(const DiffArgs& args) {
  report::Job a, b;
  if (!load_run("A", args.dir_a, &a) || !load_run("B", args.dir_b, &b)) return kCannot;
  report::DiffOptions dopt;
  dopt.threshold = args.threshold;
  dopt.min_ops = args.min_ops;
  dopt.stall_ns = static_cast<double>(args.stall_ms) * 1e6;
  const report::JobDiff d = report::diff_jobs(a, b, dopt);
  report::DiffOutputOptions oopt;
  oopt.dir_a = args.dir_a;
  oopt.dir_b = args.dir_b;
  oopt.top = args.top;
  oopt.fail_above = args.fail_above;
  int rc = 0;
  if (!args.html.empty() && !write_file(args.html, report::diff_html(a, b, d, oopt))) rc = kCannot;
  const std::string text = report::diff_text(a, b, d, oopt);
  std::fflush(stderr);
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
    std::fprintf(stderr, "fabtrace diff: writing to stdout failed: %s\n", std::strerror(errno));
    rc = kCannot;
  }
  if (rc) return rc;
  return args.fail_above > 0 && report::diff_gate(d, args.fail_above).over ? kGateTripped : 0;
}

}  // namespace fabtrace
