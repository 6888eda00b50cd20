#include "tests/integration/harness.h"

#include "common/session_lock.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
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

// The child's complete environment, built in the parent: between fork and exec
// of a multithreaded process only async-signal-safe calls are allowed (another
// thread may hold the allocator's or the sanitizer's lock at the fork), so
// nothing is allocated or setenv'd on the child's side. posix_spawn does the
// rest (log redirection, process group) without running our code in the child.
std::vector<std::string> child_env(const Env& env, bool preload) {
  std::map<std::string, std::string> vars;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq) vars.emplace(std::string(*e, static_cast<size_t>(eq - *e)), std::string(eq + 1));
  }
  if (preload) {
    vars["LD_PRELOAD"] = preload_value();
  } else {
    vars.erase("LD_PRELOAD");
  }
  // A traced program that leaks is not our failure; sanitizer reports from the
  // preload itself still abort with their own exit code.
  vars.emplace("ASAN_OPTIONS", "detect_leaks=0");
  for (const auto& kv : env) vars[kv.first] = kv.second;
  std::vector<std::string> out;
  out.reserve(vars.size());
  for (const auto& kv : vars) out.push_back(kv.first + "=" + kv.second);
  return out;
}

std::vector<char*> c_strings(const std::vector<std::string>& v) {
  std::vector<char*> a;
  a.reserve(v.size() + 1);
  for (const std::string& s : v) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  return a;
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
  const std::vector<std::string> envs = child_env(env, preload);
  std::vector<char*> envp = c_strings(envs);
  std::vector<char*> args = c_strings(argv);
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawnattr_init(&attr);
  // Its own group, so a test can kill it with everything it forked.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &fa, &attr, args.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    // Said in the log, as the child would have; wait_for(-1) gives 127.
    std::ofstream(log_path) << "exec " << argv[0] << ": " << std::strerror(rc) << "\n";
    return -1;
  }
  return pid;
}

bool wait_listening(int port, int timeout_s) {
  // /proc/net/tcp{,6}: "sl local_address rem_address st ...", ports in hex, LISTEN = 0A.
  // Reading the table does not touch the server (a probe connection would be
  // taken as its peer).
  char want[8];
  std::snprintf(want, sizeof(want), ":%04X", port);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  do {
    for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
      std::ifstream in(table);
      std::string line;
      while (std::getline(in, line)) {
        std::istringstream f(line);
        std::string sl, local, remote, st;
        if (!(f >> sl >> local >> remote >> st)) continue;
        if (st == "0A" && local.size() >= 5 && local.compare(local.size() - 5, 5, want) == 0)
          return true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  } while (std::chrono::steady_clock::now() < deadline);
  return false;
}

int wait_for(int pid, int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  if (pid <= 0) return 127;  // spawn() could not start it
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

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Cli report_cli(const std::string& dir, const std::string& out) {
  const std::string err_file = make_temp_dir("report-err") + "/stderr";
  const RunResult r = run({"sh", "-c", "exec \"$0\" report \"$1\" -o \"$2\" 2>\"$3\"", FABTRACE_CLI,
                           dir, out, err_file},
                          {}, false, 120);
  return Cli{r.exit_code, r.output, slurp(err_file)};
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
      x.ring_full += o.value("ring_full", uint64_t{0});
      x.unfinished += o.at("unfinished").get<uint64_t>();
      x.eagain += o.at("eagain").get<uint64_t>();
      x.refused += o.at("refused").get<uint64_t>();
    }
  }
  return t;
}

std::string test_name(std::string text) {
  for (char& ch : text)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return text;
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

bool record_session_on_node() { return record_session_pid() > 0; }

long record_session_pid() {
  // The node's session lock (common/session_lock.h), read from /proc/locks:
  // nothing is taken, so asking never keeps a session from starting.
  return session_lock_holder();
}

}  // namespace fabtrace::test
