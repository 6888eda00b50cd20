#include "common/session_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace fabtrace {

namespace {

// The holder of an flock on the file (dev, ino) in /proc/locks:
// "1: FLOCK  ADVISORY  WRITE 4242 00:1a:12345 0 EOF" ("->" lines wait for it).
long holder_in_proc_locks(dev_t dev, ino_t ino) {
  std::ifstream in("/proc/locks");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string id, kind, mode, access, where;
    long pid = 0;
    if (!(f >> id >> kind) || kind != "FLOCK") continue;
    if (!(f >> mode >> access >> pid >> where)) continue;
    unsigned maj = 0, min = 0;
    unsigned long long i = 0;
    if (std::sscanf(where.c_str(), "%x:%x:%llu", &maj, &min, &i) != 3) continue;
    if (maj == major(dev) && min == minor(dev) && i == static_cast<unsigned long long>(ino))
      return pid;
  }
  return 0;
}

// `dir`, opened without following a link, when it is a directory of this user
// that nobody else may write to. -1 with *why.
int open_lock_dir(const std::string& dir, bool create, std::string* why) {
  if (create && ::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    *why = "cannot create " + dir + ": " + std::strerror(errno);
    return -1;
  }
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    *why = dir + ": " + std::strerror(errno);
    return -1;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || st.st_uid != ::geteuid() || (st.st_mode & 022) != 0) {
    *why = dir + " is not this user's own directory (owner and mode are checked): refused";
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

SessionLock::~SessionLock() { release(); }

void SessionLock::release() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool SessionLock::acquire(std::string* error, const std::string& dir) {
  release();
  std::string why;
  const int dfd = open_lock_dir(dir, true, &why);
  if (dfd < 0) {
    *error = "cannot take the node's session lock: " + why;
    return false;
  }
  const int fd =
      ::openat(dfd, kSessionLockName, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
  const int open_err = errno;
  ::close(dfd);
  const std::string path = dir + "/" + kSessionLockName;
  struct stat st;
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      st.st_nlink != 1) {
    *error = "cannot take the node's session lock: " + path + ": " +
             (fd < 0 ? std::strerror(open_err) : "not a plain file of this user's: refused");
    if (fd >= 0) ::close(fd);
    return false;
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const long pid = err == EWOULDBLOCK ? holder_in_proc_locks(st.st_dev, st.st_ino) : 0;
    ::close(fd);
    if (err != EWOULDBLOCK) {
      *error = "cannot take the node's session lock " + path + ": " + std::strerror(err);
      return false;
    }
    *error = "another fabtrace record session runs on this node" +
             (pid > 0 ? " (pid " + std::to_string(pid) + ")" : std::string()) +
             ": one session per node (it holds " + path + "); stop it first";
    return false;
  }
  // The holder's pid in the file too, for people reading it.
  const std::string text = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) == 0) {
    const ssize_t n = ::pwrite(fd, text.data(), text.size(), 0);
    (void)n;  // informative only: /proc/locks says who holds it
  }
  fd_ = fd;
  return true;
}

long session_lock_holder(const std::string& dir) {
  struct stat st;
  const std::string path = dir + "/" + kSessionLockName;
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  return holder_in_proc_locks(st.st_dev, st.st_ino);
}

}  // namespace fabtrace
