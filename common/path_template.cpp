#include "common/path_template.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/printable.h"
#include "common/rank.h"
#include "common/safe_output.h"

namespace fabtrace {

namespace {

bool component_text(const std::string& what, const std::string& value, std::string* error) {
  if (value.find('/') != std::string::npos || value == "." || value == ".." ||
      value.find('\0') != std::string::npos) {
    *error = what + " is '" + printable(value) + "', which is not a directory name";
    return false;
  }
  return true;
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  int release() {
    const int f = fd;
    fd = -1;
    return f;
  }
};

}  // namespace

TemplateValues template_values_of_self() {
  TemplateValues v;
  JobMeta m;
  job_ids_from([](const char* n) { return std::getenv(n); }, &m);
  v.job_id = m.job_id;
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '?';
  v.host = output_token(host);
  v.pid = static_cast<long>(getpid());
  v.getenv = [](const char* n) -> const char* { return std::getenv(n); };
  return v;
}

bool is_path_template(const std::string& tmpl) { return tmpl.find('%') != std::string::npos; }

bool expand_path_template(const std::string& tmpl, const TemplateValues& v, std::string* out,
                          size_t* first_expanded, std::string* error) {
  out->clear();
  *first_expanded = std::string::npos;
  const auto put = [&](const std::string& what, const std::string& value) {
    if (!component_text(what, value, error)) return false;
    if (*first_expanded == std::string::npos) *first_expanded = out->size();
    *out += value;
    return true;
  };
  for (size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] != '%') {
      *out += tmpl[i];
      continue;
    }
    if (i + 1 >= tmpl.size()) {
      *error = "a '%' ends it (%% is a '%')";
      return false;
    }
    const char c = tmpl[++i];
    bool ok = true;
    if (c == '%') {
      *out += '%';
    } else if (c == 'j') {
      ok = put("%j (the job id)", v.job_id.empty() ? "nojob" : v.job_id);
    } else if (c == 'h') {
      ok = put("%h (the host)", v.host);
    } else if (c == 'p') {
      ok = put("%p", std::to_string(v.pid));
    } else if (c == 'q') {
      const size_t close = tmpl.find('}', i);
      if (i + 1 >= tmpl.size() || tmpl[i + 1] != '{' || close == std::string::npos ||
          close == i + 2) {
        *error = "%q takes a variable: %q{NAME}";
        return false;
      }
      const std::string name = tmpl.substr(i + 2, close - i - 2);
      const char* value = v.getenv ? v.getenv(name.c_str()) : nullptr;
      if (!value || !*value) {
        *error = "%q{" + printable(name) + "}: " + printable(name) + " is not set";
        return false;
      }
      ok = put("%q{" + printable(name) + "}", value);
      i = close;
    } else {
      *error = "unknown %" + printable(std::string(1, c)) + " (%j %h %p %q{VAR} %%)";
      return false;
    }
    if (!ok) return false;
  }
  return true;
}

int open_template_dir(const std::string& tmpl, const TemplateValues& v, std::string* path,
                      std::string* error) {
  size_t first = 0;
  std::string why;
  if (!expand_path_template(tmpl, v, path, &first, &why)) {
    *error = printable(tmpl) + ": " + why;
    return -1;
  }
  const std::string& p = *path;
  if (p.empty()) {
    *error = "an empty directory name";
    return -1;
  }
  // The literal part: up to the last '/' before the first expanded value.
  size_t own_from = p.size();  // where the template's own components start
  if (first != std::string::npos) {
    const size_t slash = p.rfind('/', first);
    own_from = slash == std::string::npos ? 0 : slash + 1;
  }
  Fd dir;
  if (own_from == p.size()) {  // nothing expanded: the directory as it is
    dir.fd = ::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir.fd < 0) *error = std::strerror(errno);
    return dir.release();
  }
  const std::string base = own_from == 0 ? "." : p.substr(0, own_from);
  dir.fd = ::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir.fd < 0 && errno == ENOENT) {
    // The literal part is the user's: made as `mkdir -p` would (links in it
    // followed), then opened.
    for (size_t at = base.find('/', 1); at != std::string::npos; at = base.find('/', at + 1))
      if (::mkdir(base.substr(0, at).c_str(), kOutputDirMode) != 0 && errno != EEXIST) break;
    dir.fd = ::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  if (dir.fd < 0) {
    *error = printable(base) + ": " + std::strerror(errno);
    return -1;
  }
  std::vector<std::string> parts;
  for (size_t a = own_from; a <= p.size();) {
    size_t b = p.find('/', a);
    if (b == std::string::npos) b = p.size();
    if (b > a) parts.push_back(p.substr(a, b - a));
    a = b + 1;
  }
  std::string done = base == "." ? "" : base;
  for (const std::string& c : parts) {
    done += (done.empty() || done.back() == '/' ? "" : "/") + c;
    if (c == "." || c == "..") {
      *error = printable(done) + ": '" + c + "' after an expanded value";
      return -1;
    }
    int fd = ::openat(dir.fd, c.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
      if (::mkdirat(dir.fd, c.c_str(), kOutputDirMode) != 0 && errno != EEXIST) {
        *error = "cannot create " + printable(done) + ": " + std::strerror(errno);
        return -1;
      }
      fd = ::openat(dir.fd, c.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0) {
      const int e = errno;
      struct stat st;
      const bool link =
          fstatat(dir.fd, c.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
      *error = printable(done) +
               (link ? ": a symbolic link (not followed)" : ": " + std::string(std::strerror(e)));
      return -1;
    }
    Fd next;
    next.fd = fd;
    struct stat st;
    if (fstat(fd, &st) != 0) {
      *error = printable(done) + ": " + std::strerror(errno);
      return -1;
    }
    if (st.st_uid != geteuid()) {
      *error = printable(done) + ": owned by uid " + std::to_string(st.st_uid) + ", not by " +
               std::to_string(geteuid());
      return -1;
    }
    ::close(dir.fd);
    dir.fd = next.release();
  }
  return dir.release();
}

}  // namespace fabtrace
