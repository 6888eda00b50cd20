#include "preload/activate.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <new>

#include "common/clock.h"
#include "common/env.h"
#include "common/version.h"
#include "preload/capture_signal.h"
#include "preload/live.h"
#include "preload/outputs.h"
#include "preload/poll_runs.h"
#include "preload/probes.h"
#include "preload/runtime.h"
#include "preload/stats.h"
#include "preload/thread_id.h"
#include "preload/timeline.h"

namespace fabtrace {

namespace {
void on_fork_child() {
  // The child shares nothing of the parent's fabric: start its books empty.
  Runtime& rt = runtime();
  rt.pid = getpid();
  // The parent's writer thread did not come along; the child logs no per-op timeline.
  rt.timeline_on = false;
  timeline().disable();
  rt.nic_sampler = nullptr;  // the parent's; its thread did not come along
  for (Shard* s = all_shards(); s; s = s->next) s->reset();
  rt.ring.reset_after_fork();
  reset_thread_id();           // gettid again in the child
  poll_runs::forget_thread();  // the parent's polls, not the child's
}

// The live snapshot goes first: its file is removed, whatever the report does.
void at_exit() {
  // --polls: the runs of the thread that exits (another thread's end hands
  // its own over).
  if (probes::polls_on()) poll_runs::flush_thread();
  live_stop();
  write_report();
}

void start_timeline(Runtime& rt) {
  TimelineConfig tc = Timeline::config_from_env(rt.rank.value);
  if (!tc.on) return;
  // FABTRACE_DIR=stderr writes no files, and the timeline is one.
  if (rt.cfg.to_stderr) {
    log_line("per-op timeline off: FABTRACE_DIR=%s writes no files", rt.cfg.dir.c_str());
    return;
  }
  const std::string path = runtime_output_path(OutputKind::kOplog);
  if (path.empty()) return;  // FABTRACE_DIR unusable: said once
  OplogMeta meta;
  meta.host = output_host();
  meta.rank = rt.rank.text;
  meta.pid = getpid();
  // The capture toggle: only on a signal the application leaves alone now.
  bool signal_free = false;
  tc.signal_note = capture_signal_check(tc.signo, &signal_free);
  if (tc.signo > 0 && !signal_free)
    log_line("per-op timeline: %s; no capture toggle", tc.signal_note.c_str());
  rt.timeline_on = timeline().start(tc, path, meta);
  if (rt.timeline_on && signal_free) capture_signal_install(tc.signo, &timeline());
}

// The NIC counter series is a file: with FABTRACE_DIR=stderr there is none to
// write, so the sampler does not run (one line when it was asked for).
void start_counters(Runtime& rt) {
  if (rt.cfg.to_stderr) {
    if (std::getenv("FABTRACE_NIC_DEV") || env_bool("FABTRACE_NIC", false))
      log_line("NIC counters off: FABTRACE_DIR=%s writes no files", rt.cfg.dir.c_str());
    return;
  }
  rt.nic_sampler = new (std::nothrow) CounterSampler(CounterSampler::config_from_env());
  if (rt.nic_sampler) rt.nic_sampler->start();
}
}  // namespace

void runtime_activate() {
  static std::once_flag once;
  std::call_once(once, [] {
    Runtime& rt = runtime();
    clock_init();
    const Calibration cal = clock_calibration();
    rt.within_50us_ticks = cal.ns_to_ticks(50e3);
    const double edges_ns[5] = {10e3, 100e3, 1e6, 10e6, 100e6};
    for (int i = 0; i < 5; ++i) rt.gap_edges[i] = cal.ns_to_ticks(edges_ns[i]);
    rt.stall_ticks = cal.ns_to_ticks(static_cast<double>(rt.cfg.stall_us) * 1e3);
    rt.gap_fast = std::min(rt.gap_edges[0], rt.stall_ticks);
    rt.slow_ticks = cal.ns_to_ticks(static_cast<double>(rt.cfg.slow_op_us) * 1e3);
    rt.ns_per_tick = cal.ns_per_tick;
    probes::configure(rt.ns_per_tick, rt.rank.text.c_str());
    rt.start_ticks = now_ticks();
    // The largest power of two of ticks not above 10 ms: a bin index is a shift.
    const uint64_t ten_ms = cal.ns_to_ticks(10e6);
    while ((uint64_t{2} << rt.nic_bin_shift) <= ten_ms) ++rt.nic_bin_shift;
    rt.nic_peak_span = ten_ms;
    rt.pid = getpid();
    rt.job = job_meta_of_self();
    rt.job.libfabric = libfabric_version(false);
    rt.ring.init(rt.cfg.inflight);
    start_timeline(rt);
    // A node-wide session registers this process with the kernel side now
    // (before any stall can be reported), and samples the node's NIC counters
    // itself: the ranks of its node then leave theirs alone.
    const bool session = probes::session_attached();
    if (session) probes::fire_thread_start();
    // Started here, on the first fabric activity, and not at load: every
    // process the job forks inherits the preload, and only those that use the
    // fabric should sample (and write a counter file). Silent and free on a
    // node without cxi devices.
    if (!session)
      start_counters(rt);
    else
      log_line(
          "a fabtrace record session is attached: it samples the node's NIC counters, "
          "so this process does not");
    // The live snapshot (preload/live.h): on the first fabric activity, as
    // the rest, so that processes that never use the fabric publish nothing.
    live_start(live_config_from_env());
    pthread_atfork(nullptr, nullptr, on_fork_child);
    std::atexit(at_exit);
  });
}

}  // namespace fabtrace
