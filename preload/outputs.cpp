#include "preload/outputs.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "common/env.h"
#include "common/path_template.h"
#include "common/rank.h"
#include "common/safe_output.h"

namespace fabtrace {

namespace {

// The directory of the outputs: FABTRACE_DIR, expanded once when it is a
// template (common/path_template.h; a child the program forks writes beside
// its parent). "" when it cannot be used (said once).
const std::string& output_dir(const OutputPlace& where) {
  static std::string dir;
  static std::once_flag once;
  std::call_once(once, [&where] {
    if (where.to_stderr) return;
    std::string path, why;
    const int fd = open_template_dir(where.dir, template_values_of_self(), &path, &why);
    if (fd < 0) {
      log_line(
          "warning: FABTRACE_DIR=%s cannot be used (%s): the report goes to stderr and no "
          "files are written",
          where.dir.c_str(), why.c_str());
      return;
    }
    ::close(fd);
    dir = path;
  });
  return dir;
}

}  // namespace

std::string output_host() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '?';
  return output_token(host);
}

std::string output_path(OutputKind kind, const OutputPlace& where) {
  const std::string& dir = output_dir(where);
  if (dir.empty()) return "";
  return dir + "/" + output_file_name(kind, output_host(), where.rank, static_cast<long>(getpid()));
}

std::FILE* create_output(const std::string& path, const char* instead) {
  std::string why;
  std::FILE* f = create_new_stream(path, &why);
  if (!f) log_line("warning: cannot create %s: %s; %s", path.c_str(), why.c_str(), instead);
  return f;
}

bool close_output(std::FILE* f, std::string* why) {
  int err = 0;
  if (std::fflush(f) != 0 || std::ferror(f)) err = errno ? errno : EIO;
  if (std::fclose(f) != 0 && !err) err = errno ? errno : EIO;
  if (err) *why = std::strerror(err);
  return err == 0;
}

}  // namespace fabtrace
