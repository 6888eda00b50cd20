#include "common/live_format.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

namespace fabtrace {
namespace live {

#define FT_LIVE_NAME(name, doc) #name,
const char* const kHeadNames[kHeadFields] = {FT_LIVE_HEAD(FT_LIVE_NAME)};
const char* const kProcessNames[kProcessFields] = {FT_LIVE_PROCESS(FT_LIVE_NAME)};
const char* const kLinkNames[kLinkFields] = {FT_LIVE_LINK(FT_LIVE_NAME)};
const char* const kCqNames[kCqFields] = {FT_LIVE_CQ(FT_LIVE_NAME)};
#undef FT_LIVE_NAME

std::string file_name(uid_t uid, pid_t pid) {
  return std::string(kFilePrefix) + "u" + std::to_string(static_cast<unsigned long>(uid)) + ".p" +
         std::to_string(static_cast<long>(pid));
}

namespace {
// Decimal digits only, no leading zero (but "0"), at most `max`.
bool parse_number(const std::string& s, unsigned long long max, unsigned long long* out) {
  if (s.empty() || s.size() > 19 || (s.size() > 1 && s[0] == '0')) return false;
  unsigned long long v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  if (v > max) return false;
  *out = v;
  return true;
}
}  // namespace

bool parse_file_name(const std::string& name, uid_t* uid, pid_t* pid) {
  const std::string prefix = std::string(kFilePrefix) + "u";
  if (name.compare(0, prefix.size(), prefix) != 0) return false;
  const size_t dot = name.find(".p", prefix.size());
  if (dot == std::string::npos) return false;
  unsigned long long u = 0, p = 0;
  if (!parse_number(name.substr(prefix.size(), dot - prefix.size()), UINT32_MAX - 1, &u) ||
      !parse_number(name.substr(dot + 2), INT_MAX, &p) || p == 0)
    return false;
  *uid = static_cast<uid_t>(u);
  *pid = static_cast<pid_t>(p);
  return true;
}

uint64_t process_start_time(pid_t pid, const std::string& proc_root) {
  const std::string path = proc_root + "/" + std::to_string(static_cast<long>(pid)) + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return 0;
  char buf[1024];
  ssize_t n;
  do {
    n = ::read(fd, buf, sizeof(buf) - 1);
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  // The name (field 2) may hold spaces and parentheses: fields 3.. follow the
  // last ')'. Field 22, the start time, is the 20th of them.
  const char* p = nullptr;
  for (const char* q = buf; *q; ++q)
    if (*q == ')') p = q;
  if (!p) return 0;
  ++p;
  for (int field = 3; field < 22; ++field) {
    while (*p == ' ') ++p;
    while (*p && *p != ' ') ++p;
    if (!*p) return 0;
  }
  while (*p == ' ') ++p;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(p, &end, 10);
  if (end == p || errno != 0) return 0;
  return v;
}

}  // namespace live
}  // namespace fabtrace
