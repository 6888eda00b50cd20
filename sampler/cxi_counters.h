// Cassini ("cxi") NIC hardware-counter sampler.
//
// A background thread reads a set of per-NIC counters on a fixed cadence into a
// memory buffer reserved once, up front; at exit the series is written as a CSV
// (common/counter_csv.h) that can be lined up with the rest of fabtrace's output, since
// every row carries CLOCK_MONOTONIC nanoseconds, the clock fabtrace uses everywhere.
//
// Counter sources, both read with one pread(2) at offset 0 of a descriptor kept
// open for the whole run:
//   <sysfs_root>/cxiN/device/telemetry/<name>  "<value>@<sec>.<nsec>"  (hardware
//       telemetry; the suffix is the CLOCK_REALTIME time the NIC took the value)
//       -> column "cxiN:<name>"
//   <run_root>/cxiN/<name>                     "<value>\n"  (statistics of the
//       cxi_rh retry-handler daemon, a FUSE file system) -> column "cxiN:rh:<name>"
// plus, per device, <sysfs_root>/cxiN/device/properties/{nic_addr,nid}, read once.
//
// Settings (environment; a bad value gets one warning and the default):
//   FABTRACE_NIC=0|1            sampler on (default 1)
//   FABTRACE_NIC_MS=<ms>        interval, 1..60000, default 100
//   FABTRACE_NIC_DEV=<list>     "cxi0,cxi2" or "all". Default: cxi<local rank> when the
//                               launcher gives a local rank and that device exists,
//                               else every cxi present. Listed names that do not exist
//                               get one warning; when none exists, every cxi present.
//   FABTRACE_NIC_COUNTERS=<sel> comma-separated tokens, default "default":
//                                 default      the curated telemetry and rh sets below
//                                 all          every telemetry counter and every rh stat
//                                 rh: / rh:*   every rh stat
//                                 rh:<p>*      rh stats whose name starts with <p>
//                                 rh:<name>    one rh stat
//                                 <p>*         telemetry counters whose name starts with <p>
//                                 <name>       one telemetry counter
//                               Names that are absent are skipped; explicit tokens that
//                               match nothing on any device get one warning.
//   FABTRACE_NIC_MAX_MB=<MiB>   memory for the series, default 256; samples beyond it
//                               are dropped and counted, the buffer never grows
//   FABTRACE_CXI_SYSFS_ROOT     default /sys/class/cxi  (tests point these at a fake tree)
//   FABTRACE_CXI_RUN_ROOT       default /run/cxi
//
// On a machine without cxi devices start() returns false having printed nothing
// and started nothing. Messages about unreadable roots or missing devices are only
// printed when FABTRACE_NIC_DEV was set.
//
// The CSV's layout, writer and reader are in common/counter_csv.h.
#pragma once

#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/counter_csv.h"

namespace fabtrace {

// The default selection ("default" token): telemetry names and rh stat names.
const std::vector<std::string>& cxi_curated_telemetry();
const std::vector<std::string>& cxi_curated_rh();

// Parses the text of a counter file: optional leading blanks, a decimal value,
// then optionally "@<sec>[.<frac>]" (the fraction is read as a decimal fraction of
// a second, so ".5" is 500000000 ns; digits past the ninth are ignored). Anything
// after the value or stamp (a newline, stale bytes) is ignored. *stamp_ns is 0 when
// there is no stamp. False when there is no value or it does not fit 64 bits.
bool parse_cxi_counter(const char* text, size_t len, uint64_t* value, uint64_t* stamp_ns);

struct CounterSamplerState;

class CounterSampler {
 public:
  struct Config {
    bool enabled = true;
    uint64_t interval_ms = 100;
    std::string devices;   // "" = default choice, "all", or "cxi0,cxi2"
    std::string counters;  // "" = "default"; see the selection syntax above
    uint64_t max_bytes = uint64_t{256} << 20;
    std::string sysfs_root = "/sys/class/cxi";
    std::string run_root = "/run/cxi";
    long local_rank = -1;             // picks cxi<local_rank> by default; -1 = unknown
    uint64_t stop_timeout_ms = 2000;  // see stop()
  };

  // The settings from the FABTRACE_* variables above; local_rank from
  // detect_local_rank(). When FABTRACE_NIC turns it off the rest is not read.
  static Config config_from_env();

  explicit CounterSampler(Config config);
  ~CounterSampler();  // stop()
  CounterSampler(const CounterSampler&) = delete;
  CounterSampler& operator=(const CounterSampler&) = delete;

  // Resolves devices and counters, opens the files and reserves the memory cap.
  // Runs once (thread-safe); later calls return the first outcome. False when
  // disabled, or no counter file could be opened, or after stop() came first.
  bool open();

  // open(), then starts the sampling thread once. True while the thread runs; false
  // when open() fails, and after stop() (which is final: no restart). Thread-safe.
  bool start();

  // After fork(), the child's copy of a started sampler is inert (the thread did not
  // follow, and its locks may be held): start() and sample_once() return false,
  // stop() returns at once, the inspection calls and write_csv() show the samples
  // copied at the fork. A sampler never started before the fork works normally.

  // Ends the sampling thread and waits for it. Idempotent, safe when never started.
  // A read stuck in a hung FUSE daemon (the rh files) must not hang the program's
  // exit: after stop_timeout_ms the thread is left behind (it keeps the files and
  // buffer alive on its own; nothing it could still do changes the stored rows) with
  // one warning.
  void stop();

  // Takes one sample now, on the calling thread (tests, or a final sample at exit).
  // False when not open or when the sample was dropped (memory cap).
  bool sample_once();

  // Writes the samples as a counters CSV (common/counter_csv.h) into the new file
  // `path` (common/safe_output.h: never over an existing file or through a symlink). Safe while
  // sampling runs (writes the samples stored so far). False (with one message) when the file cannot
  // be created or written.
  bool write_csv(const std::string& path, const std::string& host, const std::string& rank,
                 long pid) const;

  // ---- inspection (valid after open() succeeded; empty/0 otherwise) ----
  const Config& config() const { return config_; }
  const std::vector<std::string>& devices() const;
  // Counter columns only ("cxi0:hni_sts_tx_ok_octets", "cxi0:rh:nacks"), in column order.
  const std::vector<std::string>& labels() const;
  // Every CSV column, starting with t_mono_ns and wall_ns.
  const std::vector<std::string>& columns() const;
  int column_index(const std::string& name) const;  // -1 when absent
  uint64_t samples() const;                         // stored samples
  uint64_t value(uint64_t sample, size_t column) const;
  uint64_t dropped() const;      // samples not stored (memory cap)
  uint64_t read_errors() const;  // counter reads that failed
  uint64_t capacity_samples() const;
  uint64_t reserved_bytes() const;  // size of the buffer reserved by open()
  double achieved_mean_ms() const;  // mean spacing of stored samples, 0 with fewer than 2

  // What the sampler shares with its sampling thread (cxi_sampler_state.h).
  using State = CounterSamplerState;

 private:
  enum Phase : int { kIdle, kRunning, kStopped };

  const State* ready() const;  // the state once open() succeeded, else null
  bool inherited() const;      // this is a fork()ed copy of a started sampler

  const Config config_;
  std::mutex ctl_mtx_;  // serializes open/start/stop
  std::atomic<int> phase_{kIdle};
  bool open_tried_ = false;           // guarded by ctl_mtx_
  std::atomic<bool> ready_{false};    // state_ is set up (published with release)
  std::atomic<pid_t> thread_pid_{0};  // the process that started the thread
  std::shared_ptr<State> state_;
  pthread_t thread_{};
};

}  // namespace fabtrace
