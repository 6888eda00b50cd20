#include "tests/integration/sample_stepper.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace fabtrace::test {

Env sampled_env(const FakeCxiTree& tree, Env more) {
  more.insert(more.end(), {{"FABTRACE_CXI_SYSFS_ROOT", tree.sysfs_root()},
                           {"FABTRACE_CXI_RUN_ROOT", tree.run_root()},
                           {"FABTRACE_NIC_MS", "5"},
                           {"SLURM_LOCALID", "0"}});
  return more;
}

RunResult run_sampled_tagged(const FakeCxiTree& tree, const SampleStepper& stepper,
                             const std::string& dir, int count) {
  return run({FT_APP, "--prov", "tcp;ofi_rxm", "--test", "tagged", "--count", std::to_string(count),
              "--timeout", "100", "--hold-until", stepper.release_path()},
             sampled_env(tree, {{"FABTRACE_DIR", dir}}), true, 240);
}

SampleStepper::SampleStepper(FakeCxiTree& tree, const std::string& watched_file, int steps,
                             std::string release_path)
    : tree_(tree), steps_(steps), release_(std::move(release_path)) {
  fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd_ < 0) {
    error_ = std::string("inotify_init1: ") + std::strerror(errno);
    return;
  }
  // Watched before the traced program starts: no read can be missed.
  wd_ = inotify_add_watch(fd_, watched_file.c_str(), IN_ACCESS);
  if (wd_ < 0) {
    error_ = "inotify_add_watch " + watched_file + ": " + std::strerror(errno);
    return;
  }
  thread_ = std::thread([this] { loop(); });
}

SampleStepper::~SampleStepper() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) ::close(fd_);
}

void SampleStepper::loop() {
  alignas(inotify_event) char buf[4096];
  while (!stop_.load() && taken_.load() < steps_) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const ssize_t n = ::read(fd_, buf, sizeof(buf));
    for (ssize_t off = 0; off < n && taken_.load() < steps_;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
      off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      if (!(ev->mask & IN_ACCESS)) continue;
      // One step per event: reads queued behind this one saw the old step, the
      // next event taken from the queue comes from a read that may see the new.
      tree_.advance();
      if (taken_.fetch_add(1, std::memory_order_acq_rel) + 1 == steps_) {
        const int f = ::open(release_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (f >= 0) ::close(f);
      }
      break;  // the rest of this batch was queued before the advance: drop it
    }
  }
}

}  // namespace fabtrace::test
