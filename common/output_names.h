// The names of the files fabtrace writes, the one definition every writer and
// reader uses:
//   fabtrace.<host>.r<rank>.p<pid>.json       a rank's report (preload/exit_report.cpp)
//   fabtrace.<host>.r<rank>.p<pid>.txt        its text twin
//   fabtrace_ops.<host>.r<rank>.p<pid>.oplog  its per-op timeline (common/oplog_format.h)
//   fabtrace_nic.<host>.r<rank>.p<pid>.csv    its NIC counter series (common/counter_csv.h)
//   fabtrace_nic.<host>.node.p<pid>.csv       a node's counter series (`fabtrace record`)
//   fabtrace_kernel.<host>.p<pid>.klog        a node's kernel log (common/kernel_log.h)
// Host and rank are output tokens (common/rank.h: no blank, control character,
// ',' or '/'), so a name never leaves its directory; they may hold dots, so a
// name is read from both ends (the host is everything up to the last ".r" that
// leaves a well-formed rest). The readers take host, rank and pid from inside
// the files; the name only says which kind of file it is.
#pragma once

#include <string>

namespace fabtrace {

enum class OutputKind {
  kReportJson,
  kReportText,
  kOplog,
  kNicCounters,
  kKernelLog,
};

// The file name of a rank's output: "<prefix>.<host>.r<rank>.p<pid>.<ext>"
// (kKernelLog: "fabtrace_kernel.<host>.p<pid>.klog", no rank). Host and rank
// go through output_token.
std::string output_file_name(OutputKind kind, const std::string& host, const std::string& rank,
                             long pid);
// The kernel log of the node-wide session (collector pid) on host.
std::string kernel_log_file_name(const std::string& host, long pid);
// The NIC counter series the node-wide session (collector pid) samples on host
// once for all its ranks: rank kNodeCountersRank, written without the "r".
std::string node_counters_file_name(const std::string& host, long pid);

// The kind of a file by its name's prefix and extension; false for a file
// fabtrace does not write. What the job loader and `fabtrace run` look at.
bool output_kind_of(const std::string& file_name, OutputKind* kind);

struct OutputName {
  OutputKind kind = OutputKind::kReportJson;
  std::string host, rank;  // rank empty for a kernel log
  long pid = 0;
};
// The whole name read back: false when the kind is unknown or the host, rank
// or pid part is missing or malformed (pid: decimal digits, no sign, fits a long).
bool parse_output_name(const std::string& file_name, OutputName* out);

}  // namespace fabtrace
