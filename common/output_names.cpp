#include "common/output_names.h"

#include <cerrno>
#include <cstdlib>

#include "common/counter_csv.h"
#include "common/rank.h"

namespace fabtrace {

namespace {

struct Format {
  OutputKind kind;
  const char* prefix;  // with its dot
  const char* ext;     // with its dot
};

constexpr Format kFormats[] = {
    {OutputKind::kReportJson, "fabtrace.", ".json"},
    {OutputKind::kReportText, "fabtrace.", ".txt"},
    {OutputKind::kOplog, "fabtrace_ops.", ".oplog"},
    {OutputKind::kNicCounters, "fabtrace_nic.", ".csv"},
    {OutputKind::kKernelLog, "fabtrace_kernel.", ".klog"},
};

const Format& format_of(OutputKind kind) {
  for (const Format& f : kFormats)
    if (f.kind == kind) return f;
  return kFormats[0];
}

bool starts_with(const std::string& s, const std::string& p) {
  return s.compare(0, p.size(), p) == 0;
}

bool ends_with(const std::string& s, const std::string& x) {
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

// "p<digits>" as a pid.
bool parse_pid(const std::string& s, long* pid) {
  if (s.size() < 2 || s.size() > 20 || s[0] != 'p') return false;
  for (size_t i = 1; i < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(s.c_str() + 1, &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *pid = v;
  return true;
}

}  // namespace

std::string output_file_name(OutputKind kind, const std::string& host, const std::string& rank,
                             long pid) {
  if (kind == OutputKind::kKernelLog) return kernel_log_file_name(host, pid);
  const Format& f = format_of(kind);
  return f.prefix + output_token(host) + ".r" + output_token(rank) + ".p" + std::to_string(pid) +
         f.ext;
}

std::string kernel_log_file_name(const std::string& host, long pid) {
  const Format& f = format_of(OutputKind::kKernelLog);
  return f.prefix + output_token(host) + ".p" + std::to_string(pid) + f.ext;
}

std::string node_counters_file_name(const std::string& host, long pid) {
  const Format& f = format_of(OutputKind::kNicCounters);
  return f.prefix + output_token(host) + "." + kNodeCountersRank + ".p" + std::to_string(pid) +
         f.ext;
}

bool output_kind_of(const std::string& file_name, OutputKind* kind) {
  for (const Format& f : kFormats) {
    if (starts_with(file_name, f.prefix) && ends_with(file_name, f.ext)) {
      *kind = f.kind;
      return true;
    }
  }
  return false;
}

bool parse_output_name(const std::string& file_name, OutputName* out) {
  OutputKind kind;
  if (!output_kind_of(file_name, &kind)) return false;
  const Format& f = format_of(kind);
  const size_t pre = std::string(f.prefix).size(), ext = std::string(f.ext).size();
  if (file_name.size() < pre + ext) return false;
  const std::string mid = file_name.substr(pre, file_name.size() - pre - ext);
  // "<host>[.r<rank>].p<pid>": the pid is after the last dot.
  const size_t pdot = mid.rfind('.');
  if (pdot == std::string::npos) return false;
  OutputName n;
  n.kind = kind;
  if (!parse_pid(mid.substr(pdot + 1), &n.pid)) return false;
  const std::string head = mid.substr(0, pdot);
  if (kind == OutputKind::kKernelLog) {
    n.host = head;
  } else {
    const size_t rdot = head.rfind(".r");
    if (rdot == std::string::npos) return false;
    n.host = head.substr(0, rdot);
    n.rank = head.substr(rdot + 2);
    if (n.rank.empty()) return false;
  }
  if (n.host.empty()) return false;
  *out = std::move(n);
  return true;
}

}  // namespace fabtrace
