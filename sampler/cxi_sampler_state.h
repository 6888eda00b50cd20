// What a CounterSampler shares with its sampling thread: the open counter
// files, the column layout and the series itself. Internal to the sampler's
// own files (cxi_counters.cpp samples into it, cxi_selection.cpp builds it,
// common/counter_csv_write.cpp writes it out).
#pragma once

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace fabtrace {

// CounterSampler::State: the sampler's header only names it, so that this
// file and cxi_counters.h do not include each other.
struct CounterSamplerState {
  struct Counter {
    int fd;
    uint32_t column;
    uint32_t device;
    bool telemetry;
  };
  struct DeviceInfo {
    std::string nic_addr = "?", nid = "?";
    uint32_t stamp_column = 0;
  };

  uint64_t interval_ms = 100;
  std::vector<std::string> devices;
  std::vector<DeviceInfo> device_info;
  std::vector<std::string> labels;
  std::vector<std::string> columns;
  std::vector<Counter> counters;
  size_t stride = 0;      // uint64 values per sample (= columns.size())
  uint64_t capacity = 0;  // samples that fit the memory cap

  // The series, sample-major. Reserved once; appends stay within the reservation,
  // so `base` never moves and readers use it without touching the vector.
  std::vector<uint64_t> rows;
  const uint64_t* base = nullptr;
  std::vector<uint64_t> scratch;   // one row being assembled
  std::mutex sample_mtx;           // one sampler at a time
  std::atomic<uint64_t> count{0};  // stored samples, published with release
  std::atomic<uint64_t> dropped{0};
  std::atomic<uint64_t> read_errors{0};

  std::mutex run_mtx;
  std::condition_variable run_cv;
  bool stop_requested = false;  // guarded by run_mtx
  bool exited = false;          // guarded by run_mtx

  ~CounterSamplerState() {
    for (const Counter& c : counters) ::close(c.fd);
  }

  bool sample();
  void run();
};

}  // namespace fabtrace
