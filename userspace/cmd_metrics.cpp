// fabtrace metrics --textfile FILE: the node's live view in the text format of
// node_exporter's textfile collector (userspace/live/metrics_text.h), written
// every --interval seconds as a new file renamed over FILE, so the collector
// reads a whole file or the previous one. Nothing listens on a port: the
// site's node_exporter serves it.
#include <signal.h>
#include <time.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "common/printable.h"
#include "common/safe_output.h"
#include "userspace/cli/cli.h"
#include "userspace/commands.h"
#include "userspace/live/live_view.h"
#include "userspace/live/metrics_text.h"

namespace fabtrace {

namespace {

volatile sig_atomic_t g_stop = 0;
void on_stop(int) { g_stop = 1; }

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// One write of FILE: the text under a temporary name in its directory (held
// open since the start), renamed over it.
bool write_once(const MetricsArgs& a, const live::GatherOptions& o) {
  live::NodeView v;
  std::string err;
  if (!live::gather(o, &v, &err)) {
    std::fprintf(stderr, "fabtrace metrics: %s\n", printable(err).c_str());
    return false;
  }
  const std::string text = live::metrics_text(v, a.max_links);
  ReplacingFile f;
  if (f.open(a.textfile, &err)) {
    std::FILE* out = f.stream();
    if (out && std::fwrite(text.data(), 1, text.size(), out) == text.size() && f.commit(&err))
      return true;
    if (err.empty()) err = "writing " + a.textfile + " failed: " + std::strerror(errno);
  }
  std::fprintf(stderr, "fabtrace metrics: %s\n", printable(err).c_str());
  return false;
}

}  // namespace

void add_metrics_command(cli::Cli& cli, CLI::App& parent) {
  auto a = std::make_shared<MetricsArgs>();
  CLI::App* c = cli.add_command(
      parent, "metrics",
      "the node's traced processes as Prometheus metrics for node_exporter's textfile "
      "collector: per rank, link and op the ops, bytes and latency quantiles; CQ poll gaps; "
      "with a fabtrace record session, stalls by kernel cause. FILE is rewritten whole every "
      "--interval seconds (a temporary file renamed over it); no network port",
      [a] { return write_metrics(*a); });
  cli.require(c->add_option("--textfile", a->textfile,
                            "the file to write, in the collector's directory "
                            "(--collector.textfile.directory), named *.prom")
                  ->type_name("FILE"));
  cli::add_number(c, "--interval", "seconds between writes (default 15)", 1, 86400,
                  [a](uint64_t v) { a->interval_s = v; });
  c->add_flag("--once", a->once, "write once and exit");
  cli::add_number(c, "--max-links",
                  "link rows per process with series of their own, the busiest (default 16); the "
                  "rest are summed into one row labelled \"other\"",
                  1, 4096, [a](uint64_t v) { a->max_links = v; });
  c->add_option("--dir", a->dir,
                "where the snapshots are (default FABTRACE_LIVE_DIR, else /dev/shm)")
      ->type_name("DIR");
}

int write_metrics(const MetricsArgs& a) {
  live::GatherOptions o;
  o.read = live::default_read_options();
  if (!a.dir.empty()) o.read.dir = a.dir;
  if (!ends_with(a.textfile, ".prom"))
    std::fprintf(stderr,
                 "fabtrace metrics: note: node_exporter's textfile collector reads *.prom files "
                 "only, not %s\n",
                 printable(a.textfile).c_str());
  // The directory opened once and held: every write goes through its
  // descriptor (common/safe_output.h), whatever happens to the path.
  OutputDir dir;
  std::string err;
  const size_t slash = a.textfile.rfind('/');
  const std::string parent = slash == std::string::npos ? "."
                             : slash == 0               ? "/"
                                                        : a.textfile.substr(0, slash);
  if (!dir.open(parent, false, &err)) {
    std::fprintf(stderr, "fabtrace metrics: %s\n", printable(err).c_str());
    return 1;
  }
  if (a.once) return write_once(a, o) ? 0 : 1;
  struct sigaction sa = {};
  sa.sa_handler = on_stop;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  uint64_t failures = 0;
  auto next = std::chrono::steady_clock::now();
  while (!g_stop) {
    if (!write_once(a, o)) ++failures;  // said; the next interval tries again
    next += std::chrono::seconds(a.interval_s);
    while (!g_stop && std::chrono::steady_clock::now() < next) {
      const struct timespec ts = {0, 100 * 1000 * 1000};
      nanosleep(&ts, nullptr);
    }
  }
  return failures ? 1 : 0;
}

}  // namespace fabtrace
