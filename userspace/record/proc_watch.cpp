#include "userspace/record/proc_watch.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
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

// "comm starttime" from /proc/PID/stat: what changes when the pid is another
// process, or the same one after an exec.
std::string ProcWatch::identity_of(pid_t pid, bool zombie_gone, bool* kthread) const {
  ++identity_reads_;
  *kthread = false;
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
  // Field 3, the state, just after the name: Z and X have ended. Field 9, the
  // flags: PF_KTHREAD (include/linux/sched.h, the same value since 2.6).
  char state = 0;
  unsigned flags = 0;
  if (std::sscanf(s.c_str() + close + 1, " %c %*d %*d %*d %*d %*d %u", &state, &flags) == 2)
    *kthread = (flags & 0x00200000u) != 0;
  if (zombie_gone && (state == 'Z' || state == 'X')) return "";
  // Field 22 (starttime) is the 20th after the name's closing parenthesis.
  size_t at = close + 1;
  for (int field = 3; field < 22 && at != std::string::npos; ++field) at = s.find(' ', at + 1);
  if (at == std::string::npos) return s.substr(open, close - open + 1);
  return s.substr(open, close - open + 1) + s.substr(at, s.find(' ', at + 1) - at);
}

void ProcWatch::visit(pid_t pid, uint64_t now_ns, const ProcChanges* told, bool listed, bool due) {
  auto it = seen_.find(pid);
  const bool is_told = told && told->pids.count(pid);
  const bool told_same = it != seen_.end() && told && !is_told && !due;
  // Not listed, a process is gone when it cannot be read (or has ended).
  bool kthread = told_same && it->second.kthread;
  const std::string id = told_same ? it->second.identity : identity_of(pid, !listed, &kthread);
  if (!listed && id.empty()) {
    if (it != seen_.end()) seen_.erase(it);
    return;
  }
  const bool fresh = it == seen_.end() || it->second.identity != id;
  const bool loads = told && told->loads;
  if (fresh) it = seen_.insert_or_assign(pid, Seen{}).first;
  Seen& s = it->second;
  s.scan = scans_;
  if (fresh || (!s.maps_library && (now_ns >= s.next_ns || (loads && is_told)))) {
    s.identity = id;
    ScannedProcess p;
    ++inspections_;
    s.maps_library = scanner_.inspect(pid, &p);
    s.kthread = kthread;
    if (s.maps_library) {
      s.last = std::move(p);
    } else if (kthread) {
      s.next_ns = UINT64_MAX;  // never maps a library (an exec would make it another)
    } else {
      s.next_ns = now_ns + s.every_ns;
      s.every_ns = std::min(s.every_ns * 2, loads ? kMaxRecheckToldNs : kMaxRecheckNs);
    }
  }
}

std::vector<ScannedProcess> ProcWatch::scan(pid_t self, uint64_t now_ns, const ProcChanges* told) {
  ++scans_;
  tables_.clear();  // a namespace's TCP tables are shared within one scan only
  if (told && told->whole() && scans_ > 1) {
    for (const pid_t pid : told->pids)
      if (pid != self) visit(pid, now_ns, told, false, false);
    // The net under the kernel's word: the rechecks that are due, read afresh.
    std::vector<pid_t> due;
    for (const auto& kv : seen_)
      if (!kv.second.maps_library && kv.second.scan != scans_ && now_ns >= kv.second.next_ns)
        due.push_back(kv.first);
    for (const pid_t pid : due) visit(pid, now_ns, told, false, true);
  } else {
    DIR* d = ::opendir(root_.c_str());
    if (!d) return {};
    while (struct dirent* e = ::readdir(d)) {
      if (!all_digits(e->d_name)) continue;
      const pid_t pid = static_cast<pid_t>(std::atol(e->d_name));
      if (pid != self) visit(pid, now_ns, told, true, false);
    }
    ::closedir(d);
    // The processes gone: forgotten.
    for (auto it = seen_.begin(); it != seen_.end();)
      it = it->second.scan == scans_ ? std::next(it) : seen_.erase(it);
  }
  std::vector<ScannedProcess> out;
  for (const auto& kv : seen_)
    if (kv.second.maps_library) out.push_back(kv.second.last);
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
  ++tcp_reads_;
  return scanner_.tcp_conns(pid, scanner_.socket_inodes(pid), &tables_);
}

}  // namespace fabtrace
