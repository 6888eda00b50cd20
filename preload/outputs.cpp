#include "preload/outputs.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "common/env.h"
#include "common/rank.h"
#include "common/safe_output.h"
#include "preload/runtime.h"

namespace fabtrace {

namespace {

bool dir_usable() {
  static bool usable = false;
  static std::once_flag once;
  std::call_once(once, [] {
    const Runtime& rt = runtime();
    if (rt.cfg.to_stderr) return;
    const int fd = ::open(rt.cfg.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      log_line(
          "warning: FABTRACE_DIR=%s cannot be used (%s): the report goes to stderr and no "
          "files are written",
          rt.cfg.dir.c_str(), std::strerror(errno));
      return;
    }
    ::close(fd);
    usable = true;
  });
  return usable;
}

}  // namespace

std::string output_host() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '?';
  return output_token(host);
}

std::string output_path(OutputKind kind) {
  if (!dir_usable()) return "";
  const Runtime& rt = runtime();
  return rt.cfg.dir + "/" +
         output_file_name(kind, output_host(), rt.rank.text, static_cast<long>(getpid()));
}

std::FILE* create_output(const std::string& path, const char* instead) {
  std::string why;
  std::FILE* f = create_new_stream(path, &why);
  if (!f) log_line("warning: cannot create %s: %s; %s", path.c_str(), why.c_str(), instead);
  return f;
}

}  // namespace fabtrace
