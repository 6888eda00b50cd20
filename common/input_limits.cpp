#include "common/input_limits.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

namespace fabtrace {

int open_regular_file(const std::string& path, std::string* error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    if (error) *error = std::string("cannot open: ") + std::strerror(errno);
    return -1;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (error) *error = "not a regular file";
    ::close(fd);
    return -1;
  }
  // Regular files never block; reads go on as usual.
  const int fl = ::fcntl(fd, F_GETFL);
  if (fl >= 0) ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return fd;
}

bool read_bounded_file(const std::string& path, uint64_t max_bytes, std::string* text,
                       std::string* error) {
  text->clear();
  const int fd = open_regular_file(path, error);
  if (fd < 0) return false;
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    if (error) *error = std::string("cannot stat: ") + std::strerror(errno);
    ::close(fd);
    return false;
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes) {
    if (error)
      *error = "too large: " + std::to_string(size) + " bytes, more than the " +
               std::to_string(max_bytes) + " fabtrace reads in such a file";
    ::close(fd);
    return false;
  }
  // The size is read once: a file that grows meanwhile is read up to it.
  text->resize(static_cast<size_t>(size));
  size_t got = 0;
  while (got < text->size()) {
    const ssize_t r = ::read(fd, &(*text)[got], text->size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      if (error) *error = std::string("read error: ") + std::strerror(errno);
      ::close(fd);
      text->clear();
      return false;
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  text->resize(got);
  ::close(fd);
  return true;
}

bool json_depth_within(const char* text, size_t len, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < len; ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return false;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return true;
}

bool finite_in(double v, double lo, double hi) { return std::isfinite(v) && v >= lo && v <= hi; }

bool double_to_count(double d, uint64_t* out) {
  if (!finite_in(d, 0.0, static_cast<double>(limits::kMaxCount))) return false;
  *out = static_cast<uint64_t>(d);
  return true;
}

}  // namespace fabtrace
