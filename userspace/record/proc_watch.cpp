#include "userspace/record/proc_watch.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace fabtrace {

namespace {

bool all_digits(const char* s) {
  if (!*s) return false;
  for (; *s; ++s)
    if (*s < '0' || *s > '9') return false;
  return true;
}

}  // namespace

// "comm starttime" from /proc/PID/stat ("" when unreadable): what changes
// when the pid is another process, or the same one after an exec.
std::string ProcWatch::identity_of(pid_t pid) const {
  ++identity_reads_;
  const std::string path = root_ + "/" + std::to_string(pid) + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return "";
  char buf[1024];
  const ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return "";
  const std::string s(buf, static_cast<size_t>(n));
  const size_t open = s.find('('), close = s.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return s;
  // Field 22 (starttime) is the 20th after the name's closing parenthesis.
  size_t at = close + 1;
  for (int field = 3; field < 22 && at != std::string::npos; ++field) at = s.find(' ', at + 1);
  if (at == std::string::npos) return s.substr(open, close - open + 1);
  return s.substr(open, close - open + 1) + s.substr(at, s.find(' ', at + 1) - at);
}

std::vector<ScannedProcess> ProcWatch::scan(pid_t self, uint64_t now_ns,
                                            const std::set<pid_t>* changed) {
  ++scans_;
  std::vector<ScannedProcess> out;
  DIR* d = ::opendir(root_.c_str());
  if (!d) return out;
  while (struct dirent* e = ::readdir(d)) {
    if (!all_digits(e->d_name)) continue;
    const pid_t pid = static_cast<pid_t>(std::atol(e->d_name));
    if (pid == self) continue;
    auto it = seen_.find(pid);
    const bool told_same = it != seen_.end() && changed && !changed->count(pid);
    const std::string id = told_same ? it->second.identity : identity_of(pid);
    const bool fresh = it == seen_.end() || it->second.identity != id;
    if (fresh) it = seen_.insert_or_assign(pid, Seen{}).first;
    Seen& s = it->second;
    s.scan = scans_;
    if (fresh || (!s.maps_library && now_ns >= s.next_ns)) {
      s.identity = id;
      ScannedProcess p;
      ++inspections_;
      s.maps_library = scanner_.inspect(pid, &p);
      if (s.maps_library) {
        s.last = std::move(p);
      } else {
        s.next_ns = now_ns + s.every_ns;
        s.every_ns = std::min(s.every_ns * 2, kMaxRecheckNs);
      }
    }
    if (s.maps_library) out.push_back(s.last);
  }
  ::closedir(d);
  // The processes gone: forgotten.
  for (auto it = seen_.begin(); it != seen_.end();)
    it = it->second.scan == scans_ ? std::next(it) : seen_.erase(it);
  return out;
}

std::vector<ScannedConn> ProcWatch::new_tcp_conns(pid_t pid) {
  const auto it = seen_.find(pid);
  if (it == seen_.end()) {  // not a process the scan knows (a --pid without libfabric)
    if (!other_conns_read_.insert(pid).second) return {};
  } else {
    if (it->second.conns_read) return {};
    it->second.conns_read = true;
  }
  if (tables_scan_ != scans_) {
    tables_.clear();
    tables_scan_ = scans_;
  }
  ++tcp_reads_;
  return scanner_.tcp_conns(pid, scanner_.socket_inodes(pid), &tables_);
}

}  // namespace fabtrace
