#include "common/safe_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <random>

namespace fabtrace {

namespace {

std::string errno_text(int err) {
  if (err == EEXIST) return "something is already there (it is left as it is)";
  if (err == ELOOP) return "a symbolic link is there (not followed)";
  return std::strerror(err);
}

// (directory, last component) of a path; "." when it has no slash.
void split_path(const std::string& path, std::string* dir, std::string* name) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) {
    *dir = ".";
    *name = path;
  } else {
    *dir = slash == 0 ? "/" : path.substr(0, slash);
    *name = path.substr(slash + 1);
  }
}

// A directory path as held: no trailing or repeated slashes.
std::string normalized(const std::string& path) {
  std::string out;
  for (char c : path)
    if (c != '/' || out.empty() || out.back() != '/') out += c;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

// The directories held open by this process (OutputDir), by normalized path.
std::mutex g_held_mu;
std::map<std::string, int>& held() {
  static std::map<std::string, int> m;
  return m;
}

// A duplicate of the held descriptor of directory `dir`, or -1.
int dup_held(const std::string& dir) {
  std::lock_guard<std::mutex> lk(g_held_mu);
  const auto it = held().find(normalized(dir));
  return it == held().end() ? -1 : ::fcntl(it->second, F_DUPFD_CLOEXEC, 0);
}

std::string owner_text(uid_t uid) { return "uid " + std::to_string(uid); }

// Opens directory `path` one component at a time (every step relative to the
// last one's descriptor, so nothing can be swapped in between): a symbolic
// link on the way is followed only when a trusted owner made it, the last
// component never (ELOOP); `create` makes a missing last component. Returns an
// O_RDONLY|O_DIRECTORY fd, or -1 with *why.
int walk_to_dir(const std::string& path, bool create, std::string* why) {
  constexpr int kMaxLinks = 40;  // the kernel's own limit
  if (path.empty()) {
    *why = "an empty path";
    return -1;
  }
  int cur = ::open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (cur < 0) {
    *why = std::strerror(errno);
    return -1;
  }
  auto fail = [&](const std::string& text) {
    ::close(cur);
    *why = text;
    return -1;
  };
  std::deque<std::string> todo;
  auto push_front_parts = [&todo](const std::string& p) {
    std::deque<std::string> parts;
    size_t a = 0;
    while (a <= p.size()) {
      size_t b = p.find('/', a);
      if (b == std::string::npos) b = p.size();
      if (b > a) parts.push_back(p.substr(a, b - a));
      a = b + 1;
    }
    todo.insert(todo.begin(), parts.begin(), parts.end());
  };
  push_front_parts(path);
  int links = 0;
  while (!todo.empty()) {
    const std::string part = todo.front();
    todo.pop_front();
    if (part == ".") continue;
    const bool last = todo.empty();
    int next = ::openat(cur, part.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0 && errno == ENOENT && last && create) {
      if (::mkdirat(cur, part.c_str(), kOutputDirMode) != 0 && errno != EEXIST)
        return fail(std::string("cannot create the directory: ") + std::strerror(errno));
      next = ::openat(cur, part.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    }
    if (next < 0) return fail(std::strerror(errno));
    struct stat st;
    if (::fstat(next, &st) != 0) {
      const int err = errno;
      ::close(next);
      return fail(std::strerror(err));
    }
    if (S_ISLNK(st.st_mode)) {
      char target[4096];
      const ssize_t n = ::readlinkat(next, "", target, sizeof(target) - 1);
      ::close(next);
      if (last) return fail("is a symbolic link: refused (remove it, or name another directory)");
      if (!trusted_owner(st.st_uid))
        return fail("'" + part + "' on the way is a symbolic link of " + owner_text(st.st_uid) +
                    ", neither root nor this user: refused (another user could point it "
                    "anywhere)");
      if (n <= 0 || ++links > kMaxLinks) return fail(std::strerror(n <= 0 ? errno : ELOOP));
      target[n] = '\0';
      if (target[0] == '/') {
        const int root = ::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0) return fail(std::strerror(errno));
        ::close(cur);
        cur = root;
      }
      push_front_parts(target);
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      ::close(next);
      return fail(last ? "not a directory" : "'" + part + "' on the way is not a directory");
    }
    ::close(cur);
    cur = next;
  }
  const int fd = ::openat(cur, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const int err = errno;
  ::close(cur);
  if (fd < 0) *why = std::strerror(err);
  return fd;
}

}  // namespace

int create_new_file_at(int dirfd, const std::string& name, std::string* error) {
  if (name.empty() || name.find('/') != std::string::npos) {
    if (error) *error = "not a file name";
    return -1;
  }
  int fd;
  do {
    fd = ::openat(dirfd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  kOutputFileMode);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0 && error) *error = errno_text(errno);
  return fd;
}

int create_new_file(const std::string& path, std::string* error) {
  std::string dir, name;
  split_path(path, &dir, &name);
  int dfd = dup_held(dir);
  if (dfd < 0) dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) {
    if (error) *error = "directory " + dir + ": " + std::strerror(errno);
    return -1;
  }
  const int fd = create_new_file_at(dfd, name, error);
  ::close(dfd);
  return fd;
}

std::FILE* create_new_stream(const std::string& path, std::string* error) {
  const int fd = create_new_file(path, error);
  if (fd < 0) return nullptr;
  std::FILE* f = ::fdopen(fd, "w");
  if (!f) {
    if (error) *error = std::strerror(errno);
    ::close(fd);
  }
  return f;
}

bool trusted_owner(uid_t uid) {
  if (uid == 0 || uid == ::geteuid() || uid == ::getuid()) return true;
  if (::geteuid() != 0) return false;
  // Root through sudo: the user who ran it (sudo sets SUDO_UID; nobody else
  // writes a root process's environment).
  const char* s = std::getenv("SUDO_UID");
  if (!s || !*s) return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long v = std::strtoul(s, &end, 10);
  return errno == 0 && *end == '\0' && static_cast<uid_t>(v) == uid;
}

std::string numbered_name(const std::string& name, unsigned n) {
  const size_t dot = name.rfind('.');
  const std::string num = "." + std::to_string(n);
  if (dot == std::string::npos || dot == 0) return name + num;
  return name.substr(0, dot) + num + name.substr(dot);
}

int open_own_dir(const std::string& path, bool create, std::string* error) {
  std::string why;
  const int fd = walk_to_dir(path, create, &why);
  if (fd < 0) {
    if (error) *error = path + ": " + why;
    return -1;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    if (error) *error = path + ": " + std::strerror(err);
    return -1;
  }
  if (!trusted_owner(st.st_uid)) {
    ::close(fd);
    if (error)
      *error = path + ": owned by " + owner_text(st.st_uid) +
               ", not by this user or root: refused (another user could replace what is "
               "written there)";
    return -1;
  }
  return fd;
}

OutputDir::~OutputDir() { close(); }

bool OutputDir::open(const std::string& path, bool create, std::string* error) {
  close();
  const int fd = open_own_dir(path, create, error);
  return fd >= 0 && hold(fd, path, error);
}

bool OutputDir::open_owned_by(const std::string& path, uid_t uid, gid_t gid, std::string* error) {
  close();
  std::string why;
  const int fd = walk_to_dir(path, false, &why);
  if (fd < 0) {
    if (error) *error = path + ": " + why;
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_uid != uid) {
    const int err = errno;
    ::close(fd);
    if (error)
      *error = path + (st.st_uid != uid
                           ? ": owned by " + owner_text(st.st_uid) +
                                 ", not by the outputs' owner " + owner_text(uid) + ": refused"
                           : ": " + std::string(std::strerror(err)));
    return false;
  }
  if (!hold(fd, path, error)) return false;
  owned_ = true;
  owner_ = uid;
  group_ = gid;
  return true;
}

bool OutputDir::hold(int fd, const std::string& path, std::string* error) {
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    if (error) *error = path + ": " + std::strerror(errno);
    ::close(fd);
    return false;
  }
  fd_ = fd;
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  path_ = normalized(path);
  std::lock_guard<std::mutex> lk(g_held_mu);
  held()[path_] = fd_;
  return true;
}

void OutputDir::close() {
  if (fd_ < 0) return;
  {
    std::lock_guard<std::mutex> lk(g_held_mu);
    const auto it = held().find(path_);
    if (it != held().end() && it->second == fd_) held().erase(it);
  }
  ::close(fd_);
  fd_ = -1;
  owned_ = false;
}

constexpr unsigned kMaxOtherNames = 99;  // other names tried when one is taken

int OutputDir::create(const std::string& name, std::string* created, std::string* note,
                      std::string* error) const {
  std::string why;
  int fd = create_new_file_at(fd_, name, &why);
  std::string used = name;
  for (unsigned n = 1; fd < 0 && errno == EEXIST && n <= kMaxOtherNames; ++n) {
    used = numbered_name(name, n);
    fd = create_new_file_at(fd_, used, &why);
  }
  if (fd < 0) {
    if (error) *error = "cannot create " + path_of(used) + ": " + why;
    return -1;
  }
  // A file of a session writing for its user: theirs from the start (an fd of
  // a file just created, so nothing else can be given away).
  if (owned_ && ::fchown(fd, owner_, group_) != 0) {
    if (error) *error = "cannot give " + path_of(used) + " to its owner: " + std::strerror(errno);
    ::close(fd);
    ::unlinkat(fd_, used.c_str(), 0);
    return -1;
  }
  if (created) *created = used;
  if (note) {
    note->clear();
    if (used != name)
      *note = path_of(name) + " already exists (left as it is): written to " + path_of(used) +
              " instead";
  }
  return fd;
}

std::string OutputDir::free_name(const std::string& name) const {
  struct stat st;
  std::string used = name;
  for (unsigned n = 1;
       n <= kMaxOtherNames && ::fstatat(fd_, used.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0; ++n)
    used = numbered_name(name, n);
  return used;
}

std::FILE* OutputDir::create_stream(const std::string& name, std::string* created,
                                    std::string* note, std::string* error) const {
  const int fd = create(name, created, note, error);
  if (fd < 0) return nullptr;
  std::FILE* f = ::fdopen(fd, "w");
  if (!f) {
    if (error) *error = "cannot create " + path_of(name) + ": " + std::strerror(errno);
    ::close(fd);
  }
  return f;
}

std::FILE* create_output_file(const std::string& path, OutputDir* dir, std::string* written,
                              std::string* note, std::string* error) {
  std::string d, name;
  split_path(path, &d, &name);
  if (name.empty() || name == "." || name == "..") {
    if (error) *error = "cannot create " + path + ": not a file name";
    return nullptr;
  }
  std::string why;
  if (!dir->open(d, false, &why)) {
    if (error) *error = "cannot create " + path + ": the directory " + why;
    return nullptr;
  }
  std::string used;
  std::FILE* f = dir->create_stream(name, &used, note, error);
  if (f && written) *written = path.find('/') == std::string::npos ? used : dir->path_of(used);
  return f;
}

bool held_dir_identity(const std::string& path, dev_t* dev, ino_t* ino) {
  const int fd = dup_held(path);
  if (fd < 0) return false;
  struct stat st;
  const bool ok = ::fstat(fd, &st) == 0;
  ::close(fd);
  if (ok) {
    *dev = st.st_dev;
    *ino = st.st_ino;
  }
  return ok;
}

std::string held_path(const std::string& path) {
  const std::string p = normalized(path);
  std::lock_guard<std::mutex> lk(g_held_mu);
  for (const auto& [dir, fd] : held()) {
    if (p == dir) return "/proc/self/fd/" + std::to_string(fd);
    if (p.size() > dir.size() && p.compare(0, dir.size(), dir) == 0 && p[dir.size()] == '/')
      return "/proc/self/fd/" + std::to_string(fd) + p.substr(dir.size());
  }
  return path;
}

ReplacingFile::~ReplacingFile() { abandon(); }

bool ReplacingFile::open(const std::string& path, std::string* error) {
  abandon();
  path_ = path;
  std::string dir;
  split_path(path, &dir, &name_);
  std::string why;
  dirfd_ = dup_held(dir);
  if (dirfd_ < 0) dirfd_ = open_own_dir(dir, false, &why);
  if (dirfd_ < 0) {
    if (error) *error = "cannot create " + path + ": the directory " + why;
    return false;
  }
  std::random_device rd;
  for (int tries = 0; tries < 100 && fd_ < 0; ++tries) {
    char suffix[16];
    std::snprintf(suffix, sizeof(suffix), "%08x", static_cast<unsigned>(rd()));
    tmp_ = "." + name_ + "." + suffix + ".tmp";
    fd_ = create_new_file_at(dirfd_, tmp_, &why);
    if (fd_ < 0 && errno != EEXIST) break;
  }
  if (fd_ < 0) {
    if (error) *error = "cannot create " + path + ": " + why;
    ::close(dirfd_);
    dirfd_ = -1;
    return false;
  }
  return true;
}

std::FILE* ReplacingFile::stream() {
  if (!f_ && fd_ >= 0) f_ = ::fdopen(fd_, "w");
  return f_;
}

bool ReplacingFile::commit(std::string* error) {
  if (fd_ < 0) {
    if (error) *error = "no file open";
    return false;
  }
  int err = 0;
  if (f_) {
    if (std::fflush(f_) != 0 || std::ferror(f_)) err = errno ? errno : EIO;
    if (std::fclose(f_) != 0 && !err) err = errno;
    f_ = nullptr;
  } else if (::close(fd_) != 0 && errno != EINTR) {
    err = errno;
  }
  fd_ = -1;
  if (!err && ::renameat(dirfd_, tmp_.c_str(), dirfd_, name_.c_str()) != 0) {
    if (error) *error = "cannot rename into " + path_ + ": " + std::strerror(errno);
    abandon();
    return false;
  }
  if (err) {
    if (error) *error = "writing " + path_ + " failed: " + std::strerror(err);
    abandon();
    return false;
  }
  ::close(dirfd_);
  dirfd_ = -1;
  tmp_.clear();
  return true;
}

void ReplacingFile::abandon() {
  if (f_) {
    std::fclose(f_);
    f_ = nullptr;
    fd_ = -1;
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (dirfd_ >= 0) {
    if (!tmp_.empty()) ::unlinkat(dirfd_, tmp_.c_str(), 0);
    ::close(dirfd_);
  }
  dirfd_ = -1;
  tmp_.clear();
}

}  // namespace fabtrace
