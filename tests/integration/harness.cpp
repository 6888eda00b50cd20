#include "tests/integration/harness.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace fabtrace::test {

namespace {
std::string preload_value() {
  std::string v = SANITIZER_PRELOAD;
  if (!v.empty()) v += ":";
  return v + FABTRACE_LIB;
}

void exec_child(const std::vector<std::string>& argv, const Env& env, bool preload) {
  if (preload) {
    setenv("LD_PRELOAD", preload_value().c_str(), 1);
  } else {
    unsetenv("LD_PRELOAD");
  }
  // A traced program that leaks is not our failure; sanitizer reports from the
  // preload itself still abort with their own exit code.
  setenv("ASAN_OPTIONS", "detect_leaks=0", 0);
  for (auto& kv : env) setenv(kv.first.c_str(), kv.second.c_str(), 1);
  std::vector<char*> a;
  for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  execvp(a[0], a.data());
  std::fprintf(stderr, "exec %s: %s\n", a[0], std::strerror(errno));
  _exit(127);
}

int decode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}
}  // namespace

std::string make_temp_dir(const std::string& tag) {
  const char* base = std::getenv("TMPDIR");
  std::string t = std::string(base && *base ? base : "/tmp") + "/fabtrace-test-" + tag + "-XXXXXX";
  std::vector<char> buf(t.begin(), t.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
  return buf.data();
}

int spawn(const std::vector<std::string>& argv, const Env& env, const std::string& log_path,
          bool preload) {
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);  // its own group, so a test can kill it with everything it forked
    const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    exec_child(argv, env, preload);
  }
  return pid;
}

int wait_for(int pid, int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return decode(status);
    if (r < 0) return -1;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(-pid, SIGKILL);  // the whole group: a two-rank program forks its peer
      waitpid(pid, &status, 0);
      return 128 + SIGKILL;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

RunResult run(const std::vector<std::string>& argv, const Env& env, bool preload, int timeout_s) {
  char tmpl[] = "/tmp/fabtrace-run-XXXXXX";
  const int fd = mkstemp(tmpl);
  if (fd >= 0) close(fd);
  RunResult r;
  r.exit_code = wait_for(spawn(argv, env, tmpl, preload), timeout_s);
  std::ifstream in(tmpl);
  std::stringstream ss;
  ss << in.rdbuf();
  r.output = ss.str();
  unlink(tmpl);
  return r;
}

nlohmann::json load_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  return nlohmann::json::parse(in);
}

std::vector<std::string> list_files(const std::string& dir, const std::string& prefix,
                                    const std::string& suffix) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (struct dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n.size() >= prefix.size() + suffix.size() && n.rfind(prefix, 0) == 0 &&
        n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(dir + "/" + n);
  }
  closedir(d);
  return out;
}

std::vector<nlohmann::json> reports_of_rank(const std::string& dir, const std::string& rank) {
  std::vector<nlohmann::json> out;
  for (const std::string& f : list_files(dir, "fabtrace.", ".json")) {
    nlohmann::json j = load_json(f);
    if (j.value("rank", "") == rank) out.push_back(std::move(j));
  }
  return out;
}

std::map<std::string, OpTotals> op_totals(const nlohmann::json& report) {
  std::map<std::string, OpTotals> t;
  for (const auto& link : report.at("links")) {
    for (const auto& o : link.at("ops")) {
      OpTotals& x = t[o.at("op").get<std::string>()];
      x.count += o.at("count").get<uint64_t>();
      x.errors += o.at("errors").get<uint64_t>();
      x.untimed += o.at("untimed").get<uint64_t>();
      x.unfinished += o.at("unfinished").get<uint64_t>();
      x.eagain += o.at("eagain").get<uint64_t>();
      x.refused += o.at("refused").get<uint64_t>();
    }
  }
  return t;
}

int free_port() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t l = sizeof(a);
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &l);
  close(s);
  return ntohs(a.sin_port);
}

}  // namespace fabtrace::test
