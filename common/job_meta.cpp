#include "common/job_meta.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "common/printable.h"

namespace fabtrace {

namespace {

// The whole of a small /proc file (at most `cap` bytes).
std::string read_small(const std::string& path, size_t cap) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string out;
  char buf[4096];
  while (out.size() < cap) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (out.size() > cap) out.resize(cap);
  return out;
}

uint64_t clock_ns(clockid_t c) {
  struct timespec ts {};
  clock_gettime(c, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

std::string command_line_of(const std::string& bytes) {
  std::string joined = bytes;
  while (!joined.empty() && joined.back() == '\0') joined.pop_back();
  for (char& c : joined)
    if (c == '\0') c = ' ';
  std::string out = printable(joined);
  if (out.size() > kMaxCommandBytes) {
    out.resize(kMaxCommandBytes - 3);
    // Not in the middle of an escape or of a UTF-8 character.
    while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80) out.pop_back();
    if (!out.empty() && static_cast<unsigned char>(out.back()) >= 0xC0) out.pop_back();
    const size_t bs = out.rfind('\\');
    if (bs != std::string::npos && out.size() - bs < 4) out.resize(bs);
    out += "...";
  }
  return out;
}

uint64_t process_start_wall_ns(pid_t pid) {
  const std::string stat =
      read_small(pid ? "/proc/" + std::to_string(pid) + "/stat" : "/proc/self/stat", 4096);
  // The command name may hold blanks and parentheses: fields count from the last ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  const char* p = stat.c_str() + close + 1;
  // After ')': field 3 (state) ... field 22 (starttime, clock ticks after boot).
  for (int field = 3; field < 22; ++field) {
    p = std::strchr(p + 1, ' ');
    if (!p) return 0;
  }
  char* end = nullptr;
  const unsigned long long ticks = std::strtoull(p + 1, &end, 10);
  if (end == p + 1) return 0;
  const long hz = sysconf(_SC_CLK_TCK);
  if (hz <= 0) return 0;
  const uint64_t since_boot = ticks * (1000000000ULL / static_cast<uint64_t>(hz));
  const uint64_t boot = clock_ns(CLOCK_BOOTTIME), wall = clock_ns(CLOCK_REALTIME);
  if (since_boot > boot || boot - since_boot > wall) return 0;
  return wall - (boot - since_boot);
}

JobMeta job_meta_of_self() {
  JobMeta m;
  job_ids_from([](const char* n) { return std::getenv(n); }, &m);
  m.command = command_line_of(read_small("/proc/self/cmdline", kMaxCommandBytes * 4 + 4));
  m.start_wall_ns = process_start_wall_ns(0);
  return m;
}

std::string job_text(const JobMeta& m) {
  if (m.job_id.empty()) return "";
  std::string t = m.launcher + " job " + printable(m.job_id);
  if (!m.step_id.empty()) t += " step " + printable(m.step_id);
  if (!m.node_list.empty()) t += " on " + printable(m.node_list);
  return t;
}

}  // namespace fabtrace
