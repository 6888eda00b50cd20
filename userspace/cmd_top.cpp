// fabtrace top: the node's traced processes as they run, from their live
// snapshots (userspace/live/live_view.h), refreshed every second in the
// terminal (ncurses); with --once, or when stdout is not a terminal, one
// snapshot as text or JSON.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "common/printable.h"
#include "userspace/cli/cli.h"
#include "userspace/commands.h"
#include "userspace/live/live_view.h"

// Last, and as functions: curses' macros (erase(), clear(), move(), ...) would
// otherwise rewrite the standard library's members of the same names.
#define NCURSES_NOMACROS 1
#include <curses.h>

namespace fabtrace {

namespace {

volatile sig_atomic_t g_quit = 0;
void on_quit(int) { g_quit = 1; }

live::GatherOptions gather_options(const TopArgs& a) {
  live::GatherOptions o;
  o.read = live::default_read_options();
  if (!a.dir.empty()) o.read.dir = a.dir;
  o.filter.rank = a.rank;
  o.filter.link = a.link;
  o.filter.op = a.op;
  o.filter.pid = static_cast<pid_t>(a.pid);
  live::parse_sort_key(a.sort, &o.sort);
  return o;
}

int once(const TopArgs& a, const live::GatherOptions& o) {
  live::NodeView v;
  std::string err;
  if (!live::gather(o, &v, &err)) {
    std::fprintf(stderr, "fabtrace top: %s\n", printable(err).c_str());
    return 1;
  }
  std::string text;
  if (a.json) {
    text = live::view_json(v, o);
  } else {
    for (const std::string& l : live::view_lines(v, o, 4096, false)) text += l + "\n";
  }
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
    std::fprintf(stderr, "fabtrace top: writing to stdout failed: %s\n", std::strerror(errno));
    return 1;
  }
  return 0;
}

// A line typed at the bottom of the screen (a filter's value).
std::string prompt(const char* what) {
  char buf[128] = {};
  echo();
  curs_set(1);
  timeout(-1);
  mvprintw(LINES - 1, 0, "%s (empty: all): ", what);
  clrtoeol();
  refresh();
  getnstr(buf, sizeof(buf) - 1);
  noecho();
  curs_set(0);
  return buf;
}

void draw(const live::NodeView& v, const live::GatherOptions& o, const std::string& err) {
  erase();
  std::vector<std::string> lines;
  if (err.empty())
    lines = live::view_lines(v, o, static_cast<size_t>(COLS > 0 ? COLS : 80), true);
  else
    lines = {"fabtrace top: " + printable(err)};
  const int rows = LINES > 0 ? LINES : 24;
  // The key line stays at the bottom however many rows there are.
  for (int i = 0; i < rows && i < static_cast<int>(lines.size()); ++i) {
    const bool last = i == rows - 1 && static_cast<int>(lines.size()) > rows;
    mvaddnstr(i, 0, (last ? lines.back() : lines[static_cast<size_t>(i)]).c_str(), COLS);
  }
  refresh();
}

int interactive(const TopArgs& a, live::GatherOptions o) {
  struct sigaction sa = {};
  sa.sa_handler = on_quit;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  if (!initscr()) {
    std::fprintf(stderr, "fabtrace top: cannot use this terminal (TERM?); try --once\n");
    return 1;
  }
  cbreak();
  noecho();
  keypad(stdscr, TRUE);
  curs_set(0);
  const auto period = std::chrono::seconds(a.interval_s);
  const live::SortKey order[] = {live::SortKey::kRank, live::SortKey::kOps, live::SortKey::kBytes,
                                 live::SortKey::kP99, live::SortKey::kGap};
  while (!g_quit) {
    live::NodeView v;
    std::string err;
    live::gather(o, &v, &err);
    draw(v, o, err);
    const auto next = std::chrono::steady_clock::now() + period;
    bool redraw = false;
    while (!g_quit && !redraw) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          next - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      timeout(static_cast<int>(std::min<long long>(left.count(), 200)));
      const int ch = getch();
      if (ch == ERR) continue;
      redraw = true;
      switch (ch) {
        case 'q':
        case 'Q':
          g_quit = 1;
          break;
        case 's': {
          size_t i = 0;
          while (i < 5 && order[i] != o.sort) ++i;
          o.sort = order[(i + 1) % 5];
          break;
        }
        case 'r':
          o.filter.rank = prompt("rank");
          break;
        case 'l':
          o.filter.link = prompt("link (a part of \"local -> remote\")");
          break;
        case 'o':
          o.filter.op = prompt("op (fi_send, or a part: send)");
          break;
        case 'c': {
          const pid_t pid = o.filter.pid;  // a --pid stays: it is the command line's
          o.filter = live::Filter();
          o.filter.pid = pid;
          break;
        }
        default:
          break;  // KEY_RESIZE and the rest: drawn again
      }
    }
  }
  endwin();
  return 0;
}

}  // namespace

void add_top_command(cli::Cli& cli, CLI::App& parent) {
  auto a = std::make_shared<TopArgs>();
  CLI::App* c = cli.add_command(
      parent, "top",
      "the node's traced processes now, from their live snapshots: per process ops/s, MB/s, "
      "its slowest link's p99 and its worst CQ poll gap, each link below it; with a fabtrace "
      "record session, the latest stalls and their kernel causes. Refreshes every second; keys "
      "sort and filter. Yours only, every user's as root",
      [a] { return top_view(*a); });
  c->add_flag("--once", a->once,
              "print one snapshot and exit (also when stdout is not a terminal)");
  c->add_flag("--json", a->json, "the snapshot as JSON (with --once, or when not a terminal)");
  cli::add_number(c, "--interval", "seconds between refreshes (default 1)", 1, 3600,
                  [a](uint64_t v) { a->interval_s = v; });
  c->add_option("--rank", a->rank, "only this rank (its text as the report writes it)")
      ->type_name("RANK");
  c->add_option("--link", a->link, "only the links whose \"local -> remote\" contains TEXT")
      ->type_name("TEXT");
  c->add_option("--op", a->op, "only the ops whose name contains NAME (fi_send, send)")
      ->type_name("NAME");
  cli::add_number(c, "--pid", "only this process", 1, INT32_MAX, [a](uint64_t v) { a->pid = v; });
  c->add_option("--sort", a->sort,
                "order of the processes: rank, ops, mb, p99 or gap (default rank)")
      ->type_name("KEY")
      ->check(CLI::IsMember({"rank", "ops", "mb", "p99", "gap"}));
  c->add_option("--dir", a->dir,
                "where the snapshots are (default FABTRACE_LIVE_DIR, else /dev/shm)")
      ->type_name("DIR");
}

int top_view(const TopArgs& a) {
  const live::GatherOptions o = gather_options(a);
  if (a.once || a.json || !::isatty(STDOUT_FILENO) || !::isatty(STDIN_FILENO)) return once(a, o);
  return interactive(a, o);
}

}  // namespace fabtrace
