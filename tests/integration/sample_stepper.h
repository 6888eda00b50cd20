// Drives a FakeCxiTree in step with the sampler that reads it, so that a test's
// expectations about a counter series follow from what was sampled, not from
// how the scheduler happened to interleave a writer thread and the sampler.
//
// A background thread watches one tracked file with inotify (IN_ACCESS fires on
// every read of it, by any process). Each time it drains the queue it takes the
// first read event, advances the tree by one step and drops the rest of that
// batch (those reads happened before the advance). After `steps` taken events it
// creates `release_path` (the traced program waits for it: ft_app --hold-until)
// and stops advancing.
//
// Why one of the readers must see change: let read k be the read behind the k-th
// taken event. Read k+2 was queued after the drain that took event k+1, so after
// the tree moved to step k; read k was queued before that step existed. So reads
// 1, 3, 5, ... see strictly increasing steps, and with R readers and
// steps >= 2R + 1 at least one reader sampled two different values.
#pragma once

#include <atomic>
#include <string>
#include <thread>

#include "tests/integration/harness.h"
#include "tests/unit/fake_cxi_tree.h"

namespace fabtrace::test {

// The environment of a traced run that samples `tree` every 5 ms, both ranks
// on cxi0, plus `more`.
Env sampled_env(const FakeCxiTree& tree, Env more);

class SampleStepper;

// ft_app's tagged family over tcp;ofi_rxm under the preload (`count` messages,
// its files in `dir`), sampling `tree` as sampled_env says, its ranks held
// until `stepper` has taken its steps.
RunResult run_sampled_tagged(const FakeCxiTree& tree, const SampleStepper& stepper,
                             const std::string& dir, int count);

class SampleStepper {
 public:
  SampleStepper(FakeCxiTree& tree, const std::string& watched_file, int steps,
                std::string release_path);
  ~SampleStepper();  // stops the thread (the release file is left for its owner)
  SampleStepper(const SampleStepper&) = delete;
  SampleStepper& operator=(const SampleStepper&) = delete;

  bool watching() const { return wd_ >= 0; }  // false: inotify refused (the reason in error())
  const std::string& error() const { return error_; }
  int steps_taken() const { return taken_.load(std::memory_order_acquire); }
  const std::string& release_path() const { return release_; }

 private:
  void loop();

  FakeCxiTree& tree_;
  const int steps_;
  const std::string release_;
  int fd_ = -1, wd_ = -1;
  std::string error_;
  std::atomic<int> taken_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace fabtrace::test
