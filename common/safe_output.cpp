#include "common/safe_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
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
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
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

int open_own_dir(const std::string& path, bool create, std::string* error) {
  auto fail = [&](const std::string& why) {
    if (error) *error = path + ": " + why;
    return -1;
  };
  if (create && ::mkdir(path.c_str(), kOutputDirMode) != 0 && errno != EEXIST)
    return fail(std::string("cannot create the directory: ") + std::strerror(errno));
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    struct stat st;
    if ((err == ELOOP || err == ENOTDIR) && ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
      return fail("is a symbolic link: refused (remove it, or name another directory)");
    if (err == ENOTDIR) return fail("not a directory");
    return fail(std::strerror(err));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return fail(std::strerror(err));
  }
  if (st.st_uid != ::geteuid()) {
    ::close(fd);
    return fail("owned by uid " + std::to_string(st.st_uid) +
                ", not by this user: refused (another user could replace what is written there)");
  }
  return fd;
}

ReplacingFile::~ReplacingFile() { abandon(); }

bool ReplacingFile::open(const std::string& path, std::string* error) {
  abandon();
  path_ = path;
  std::string dir;
  split_path(path, &dir, &name_);
  std::string why;
  dirfd_ = open_own_dir(dir, false, &why);
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
