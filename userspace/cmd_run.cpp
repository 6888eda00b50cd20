// fabtrace run: the preload-only mode in one command.
#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "common/output_names.h"
#include "userspace/cli/cli.h"
#include "userspace/commands.h"
#include "userspace/launch.h"

namespace fabtrace {

namespace {

// Prints every text report in `dir` written by a process of this run.
void print_reports(const std::string& dir, time_t since) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> files;
  while (struct dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    OutputKind kind;
    if (!output_kind_of(n, &kind) || kind != OutputKind::kReportText) continue;
    struct stat st;
    const std::string p = dir + "/" + n;
    if (stat(p.c_str(), &st) == 0 && st.st_mtime >= since) files.push_back(p);
  }
  closedir(d);
  for (const std::string& p : files) {
    std::FILE* f = std::fopen(p.c_str(), "r");
    if (!f) continue;
    std::printf("--- %s\n", p.c_str());
    char line[4096];
    while (std::fgets(line, sizeof(line), f)) std::fputs(line, stdout);
    std::fclose(f);
  }
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
  if (to_stderr) {
    dir = "stderr";
  } else {
    if (dir.empty()) dir = std::getenv("FABTRACE_DIR") ? std::getenv("FABTRACE_DIR") : ".";
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      std::fprintf(stderr, "fabtrace run: cannot create %s: %s\n", dir.c_str(),
                   std::strerror(errno));
      return 2;
    }
  }
  std::string preload = lib;
  if (const char* old = std::getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
  const time_t start = time(nullptr);
  std::string err;
  const pid_t pid = launch(args.command,
                           {{"LD_PRELOAD", preload}, {"FABTRACE_DIR", dir}}, &err);
  if (pid < 0) {
    std::fprintf(stderr, "fabtrace run: %s\n", err.c_str());
    return 127;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!to_stderr) print_reports(dir, start);
  return exit_code_of(status);
}

}  // namespace fabtrace
