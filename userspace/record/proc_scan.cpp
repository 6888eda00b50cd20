#include "userspace/record/proc_scan.h"

#include "common/rank.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>

namespace fabtrace {

namespace {

// Reads at most `cap` bytes of a /proc file (they report size 0, so read until EOF).
std::string read_capped(const std::string& path, size_t cap) {
  std::string out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return out;
  char buf[65536];
  while (out.size() < cap) {
    const ssize_t n = ::read(fd, buf, std::min(sizeof(buf), cap - out.size()));
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

std::string trim_nl(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

std::string base_name(const std::string& p) {
  const size_t s = p.rfind('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

bool is_number(const char* s) {
  if (!*s) return false;
  for (; *s; ++s)
    if (*s < '0' || *s > '9') return false;
  return true;
}

// /proc/net/tcp addresses: IPv4 as 8 hex digits of the address in host order
// (little-endian here), IPv6 as four such words.
bool parse_addr(const std::string& hex, bool v6, uint8_t out[16]) {
  const size_t words = v6 ? 4 : 1;
  if (hex.size() != words * 8) return false;
  for (size_t w = 0; w < words; ++w) {
    char* end = nullptr;
    const std::string part = hex.substr(w * 8, 8);
    const uint32_t v = static_cast<uint32_t>(std::strtoul(part.c_str(), &end, 16));
    if (*end) return false;
    std::memcpy(out + w * 4, &v, 4);
  }
  return true;
}

bool parse_endpoint(const std::string& s, bool v6, uint8_t addr[16], uint16_t* port) {
  const size_t colon = s.find(':');
  if (colon == std::string::npos) return false;
  char* end = nullptr;
  const std::string p = s.substr(colon + 1);
  const unsigned long v = std::strtoul(p.c_str(), &end, 16);
  if (*end || v > 0xFFFF || p.empty()) return false;
  *port = static_cast<uint16_t>(v);
  return parse_addr(s.substr(0, colon), v6, addr);
}

}  // namespace

bool is_preload_file_name(const std::string& name) {
  static const std::string kName = "libfabtrace.so";
  if (name.compare(0, kName.size(), kName) != 0) return false;
  // libfabtrace.so, or a versioned file of it: libfabtrace.so.0, libfabtrace.so.0.9.0
  if (name.size() == kName.size()) return true;
  if (name[kName.size()] != '.' || name.back() == '.') return false;
  for (size_t i = kName.size(); i < name.size(); ++i)
    if (name[i] != '.' && (name[i] < '0' || name[i] > '9')) return false;
  return name.find("..") == std::string::npos;
}

void parse_maps(const std::string& text, std::string* preload, std::string* libfabric,
                std::string* preload_range) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    const std::string name = base_name(path);
    if (preload->empty() && is_preload_file_name(name)) {
      *preload = path;
      if (preload_range) *preload_range = line.substr(0, line.find(' '));
    }
    if (libfabric->empty() && name.rfind("libfabric.so", 0) == 0) *libfabric = path;
  }
}

std::string rank_from_environ(const std::string& env) {
  static const char* const vars[] = {"SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMIX_RANK",
                                     "PMI_RANK", "RANK"};
  for (const char* v : vars) {
    const std::string key = std::string(v) + "=";
    size_t pos = 0;
    while (pos < env.size()) {
      const size_t end = env.find('\0', pos);
      const size_t stop = end == std::string::npos ? env.size() : end;
      if (env.compare(pos, key.size(), key) == 0) {
        const std::string val = env.substr(pos + key.size(), stop - pos - key.size());
        // The preload's own rule for its rank's text (common/rank.h): a value
        // such as "../../x" never becomes a path or splits a field.
        if (!val.empty()) return output_token(val);
      }
      pos = stop + 1;
    }
  }
  return "";
}

bool parse_tcp_line(const std::string& line, bool v6, ScannedConn* c, uint64_t* inode) {
  std::istringstream f(line);
  std::string sl, local, remote, st, queues, timer, retr, uid, timeout, ino;
  if (!(f >> sl >> local >> remote >> st >> queues >> timer >> retr >> uid >> timeout >> ino))
    return false;
  if (sl.empty() || sl.back() != ':') return false;
  *c = ScannedConn{};
  c->tuple.family = v6 ? AF_INET6 : AF_INET;
  if (!parse_endpoint(local, v6, c->tuple.saddr, &c->tuple.sport) ||
      !parse_endpoint(remote, v6, c->tuple.daddr, &c->tuple.dport))
    return false;
  char* end = nullptr;
  c->state = static_cast<uint8_t>(std::strtoul(st.c_str(), &end, 16));
  if (*end) return false;
  *inode = std::strtoull(ino.c_str(), &end, 10);
  return *end == '\0';
}

bool ProcScanner::inspect(pid_t pid, ScannedProcess* out) const {
  const std::string dir = root_ + "/" + std::to_string(pid);
  ScannedProcess p;
  p.pid = pid;
  parse_maps(read_capped(dir + "/maps", 16u << 20), &p.preload_path, &p.libfabric_path,
             &p.preload_range);
  p.preload = !p.preload_path.empty();
  if (!p.preload && p.libfabric_path.empty()) return false;
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0) p.uid = st.st_uid;
  p.comm = trim_nl(read_capped(dir + "/comm", 64));
  char exe[4096];
  const ssize_t n = ::readlink((dir + "/exe").c_str(), exe, sizeof(exe) - 1);
  if (n > 0) p.exe.assign(exe, static_cast<size_t>(n));
  p.rank = rank_from_environ(read_capped(dir + "/environ", 1u << 20));
  if (DIR* d = ::opendir((dir + "/task").c_str())) {
    while (struct dirent* e = ::readdir(d)) {
      if (!is_number(e->d_name)) continue;
      ScannedThread t;
      t.tid = static_cast<pid_t>(std::atol(e->d_name));
      t.comm = trim_nl(read_capped(dir + "/task/" + e->d_name + "/comm", 64));
      p.threads.push_back(t);
    }
    ::closedir(d);
  }
  *out = std::move(p);
  return true;
}

std::vector<ScannedProcess> ProcScanner::scan(pid_t self) const {
  std::vector<ScannedProcess> out;
  DIR* d = ::opendir(root_.c_str());
  if (!d) return out;
  while (struct dirent* e = ::readdir(d)) {
    if (!is_number(e->d_name)) continue;
    const pid_t pid = static_cast<pid_t>(std::atol(e->d_name));
    if (pid == self) continue;
    ScannedProcess p;
    if (inspect(pid, &p)) out.push_back(std::move(p));
  }
  ::closedir(d);
  return out;
}

std::vector<ScannedConn> ProcScanner::tcp_conns(pid_t pid) const {
  return tcp_conns(pid, socket_inodes(pid));
}

std::set<uint64_t> ProcScanner::socket_inodes(pid_t pid) const {
  const std::string dir = root_ + "/" + std::to_string(pid);
  std::set<uint64_t> inodes;
  if (DIR* d = ::opendir((dir + "/fd").c_str())) {
    while (struct dirent* e = ::readdir(d)) {
      if (!is_number(e->d_name)) continue;
      char target[128];
      const ssize_t n = ::readlink((dir + "/fd/" + e->d_name).c_str(), target, sizeof(target) - 1);
      if (n <= 0) continue;
      target[n] = '\0';
      unsigned long long ino = 0;
      if (std::sscanf(target, "socket:[%llu]", &ino) == 1) inodes.insert(ino);
    }
    ::closedir(d);
  }
  return inodes;
}

std::vector<ScannedConn> ProcScanner::tcp_conns(pid_t pid, const std::set<uint64_t>& inodes,
                                                TcpTables* tables) const {
  const std::string dir = root_ + "/" + std::to_string(pid);
  std::vector<ScannedConn> out;
  if (inodes.empty()) return out;
  // The process's own network namespace ("net:[INODE]"); unnamed, its own read.
  std::array<std::string, 2> own;
  std::array<std::string, 2>* text = &own;
  bool read = true;
  if (tables) {
    char ns[64];
    const ssize_t n = ::readlink((dir + "/ns/net").c_str(), ns, sizeof(ns) - 1);
    if (n > 0) {
      const auto at = tables->try_emplace(std::string(ns, static_cast<size_t>(n)));
      text = &at.first->second;
      read = at.second;
    }
  }
  table_reads_ += read;
  if (read)
    for (const bool v6 : {false, true})
      (*text)[v6] = read_capped(dir + (v6 ? "/net/tcp6" : "/net/tcp"), 64u << 20);
  for (const bool v6 : {false, true}) {
    std::istringstream in((*text)[v6]);
    std::string line;
    while (std::getline(in, line)) {
      ScannedConn c;
      uint64_t ino = 0;
      if (parse_tcp_line(line, v6, &c, &ino) && inodes.count(ino)) out.push_back(c);
    }
  }
  return out;
}

}  // namespace fabtrace
