#include "common/live_read.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <tuple>

#include "common/env.h"
#include "common/live_seqlock.h"
#include "common/op_kinds.h"

namespace fabtrace {
namespace live {

namespace {

// A descriptor closed on every way out.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

// Whether some open file description holds a lock on the file (its process
// holds a read lock while it lives: preload/live.h).
bool locked_by_its_process(int fd) {
  struct flock fl = {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  return ::fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
}

bool fail(std::string* why, const std::string& what) {
  *why = what;
  return false;
}

}  // namespace

ReadOptions default_read_options() {
  ReadOptions o;
  o.caller = ::geteuid();
  const std::string d = env_trimmed("FABTRACE_LIVE_DIR");
  if (!d.empty()) o.dir = d;
  return o;
}

bool process_owner(pid_t pid, const std::string& proc_root, uid_t* uid) {
  struct stat st;
  const std::string p = proc_root + "/" + std::to_string(static_cast<long>(pid));
  if (::stat(p.c_str(), &st) != 0) return false;
  *uid = st.st_uid;
  return true;
}

char process_state(pid_t pid, const std::string& proc_root) {
  const std::string path = proc_root + "/" + std::to_string(static_cast<long>(pid)) + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return 0;
  char buf[512];
  const ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');
  return p && p[1] == ' ' ? p[2] : 0;
}

bool read_snapshot(int dirfd, const std::string& name, const ReadOptions& opt, Snapshot* out,
                   std::string* why, bool* stale) {
  *stale = false;
  uid_t name_uid = 0;
  pid_t name_pid = 0;
  if (!parse_file_name(name, &name_uid, &name_pid)) return fail(why, "not a live snapshot's name");
  // O_NONBLOCK: a FIFO planted at the name must not hang the reader.
  Fd f(::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (f.fd < 0) return fail(why, std::string("cannot open: ") + std::strerror(errno));
  struct stat st;
  if (::fstat(f.fd, &st) != 0) return fail(why, std::string("fstat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail(why, "not a regular file");
  // The owner decides, never the name: a user's file is theirs to read.
  if (opt.caller != 0 && st.st_uid != opt.caller) return fail(why, "another user's");
  if (st.st_uid != name_uid) return fail(why, "its owner is not the user its name says");
  // The magic first: the writer stores it after the rest of the head.
  uint64_t magic = 0;
  Head h;
  if (!detail::pread_all(f.fd, &magic, sizeof(magic), 0) || magic != kMagic)
    return fail(why, "no live snapshot magic (not written yet, or not one)");
  detail::acquire_fence();
  if (!detail::pread_all(f.fd, &h, sizeof(h), 0)) return fail(why, "shorter than its head");
  if (h.c[kh_version] != kVersion)
    return fail(why, "version " + std::to_string(h.c[kh_version]) + ", this fabtrace reads " +
                         std::to_string(kVersion));
  Layout lay;
  lay.link_cap = h.c[kh_link_cap];
  lay.cq_cap = h.c[kh_cq_cap];
  if (lay.link_cap > kMaxLinkCap || lay.cq_cap > kMaxCqCap)
    return fail(why, "capacities too large");
  if (static_cast<uint64_t>(st.st_size) != lay.file_size())
    return fail(why, "its size is not what its head says");
  if (h.c[kh_pid] != static_cast<uint64_t>(name_pid) || h.c[kh_uid] != st.st_uid)
    return fail(why, "its head names another process or user than its name");
  // Alive: the process with that pid is the one that wrote it (its start time),
  // it is the file owner's, and it holds the file's lock.
  uid_t puid = 0;
  const uint64_t start = process_start_time(name_pid, opt.proc_root);
  if (!start || start != h.c[kh_start_time] || !process_owner(name_pid, opt.proc_root, &puid)) {
    *stale = true;
    return fail(why, "stale: its process is gone");
  }
  if (!locked_by_its_process(f.fd)) {
    *stale = true;
    return fail(why, "stale: its process no longer holds it (exec or killed)");
  }
  if (puid != st.st_uid) return fail(why, "its process is another user's");

  std::vector<uint64_t> body(lay.body_words());
  if (!read_seqlocked_fd(f.fd, Layout::kSeqOffset, Layout::kBodyOffset, body.data(), body.size(),
                         opt.tries))
    return fail(why, "no consistent snapshot (the writer was always inside a write)");
  Snapshot s;
  s.name = name;
  s.owner = st.st_uid;
  std::copy(std::begin(h.c), std::end(h.c), s.head);
  s.host = h.host.get();
  s.rank = h.rank.get();
  s.job = h.job.get();
  s.comm = h.comm.get();
  std::copy(body.begin(), body.begin() + kProcessFields, s.proc);
  if (s.proc[kp_links] > lay.link_cap || s.proc[kp_cqs] > lay.cq_cap)
    return fail(why, "more rows than its capacity");
  const LinkRow* lr = reinterpret_cast<const LinkRow*>(body.data() + Layout::kLinksWord);
  for (uint64_t i = 0; i < s.proc[kp_links]; ++i) {
    Link l;
    std::copy(std::begin(lr[i].c), std::end(lr[i].c), l.c);
    if (l.c[kl_op] >= static_cast<uint64_t>(kOpKindCount)) return fail(why, "an unknown op");
    l.local = lr[i].local.get();
    l.remote = lr[i].remote.get();
    s.links.push_back(std::move(l));
  }
  const CqRow* cr = reinterpret_cast<const CqRow*>(body.data() + lay.cqs_word());
  for (uint64_t i = 0; i < s.proc[kp_cqs]; ++i) {
    Cq q;
    std::copy(std::begin(cr[i].c), std::end(cr[i].c), q.c);
    s.cqs.push_back(q);
  }
  *out = std::move(s);
  return true;
}

bool read_snapshots(const ReadOptions& opt, std::vector<Snapshot>* out,
                    std::vector<Skipped>* skipped, std::string* error) {
  out->clear();
  const int dfd = ::open(opt.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) {
    *error = opt.dir + ": " + std::strerror(errno);
    return false;
  }
  DIR* d = ::fdopendir(dfd);
  if (!d) {
    *error = opt.dir + ": " + std::strerror(errno);
    ::close(dfd);
    return false;
  }
  // Bounded: a directory stuffed with names costs a bounded walk.
  constexpr size_t kMaxFiles = 65536;
  size_t seen = 0;
  while (struct dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.compare(0, std::strlen(kFilePrefix), kFilePrefix) != 0) continue;
    if (++seen > kMaxFiles) break;
    uid_t u = 0;
    pid_t p = 0;
    // Another user's name is not opened by a user (it could not be read);
    // root opens every one, and the owner check decides.
    if (parse_file_name(name, &u, &p) && opt.caller != 0 && u != opt.caller) continue;
    Snapshot s;
    std::string why;
    bool stale = false;
    if (read_snapshot(::dirfd(d), name, opt, &s, &why, &stale))
      out->push_back(std::move(s));
    else if (skipped)
      skipped->push_back({name, why, stale});
  }
  ::closedir(d);
  std::sort(out->begin(), out->end(), [](const Snapshot& a, const Snapshot& b) {
    return std::make_tuple(a.rank.size(), a.rank, a.pid()) <
           std::make_tuple(b.rank.size(), b.rank, b.pid());
  });
  return true;
}

}  // namespace live
}  // namespace fabtrace
