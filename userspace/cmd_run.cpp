// fabtrace run: the preload-only mode in one command.
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "common/job_meta.h"
#include "common/output_names.h"
#include "common/report_writer.h"
#include "userspace/cli/cli.h"
#include "userspace/commands.h"
#include "userspace/launch.h"

namespace fabtrace {

namespace {

// Whether the text report `f` was written by a process of this run: its job
// line (common/report_writer.h) names the run's id. The job line is the
// second line; the first few are looked at.
bool of_this_run(std::FILE* f, const std::string& run_id) {
  const std::string mark = ", " + run_id_text(run_id);
  char line[8192];
  for (int i = 0; i < 4 && std::fgets(line, sizeof(line), f); ++i) {
    std::string l(line);
    if (!l.empty() && l.back() == '\n') l.pop_back();
    if (l.size() >= mark.size() && l.compare(l.size() - mark.size(), mark.size(), mark) == 0)
      return true;
  }
  return false;
}

// Prints every text report in `dir` written by a process of this run's tree
// (under srun -n 4 fabtrace run, each of the four prints its own).
void print_reports(const std::string& dir, time_t since, const std::string& run_id) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> files;
  while (struct dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    OutputKind kind;
    if (!output_kind_of(n, &kind) || kind != OutputKind::kReportText) continue;
    struct stat st;
    const std::string p = dir + "/" + n;
    if (lstat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_mtime >= since)
      files.push_back(p);
  }
  closedir(d);
  std::sort(files.begin(), files.end());
  for (const std::string& p : files) {
    const int fd = ::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    std::FILE* f = fd < 0 ? nullptr : fdopen(fd, "r");
    if (!f) {
      if (fd >= 0) ::close(fd);
      continue;
    }
    if (of_this_run(f, run_id)) {
      std::rewind(f);
      std::printf("--- %s\n", p.c_str());
      char line[4096];
      while (std::fgets(line, sizeof(line), f)) std::fputs(line, stdout);
    }
    std::fclose(f);
  }
}

// A fresh id for this run (FABTRACE_RUN_ID of its processes).
std::string new_run_id() {
  uint64_t v[2] = {0, 0};
  if (getrandom(v, sizeof(v), 0) != static_cast<ssize_t>(sizeof(v))) {
    v[0] = static_cast<uint64_t>(getpid());
    v[1] = static_cast<uint64_t>(time(nullptr));
  }
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(v[0]),
                static_cast<unsigned long long>(v[1]));
  return buf;
}

}  // namespace

void add_run_command(cli::Cli& cli, CLI::App& parent) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* c = cli.add_command(
      parent, "run",
      "run CMD with libfabtrace.so preloaded (no root needed): every process of CMD that does "
      "fabric I/O writes its report into DIR, and the reports of CMD's processes are printed "
      "when it ends",
      [a] { return run_traced(*a); });
  c->add_option("-d,--dir", a->dir,
                "where the reports go (default: FABTRACE_DIR, else the current directory); %j, "
                "%h, %p and %q{VAR} expand (fabtrace-env(7)); created when missing")
      ->type_name("DIR");
  c->add_flag("--stderr", a->to_stderr,
              "write the text reports to stderr instead of files (no JSON, no timeline)");
  cli.add_traced_command(c, &a->command, true);
}

int run_traced(const RunArgs& args) {
  std::string dir = args.dir;
  const bool to_stderr = args.to_stderr;
  if (args.command.empty()) {
    std::fprintf(stderr, "fabtrace run: no command given (fabtrace run [--dir DIR] -- CMD ...)\n");
    return 2;
  }
  const std::string lib = find_preload();
  if (lib.empty()) {
    std::fprintf(stderr, "fabtrace run: libfabtrace.so not found (set FABTRACE_PRELOAD)\n");
    return 2;
  }
  std::string err;
  if (to_stderr) {
    dir = "stderr";
  } else {
    if (dir.empty()) dir = std::getenv("FABTRACE_DIR") ? std::getenv("FABTRACE_DIR") : ".";
    // Expanded here (%p is this run's pid): every process of the run writes
    // into the one directory that is read back below.
    dir = prepare_output_dir(dir, &err);
    if (dir.empty()) {
      std::fprintf(stderr, "fabtrace run: %s\n", err.c_str());
      return 2;
    }
  }
  std::string preload = lib;
  if (const char* old = std::getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
  const time_t start = time(nullptr);
  const std::string run_id = new_run_id();
  const pid_t pid =
      launch(args.command,
             {{"LD_PRELOAD", preload}, {"FABTRACE_DIR", dir}, {kRunIdVariable, run_id}}, &err);
  if (pid < 0) {
    std::fprintf(stderr, "fabtrace run: %s\n", err.c_str());
    return 127;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!to_stderr) print_reports(dir, start, run_id);
  return exit_code_of(status);
}

}  // namespace fabtrace
