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
               "  record [-o DIR] [--duration S] [--pid PID]... [--polls] [--list] [-- CMD...]\n"
               "      as root, once per node: BPF programs record what the kernel saw (off-CPU\n"
               "      time and who ran instead, IRQs, faults, TCP retransmits, cxi driver\n"
               "      events, the cause of each stall and slow op) into a kernel log in DIR.\n"
               "  export ops FILE [--csv] [-o OUT]\n"
               "      write the per-op timeline file FILE (an oplog written by the preload)\n"
               "      as CSV to OUT (default stdout): one row per op in file order, times in\n"
               "      CLOCK_MONOTONIC nanoseconds, with the wall-clock anchor in the first line.\n"
               "  export kernel FILE [--csv] [--kind K,...] [--top N]\n"
               "      print a kernel log (fabtrace record), one row per event (or the N\n"
               "      longest: --kind stall --top 10 lists the longest stalls and why).\n"
               "  report DIR [-o OUTDIR] [--top N] [--no-html] [--no-trace]\n"
               "      the whole job from every rank's outputs under DIR: a summary on stdout\n"
               "      (slowest and outlier links, NIC bandwidth, CQ poll gaps, receives posted late,\n"
               "      errors), and in OUTDIR (default DIR/fabtrace-report) report.html,\n"
               "      links.csv/json, nics.csv/json and a Perfetto trace.\n"
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
  if (!std::strcmp(argv[1], "record")) return fabtrace::cmd_record(argc - 2, argv + 2);
  if (!std::strcmp(argv[1], "export")) return fabtrace::cmd_export(argc - 2, argv + 2);
  if (!std::strcmp(argv[1], "report")) return fabtrace::cmd_report(argc - 2, argv + 2);
  std::fprintf(stderr, "fabtrace: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
