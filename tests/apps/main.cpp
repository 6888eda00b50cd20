// ft_app: fabtrace's own libfabric workload. Forks into two ranks (parent = rank 0,
// the initiator; child = rank 1, the target) that talk over libfabric and
// coordinate over a socketpair. Independent of the tracer.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "options.h"
#include "runner.h"

namespace {

void print_line(const std::string& s) {
  std::string line = s + "\n";
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = ::write(1, line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
}

// Waits for the child up to timeout_s; kills it after that. Returns its exit code
// (128+signal if killed by a signal).
int wait_child(pid_t pid, int timeout_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  for (;;) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) return 1;
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "ft_app: rank 1 did not exit in time, killing it\n");
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    std::fprintf(stderr, "ft_app: rank 1 killed by signal %d\n", WTERMSIG(status));
    return 128 + WTERMSIG(status);
  }
  return 1;
}

// --hold-until: waits until the file exists, up to timeout_s. False on timeout.
bool hold(const ftapp::Options& opt) {
  if (opt.hold_until.empty()) return true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(opt.timeout_s);
  while (::access(opt.hold_until.c_str(), F_OK) != 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "ft_app: %s did not appear within %d s\n", opt.hold_until.c_str(),
                   opt.timeout_s);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace

namespace {
volatile sig_atomic_t g_own_usr2 = 0;
void on_own_usr2(int) { g_own_usr2 = g_own_usr2 + 1; }
}  // namespace

int main(int argc, char** argv) {
  ftapp::Options opt;
  std::string err;
  if (!ftapp::parse_options(argc, argv, &opt, &err)) {
    if (err == "help") {
      ftapp::print_usage(stdout);
      return 0;
    }
    std::fprintf(stderr, "ft_app: %s\n", err.c_str());
    ftapp::print_usage(stderr);
    return 2;
  }

  // --own-usr2: a handler of the program's own, in place before any fabric
  // call (so before the tracer decides whether the signal is free).
  if (opt.own_usr2) ::signal(SIGUSR2, on_own_usr2);

  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    std::perror("ft_app: socketpair");
    return 1;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t parent = ::getpid();
  // Forked before any thread exists (the preload starts its threads on the first
  // fabric call, which comes later), so the child may allocate freely.
  pid_t pid = ::fork();
  if (pid < 0) {
    std::perror("ft_app: fork");
    return 1;
  }
  if (pid == 0) {
    ::close(sv[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(1);
    ::setenv("RANK", "1", 1);
    std::string json;
    std::string reason;
    int rc = ftapp::run_rank(opt, 1, sv[1], &json, &reason);
    if (!hold(opt) && rc == 0) rc = 1;
    print_line(json);
    return rc;
  }
  ::close(sv[1]);
  ::setenv("RANK", "0", 1);
  std::string json;
  std::string reason;
  int rc0 = ftapp::run_rank(opt, 0, sv[0], &json, &reason);
  if (!hold(opt) && rc0 == 0) rc0 = 1;
  int rc1 = wait_child(pid, opt.timeout_s * 3);
  print_line(json);
  if (rc0 == 77 && rc1 == 77) {
    std::fprintf(stderr, "ft_app: SKIP: provider '%s' does not support test '%s' (%s)\n",
                 opt.prov.c_str(), opt.test.c_str(), reason.c_str());
    return 77;
  }
  if (rc0 != 0 || rc1 != 0) {
    std::fprintf(stderr, "ft_app: FAIL (rank 0 exit %d, rank 1 exit %d)\n", rc0, rc1);
    return 1;
  }
  return 0;
}
