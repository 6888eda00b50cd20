#include "common/live_stalls.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/json_writer.h"
#include "common/live_format.h"
#include "common/live_read.h"

namespace fabtrace {
namespace live {

namespace {

constexpr const char* kFormat = "fabtrace-live-stalls";
constexpr uint64_t kFormatVersion = 1;
constexpr size_t kMaxCounts = 4096;  // (process, cause) pairs in one file
constexpr size_t kMaxText = 512;     // a verdict's bytes

std::string cut(std::string s, size_t n = kMaxText) {
  if (s.size() > n) s.resize(n);
  return s;
}

// A directory of this process's user (root for a session), never a link,
// writable by nobody else.
int open_checked_dir(const std::string& dir, bool create, std::string* why) {
  if (create && ::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    *why = dir + ": " + std::strerror(errno);
    return -1;
  }
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    *why = dir + ": " + std::strerror(errno);
    return -1;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || st.st_uid != (create ? ::geteuid() : 0) || (st.st_mode & 022) != 0) {
    *why = dir + ": not root's own directory (or writable by others): not used";
    ::close(fd);
    return -1;
  }
  return fd;
}

// A whole small file read through an open descriptor, at most `max` bytes.
bool read_fd(int fd, size_t max, std::string* out) {
  out->clear();
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    out->append(buf, static_cast<size_t>(n));
    if (out->size() > max) return false;
  }
}

// Writes `text` as `name` in dirfd: a new temporary file, given to uid with
// `mode`, renamed over the name.
bool replace_file(int dirfd, const std::string& name, const std::string& text, uid_t uid,
                  mode_t mode, std::string* error) {
  const std::string tmp = "." + name + ".tmp";
  // A temporary file left by a killed session: the directory is root's, so it is ours.
  ::unlinkat(dirfd, tmp.c_str(), 0);
  const int fd =
      ::openat(dirfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    *error = "cannot create " + tmp + ": " + std::strerror(errno);
    return false;
  }
  size_t off = 0;
  bool ok = true;
  while (ok && off < text.size()) {
    const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ok = false;
    off += n > 0 ? static_cast<size_t>(n) : 0;
  }
  const int werr = errno;
  if (ok && (::fchown(fd, uid, static_cast<gid_t>(-1)) != 0 || ::fchmod(fd, mode) != 0)) ok = false;
  if (::close(fd) != 0) ok = false;
  if (!ok || ::renameat(dirfd, tmp.c_str(), dirfd, name.c_str()) != 0) {
    *error = "cannot write " + name + ": " + std::strerror(ok ? errno : werr);
    ::unlinkat(dirfd, tmp.c_str(), 0);
    return false;
  }
  return true;
}

}  // namespace

std::string stalls_file_name(uid_t uid) {
  return "stalls.u" + std::to_string(static_cast<unsigned long>(uid));
}

bool parse_stalls_file_name(const std::string& name, uid_t* uid) {
  const std::string p = "stalls.u";
  if (name.compare(0, p.size(), p) != 0 || name.size() == p.size() || name.size() > p.size() + 10)
    return false;
  unsigned long long v = 0;
  for (size_t i = p.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || (i == p.size() && name[i] == '0' && name.size() > i + 1))
      return false;
    v = v * 10 + static_cast<unsigned>(name[i] - '0');
  }
  if (v >= UINT32_MAX) return false;
  *uid = static_cast<uid_t>(v);
  return true;
}

void write_stall_event(JsonWriter& w, const StallEvent& e, bool with_mono) {
  w.begin_object();
  w.field("pid", static_cast<uint64_t>(e.pid)).field("tid", static_cast<uint64_t>(e.tid));
  w.field("rank", e.rank).field("kind", e.slow_op ? "slow_op" : "stall");
  w.field("cq", e.cq).field("op", e.op).field("bytes", e.bytes);
  if (with_mono) w.field("end_mono_ns", e.end_mono_ns);
  w.field("end_real_ns", e.end_real_ns).field("dur_ns", e.dur_ns);
  w.field("cause", e.cause).field("why", e.why);
  w.end_object();
}

std::string stalls_to_json(const StallsDoc& d) {
  std::string text;
  if (!json_text(
          &text,
          [&](JsonWriter& w) {
            w.begin_object();
            w.field("format", kFormat).field("version", kFormatVersion);
            w.field("session_pid", d.session_pid);
            w.field("updated_real_ns", d.updated_real_ns)
                .field("updated_mono_ns", d.updated_mono_ns);
            w.key("recent").begin_array();
            for (const StallEvent& e : d.recent) write_stall_event(w, e, true);
            w.end_array();
            w.key("counts").begin_array();
            for (const CauseCount& c : d.counts) {
              w.begin_object();
              w.field("pid", static_cast<uint64_t>(c.pid))
                  .field("rank", c.rank)
                  .field("cause", c.cause);
              w.field("stalls", c.stalls).field("slow_ops", c.slow_ops);
              w.end_object();
            }
            w.end_array();
            w.end_object();
          },
          false))
    return "";
  return text;
}

bool stalls_from_json(const std::string& text, StallsDoc* d, std::string* why) {
  using nlohmann::json;
  if (text.size() > kMaxStallsFileBytes) {
    *why = "too large";
    return false;
  }
  try {
    const json j = json::parse(text);
    if (!j.is_object() || j.value("format", "") != kFormat ||
        j.value("version", uint64_t{0}) != kFormatVersion) {
      *why = "not a live stalls file of this version";
      return false;
    }
    StallsDoc out;
    out.session_pid = j.at("session_pid").get<uint64_t>();
    out.updated_real_ns = j.at("updated_real_ns").get<uint64_t>();
    out.updated_mono_ns = j.at("updated_mono_ns").get<uint64_t>();
    for (const json& e : j.at("recent")) {
      if (out.recent.size() >= kRecentStalls) break;
      StallEvent s;
      s.pid = e.at("pid").get<uint32_t>();
      s.tid = e.at("tid").get<uint32_t>();
      s.rank = cut(e.at("rank").get<std::string>(), 64);
      s.slow_op = e.at("kind").get<std::string>() == "slow_op";
      s.cq = e.at("cq").get<uint64_t>();
      s.op = cut(e.at("op").get<std::string>(), 64);
      s.bytes = e.at("bytes").get<uint64_t>();
      s.end_mono_ns = e.at("end_mono_ns").get<uint64_t>();
      s.end_real_ns = e.at("end_real_ns").get<uint64_t>();
      s.dur_ns = e.at("dur_ns").get<uint64_t>();
      s.cause = cut(e.at("cause").get<std::string>(), 32);
      s.why = cut(e.at("why").get<std::string>());
      out.recent.push_back(std::move(s));
    }
    for (const json& e : j.at("counts")) {
      if (out.counts.size() >= kMaxCounts) break;
      CauseCount c;
      c.pid = e.at("pid").get<uint32_t>();
      c.rank = cut(e.at("rank").get<std::string>(), 64);
      c.cause = cut(e.at("cause").get<std::string>(), 32);
      c.stalls = e.at("stalls").get<uint64_t>();
      c.slow_ops = e.at("slow_ops").get<uint64_t>();
      out.counts.push_back(std::move(c));
    }
    *d = std::move(out);
    return true;
  } catch (const std::exception& e) {
    *why = std::string("malformed: ") + e.what();
    return false;
  }
}

StallsPublisher::~StallsPublisher() { close(); }

// A flood of short stalls (a loaded node preempts ranks every few ms) so
// never pushes out the long one a user is looking for.
void add_recent(std::vector<StallEvent>* recent, const StallEvent& e) {
  recent->push_back(e);
  if (recent->size() <= kRecentStalls) return;
  auto gone = recent->begin();
  if (gone->end_mono_ns + kLongestKeptMs * 1000000ULL >= e.end_mono_ns) {
    const auto last = recent->end() - static_cast<std::ptrdiff_t>(kNewestKept);
    gone = std::min_element(recent->begin(), last, [](const StallEvent& x, const StallEvent& y) {
      return x.dur_ns < y.dur_ns;
    });
  }
  recent->erase(gone);
}

bool StallsPublisher::open(const std::string& dir, std::string* why) {
  dirfd_ = open_checked_dir(dir, true, why);
  if (dirfd_ < 0) return false;
  char text[128];
  std::snprintf(text, sizeof(text), "{\"pid\":%ld,\"start_time\":%llu,\"started_real_ns\":%llu}\n",
                static_cast<long>(::getpid()),
                static_cast<unsigned long long>(process_start_time(::getpid())),
                static_cast<unsigned long long>(real_ns()));
  if (!replace_file(dirfd_, kSessionFileName, text, ::geteuid(), 0644, why)) {
    ::close(dirfd_);
    dirfd_ = -1;
    return false;
  }
  return true;
}

void StallsPublisher::add(uid_t uid, const StallEvent& e) {
  if (dirfd_ < 0) return;
  StallsDoc& d = docs_[uid];
  add_recent(&d.recent, e);
  auto it = std::find_if(d.counts.begin(), d.counts.end(), [&e](const CauseCount& c) {
    return c.pid == e.pid && c.cause == e.cause;
  });
  if (it == d.counts.end() && d.counts.size() < kMaxCounts) {
    d.counts.push_back({e.pid, e.rank, e.cause, 0, 0});
    it = d.counts.end() - 1;
  }
  if (it != d.counts.end()) ++(e.slow_op ? it->slow_ops : it->stalls);
  dirty_.insert(uid);
}

bool StallsPublisher::write(uid_t uid, StallsDoc& d, std::string* error) {
  d.session_pid = static_cast<uint64_t>(::getpid());
  d.updated_real_ns = real_ns();
  d.updated_mono_ns = mono_ns();
  return replace_file(dirfd_, stalls_file_name(uid), stalls_to_json(d), uid, 0400, error);
}

bool StallsPublisher::flush(uint64_t now_mono_ns, std::string* error) {
  bool ok = true;
  for (auto it = dirty_.begin(); it != dirty_.end();) {
    uint64_t& at = written_at_[*it];
    if (at && now_mono_ns - at < kMinRewriteMs * 1000000ULL) {
      ++it;
      continue;
    }
    at = now_mono_ns;
    std::string why;
    if (!write(*it, docs_[*it], &why)) {
      if (ok && error) *error = why;
      ok = false;
    }
    it = dirty_.erase(it);
  }
  return ok;
}

void StallsPublisher::close() {
  if (dirfd_ < 0) return;
  for (const auto& kv : docs_) ::unlinkat(dirfd_, stalls_file_name(kv.first).c_str(), 0);
  ::unlinkat(dirfd_, kSessionFileName, 0);
  ::close(dirfd_);
  dirfd_ = -1;
  docs_.clear();
  dirty_.clear();
}

bool read_session(const std::string& dir, const std::string& proc_root, SessionInfo* s) {
  std::string why;
  const int dfd = open_checked_dir(dir, false, &why);
  if (dfd < 0) return false;
  const int fd = ::openat(dfd, kSessionFileName, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  ::close(dfd);
  if (fd < 0) return false;
  struct stat st;
  std::string text;
  const bool read_ok =
      ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 && read_fd(fd, 4096, &text);
  ::close(fd);
  if (!read_ok) return false;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    const long pid = j.at("pid").get<long>();
    const uint64_t start = j.at("start_time").get<uint64_t>();
    if (pid <= 0 || pid > INT32_MAX || !start ||
        process_start_time(static_cast<pid_t>(pid), proc_root) != start)
      return false;  // a session that ended without removing its file
    s->pid = pid;
    s->started_real_ns = j.at("started_real_ns").get<uint64_t>();
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

void read_stalls(const std::string& dir, uid_t caller, std::map<uid_t, StallsDoc>* out,
                 std::vector<std::string>* problems) {
  out->clear();
  std::string why;
  const int dfd = open_checked_dir(dir, false, &why);
  if (dfd < 0) return;
  std::vector<std::pair<std::string, uid_t>> names;
  if (caller != 0) {
    names.push_back({stalls_file_name(caller), caller});
  } else if (DIR* d = ::fdopendir(::dup(dfd))) {
    while (struct dirent* e = ::readdir(d)) {
      uid_t u = 0;
      if (parse_stalls_file_name(e->d_name, &u) && names.size() < 65536)
        names.push_back({e->d_name, u});
    }
    ::closedir(d);
  }
  for (const auto& [name, uid] : names) {
    const int fd = ::openat(dfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;  // none yet (no stall of this user's), or not readable
    struct stat st;
    std::string text;
    const bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == uid &&
                    read_fd(fd, kMaxStallsFileBytes, &text);
    ::close(fd);
    StallsDoc d;
    if (!ok) {
      if (problems) problems->push_back(name + ": not a file of its user's, or too large");
      continue;
    }
    if (!stalls_from_json(text, &d, &why)) {
      if (problems) problems->push_back(name + ": " + why);
      continue;
    }
    (*out)[uid] = std::move(d);
  }
  ::close(dfd);
}

}  // namespace live
}  // namespace fabtrace
