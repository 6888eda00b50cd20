#include "tests/apps/two_ranks.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace tworanks {

bool fork_two_ranks(const char* name, Rank* out) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    std::perror((std::string(name) + ": socketpair").c_str());
    return false;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    std::perror((std::string(name) + ": fork").c_str());
    return false;
  }
  if (pid == 0) {
    ::close(sv[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(1);
    ::setenv("RANK", "1", 1);
    *out = Rank{1, sv[1], 0};
    return true;
  }
  ::close(sv[1]);
  ::setenv("RANK", "0", 1);
  *out = Rank{0, sv[0], pid};
  return true;
}

int wait_rank1(const char* name, pid_t pid, int timeout_s, int poll_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) return 1;
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "%s: rank 1 did not exit in time, killing it\n", name);
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    std::fprintf(stderr, "%s: rank 1 killed by signal %d\n", name, WTERMSIG(status));
    return 128 + WTERMSIG(status);
  }
  return 1;
}

}  // namespace tworanks
