// The sampler: its settings, the sampling thread and what it stores (the
// counters it reads are chosen in cxi_selection.cpp, the series is written in
// common/counter_csv_write.cpp).
#include "sampler/cxi_counters.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>

#include "common/clock.h"
#include "common/comma_list.h"
#include "common/counter_csv.h"
#include "common/env.h"
#include "common/rank.h"
#include "sampler/cxi_sampler_state.h"

namespace fabtrace {

// ---- parsing one counter file -------------------------------------------------

bool parse_cxi_counter(const char* text, size_t len, uint64_t* value, uint64_t* stamp_ns) {
  const char* p = text;
  const char* const end = text + len;
  while (p < end && (*p == ' ' || *p == '\t')) ++p;
  if (p == end || *p < '0' || *p > '9') return false;
  uint64_t v = 0;
  while (p < end && *p >= '0' && *p <= '9') {
    const uint64_t d = static_cast<uint64_t>(*p - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
    ++p;
  }
  uint64_t stamp = 0;
  if (p < end && *p == '@') {
    ++p;
    uint64_t sec = 0;
    bool ok = p < end && *p >= '0' && *p <= '9';
    while (ok && p < end && *p >= '0' && *p <= '9') {
      if (sec > UINT64_MAX / 10) ok = false;
      sec = sec * 10 + static_cast<uint64_t>(*p - '0');
      ++p;
    }
    uint64_t frac = 0;
    if (ok && p < end && *p == '.') {
      ++p;
      int digits = 0;
      while (p < end && *p >= '0' && *p <= '9') {
        if (digits < 9) {
          frac = frac * 10 + static_cast<uint64_t>(*p - '0');
          ++digits;
        }
        ++p;
      }
      for (; digits < 9; ++digits) frac *= 10;
    }
    // A stamp that does not fit (year 2554 and later) reads as none.
    if (ok && sec <= (UINT64_MAX - frac) / 1000000000ULL) stamp = sec * 1000000000ULL + frac;
  }
  *value = v;
  if (stamp_ns) *stamp_ns = stamp;
  return true;
}

bool CounterSamplerState::sample() {
  std::lock_guard<std::mutex> lk(sample_mtx);
  const uint64_t n = count.load(std::memory_order_relaxed);
  if (n >= capacity) {
    dropped.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  uint64_t* row = scratch.data();
  row[0] = mono_ns();
  row[1] = real_ns();
  for (const DeviceInfo& d : device_info) row[d.stamp_column] = 0;
  char buf[64];
  for (const Counter& c : counters) {
    ssize_t got;
    do {
      got = ::pread(c.fd, buf, sizeof(buf) - 1, 0);
    } while (got < 0 && errno == EINTR);
    uint64_t v = 0, stamp = 0;
    if (got > 0 && parse_cxi_counter(buf, static_cast<size_t>(got), &v, &stamp)) {
      row[c.column] = v;
      if (c.telemetry) {
        uint64_t& newest = row[device_info[c.device].stamp_column];
        if (stamp > newest) newest = stamp;
      }
    } else {
      row[c.column] = 0;
      read_errors.fetch_add(1, std::memory_order_relaxed);
    }
  }
  rows.insert(rows.end(), scratch.begin(), scratch.end());  // within the reservation
  count.store(n + 1, std::memory_order_release);
  return true;
}

void CounterSamplerState::run() {
  using Clock = std::chrono::steady_clock;
  const Clock::duration period = std::chrono::milliseconds(interval_ms);
  Clock::time_point next = Clock::now();
  std::unique_lock<std::mutex> lk(run_mtx);
  while (!stop_requested) {
    lk.unlock();
    sample();
    lk.lock();
    next += period;
    const Clock::time_point now = Clock::now();
    if (next <= now) {
      // Sampling took longer than the interval: skip the deadlines already missed
      // rather than firing a burst to catch up (the CSV's achieved_mean_ms shows it).
      next += ((now - next) / period + 1) * period;
    }
    run_cv.wait_until(lk, next, [this] { return stop_requested; });
  }
  exited = true;
  run_cv.notify_all();
}

// ---- configuration ------------------------------------------------------------

CounterSampler::Config CounterSampler::config_from_env() {
  Config c;
  c.enabled = env_bool("FABTRACE_NIC", true);
  if (!c.enabled) return c;
  c.interval_ms = env_u64("FABTRACE_NIC_MS", 100, 1, 60000);
  c.devices = trim_blanks(env_str("FABTRACE_NIC_DEV"));
  c.counters = trim_blanks(env_str("FABTRACE_NIC_COUNTERS"));
  c.max_bytes = env_u64("FABTRACE_NIC_MAX_MB", 256, 1, uint64_t{1} << 20) << 20;
  const std::string sysfs = trim_blanks(env_str("FABTRACE_CXI_SYSFS_ROOT"));
  if (!sysfs.empty()) c.sysfs_root = sysfs;
  const std::string run = trim_blanks(env_str("FABTRACE_CXI_RUN_ROOT"));
  if (!run.empty()) c.run_root = run;
  c.local_rank = detect_local_rank();
  return c;
}

CounterSampler::CounterSampler(Config config) : config_(std::move(config)) {}

CounterSampler::~CounterSampler() { stop(); }

// ---- thread control -----------------------------------------------------------

namespace {

void* sampler_main(void* arg) {
  // The thread owns one reference to the state, so a thread left behind by stop()
  // keeps its files and buffer alive.
  std::unique_ptr<std::shared_ptr<CounterSampler::State>> ref(
      static_cast<std::shared_ptr<CounterSampler::State>*>(arg));
  (*ref)->run();
  return nullptr;
}

}  // namespace

bool CounterSampler::inherited() const {
  const pid_t owner = thread_pid_.load(std::memory_order_acquire);
  return owner != 0 && owner != ::getpid();
}

bool CounterSampler::start() {
  if (inherited()) return false;
  if (phase_.load(std::memory_order_acquire) == kRunning) return true;
  if (!open()) return false;
  std::lock_guard<std::mutex> g(ctl_mtx_);
  const int phase = phase_.load(std::memory_order_relaxed);
  if (phase == kRunning) return true;
  if (phase == kStopped) return false;

  // The thread must not take the program's signals: block them all while creating it
  // (a new thread inherits its creator's mask) and restore the caller's mask after.
  sigset_t all, old;
  sigfillset(&all);
  const bool masked = pthread_sigmask(SIG_SETMASK, &all, &old) == 0;
  auto* ref = new (std::nothrow) std::shared_ptr<State>(state_);
  const int rc = ref ? pthread_create(&thread_, nullptr, sampler_main, ref) : ENOMEM;
  if (masked) pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    delete ref;
    log_line("warning: cannot start the NIC counter thread (%s); NIC counters off",
             std::strerror(rc));
    return false;
  }
  pthread_setname_np(thread_, "fabtrace-nic");  // named before start() returns
  thread_pid_.store(::getpid(), std::memory_order_release);
  phase_.store(kRunning, std::memory_order_release);
  return true;
}

void CounterSampler::stop() {
  if (inherited()) return;  // no thread here; its locks may be held by the parent's
  std::lock_guard<std::mutex> g(ctl_mtx_);
  const int phase = phase_.load(std::memory_order_relaxed);
  if (phase == kStopped) return;
  if (phase == kRunning) {
    State& st = *state_;
    std::unique_lock<std::mutex> lk(st.run_mtx);
    st.stop_requested = true;
    st.run_cv.notify_all();
    const bool done = st.run_cv.wait_for(lk, std::chrono::milliseconds(config_.stop_timeout_ms),
                                         [&st] { return st.exited; });
    lk.unlock();
    if (done) {
      pthread_join(thread_, nullptr);
    } else {
      // Still inside a read (a hung retry-handler daemon, most likely). The thread
      // holds its own reference to the state, so leaving it behind is safe.
      pthread_detach(thread_);
      log_line("warning: NIC counter thread still blocked in a read after %" PRIu64
               " ms; leaving it behind",
               config_.stop_timeout_ms);
    }
  }
  phase_.store(kStopped, std::memory_order_release);
}

bool CounterSampler::sample_once() {
  return !inherited() && ready() != nullptr && state_->sample();
}

// ---- inspection ---------------------------------------------------------------

const CounterSampler::State* CounterSampler::ready() const {
  return ready_.load(std::memory_order_acquire) ? state_.get() : nullptr;
}

namespace {
const std::vector<std::string>& empty_strings() {
  static const std::vector<std::string> v;
  return v;
}
}  // namespace

const std::vector<std::string>& CounterSampler::devices() const {
  const State* s = ready();
  return s ? s->devices : empty_strings();
}

const std::vector<std::string>& CounterSampler::labels() const {
  const State* s = ready();
  return s ? s->labels : empty_strings();
}

const std::vector<std::string>& CounterSampler::columns() const {
  const State* s = ready();
  return s ? s->columns : empty_strings();
}

int CounterSampler::column_index(const std::string& name) const {
  const std::vector<std::string>& cols = columns();
  for (size_t i = 0; i < cols.size(); ++i)
    if (cols[i] == name) return static_cast<int>(i);
  return -1;
}

uint64_t CounterSampler::samples() const {
  const State* s = ready();
  return s ? s->count.load(std::memory_order_acquire) : 0;
}

uint64_t CounterSampler::value(uint64_t sample, size_t column) const {
  const State* s = ready();
  if (!s || column >= s->stride || sample >= s->count.load(std::memory_order_acquire)) return 0;
  return s->base[sample * s->stride + column];
}

uint64_t CounterSampler::dropped() const {
  const State* s = ready();
  return s ? s->dropped.load(std::memory_order_relaxed) : 0;
}

uint64_t CounterSampler::read_errors() const {
  const State* s = ready();
  return s ? s->read_errors.load(std::memory_order_relaxed) : 0;
}

uint64_t CounterSampler::capacity_samples() const {
  const State* s = ready();
  return s ? s->capacity : 0;
}

uint64_t CounterSampler::reserved_bytes() const {
  const State* s = ready();
  return s ? s->capacity * s->stride * sizeof(uint64_t) : 0;
}

double CounterSampler::achieved_mean_ms() const {
  const State* s = ready();
  if (!s) return 0.0;
  const uint64_t n = s->count.load(std::memory_order_acquire);
  if (n < 2) return 0.0;
  const uint64_t first = s->base[0], last = s->base[(n - 1) * s->stride];
  return static_cast<double>(last - first) / 1e6 / static_cast<double>(n - 1);
}

bool CounterSampler::write_csv(const std::string& path, const std::string& host,
                               const std::string& rank, long pid) const {
  const State* s = ready();
  if (!s) return false;
  // One count for the header and the rows: the thread may store more meanwhile.
  const uint64_t n = s->count.load(std::memory_order_acquire);
  CounterCsvHeader head;
  head.host = host;
  head.rank = rank;
  head.pid = pid;
  head.interval_ms = s->interval_ms;
  head.achieved_mean_ms = n >= 2 ? static_cast<double>(s->base[(n - 1) * s->stride] - s->base[0]) /
                                       1e6 / static_cast<double>(n - 1)
                                 : 0.0;
  head.devices = s->devices;
  head.counters = s->labels.size();
  head.samples = n;
  head.dropped = s->dropped.load(std::memory_order_relaxed);
  head.read_errors = s->read_errors.load(std::memory_order_relaxed);
  for (size_t d = 0; d < s->devices.size(); ++d)
    head.device_info.push_back({s->devices[d], s->device_info[d].nic_addr, s->device_info[d].nid});
  head.columns = s->columns;
  return write_counter_csv(path, head, s->base, n);
}

}  // namespace fabtrace
