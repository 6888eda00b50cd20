// ft_app: fabtrace's own libfabric workload. Forks into two ranks (parent = rank 0,
// the initiator; child = rank 1, the target; fixtures/two_ranks.h) that talk
// over libfabric and coordinate over a socketpair. Independent of the tracer.
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

#include "fixtures/two_ranks.h"
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

  // Forked before any thread exists (fixtures/two_ranks.h).
  tworanks::Rank me;
  if (!tworanks::fork_two_ranks("ft_app", &me)) return 1;
  if (me.rank == 1) {
    std::string json;
    std::string reason;
    int rc = ftapp::run_rank(opt, 1, me.fd, &json, &reason);
    if (!hold(opt) && rc == 0) rc = 1;
    print_line(json);
    return rc;
  }
  std::string json;
  std::string reason;
  int rc0 = ftapp::run_rank(opt, 0, me.fd, &json, &reason);
  if (!hold(opt) && rc0 == 0) rc0 = 1;
  int rc1 = tworanks::wait_rank1("ft_app", me.child, opt.timeout_s * 3, 10);
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
