#include "userspace/launch.h"

#include <limits.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>

#include "common/path_template.h"
#include "common/printable.h"

extern char** environ;

namespace fabtrace {

namespace {

std::string self_dir() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  std::string p(buf);
  return p.substr(0, p.find_last_of('/'));
}

bool is_file(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

std::string find_preload() {
  if (const char* e = std::getenv("FABTRACE_PRELOAD")) return e;
  // Relative to this executable: an install (bin/ -> lib/<multiarch>/, under
  // whatever prefix it went), then the build tree (userspace/ -> preload/).
  const std::string d = self_dir();
  for (const std::string& c : {d + "/" FABTRACE_BIN_TO_LIB "/" FABTRACE_PRELOAD_NAME,
                               d + "/" FABTRACE_BUILD_TO_PRELOAD "/" FABTRACE_PRELOAD_NAME}) {
    if (is_file(c)) {
      char real[PATH_MAX];
      return realpath(c.c_str(), real) ? std::string(real) : c;
    }
  }
  return "";
}

std::string prepare_output_dir(const std::string& dir, std::string* error) {
  if (!is_path_template(dir)) {
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      *error = "cannot create " + printable(dir) + ": " + std::strerror(errno);
      return "";
    }
    return dir;
  }
  std::string path, why;
  const int fd = open_template_dir(dir, template_values_of_self(), &path, &why);
  if (fd < 0) {
    *error = "cannot use the directory " + printable(dir) + ": " + why;
    return "";
  }
  ::close(fd);
  return path;
}

pid_t launch(const std::vector<std::string>& argv,
             const std::vector<std::pair<std::string, std::string>>& set, std::string* error) {
  if (argv.empty()) {
    *error = "no command";
    return -1;
  }
  std::map<std::string, std::string> vars;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq) vars[std::string(*e, static_cast<size_t>(eq - *e))] = eq + 1;
  }
  for (const auto& kv : set) vars[kv.first] = kv.second;
  std::vector<std::string> env;
  for (const auto& kv : vars) env.push_back(kv.first + "=" + kv.second);
  std::vector<char*> envp, args;
  for (std::string& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> a = argv;
  for (std::string& s : a) args.push_back(s.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), envp.data());
  if (rc != 0) {
    *error = "cannot run " + argv[0] + ": " + std::strerror(rc);
    return -1;
  }
  return pid;
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace fabtrace
