#include <cstdio>
#include <cstring>

#include "userspace/commands.h"

namespace {
void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: fabtrace <command> [options]\n"
               "\n"
               "commands:\n"
               "  run [--dir DIR] [--stderr] -- CMD [ARGS...]\n"
               "      run CMD with libfabtrace.so preloaded (no root needed); every process\n"
               "      of CMD that does fabric I/O writes its report into DIR (default .),\n"
               "      and the reports of this run are printed when CMD ends.\n"
               "  help\n");
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "help") || !std::strcmp(argv[1], "--help") ||
      !std::strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "run")) return fabtrace::cmd_run(argc - 2, argv + 2);
  std::fprintf(stderr, "fabtrace: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
