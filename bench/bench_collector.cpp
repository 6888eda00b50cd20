// The collector's work per raw event in user space (`fabtrace record`, past
// libbpf's ring-buffer callback): what it did before the log had a bound
// (plain: the record appended to the log's buffer, a block written per MiB),
// and what it does now: the record summed per thread and cause, then written
// (--raw all) or held until its window is known and mostly given way (--raw
// windows, the default: here one event in a hundred falls in a window). The
// events are off-CPU intervals of 8 threads of 2 processes, 5 us apart; the
// log is a real file in $TMPDIR. CPU time per event: items_per_second's inverse.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "common/kernel_log.h"
#include "userspace/record/raw_summaries.h"
#include "userspace/record/raw_windows.h"

namespace {

using fabtrace::KernelLogMeta;
using fabtrace::KernelLogWriter;
using fabtrace::RawSummaries;
using fabtrace::RawWindows;

constexpr uint64_t kGapNs = 5000;       // between two events
constexpr uint64_t kBatch = 4096;       // events drained at once (a 250 ms drain on a busy node)
constexpr uint64_t kWindowEvery = 100;  // --raw windows: one event in this many is in a window

std::vector<ft_offcpu> events(size_t n) {
  std::vector<ft_offcpu> v(n);
  for (size_t i = 0; i < n; ++i) {
    ft_offcpu& o = v[i];
    o.h.kind = FT_EV_OFFCPU;
    o.h.size = sizeof(o);
    o.h.pid = 1000 + static_cast<uint32_t>(i % 2);
    o.h.tid = 2000 + static_cast<uint32_t>(i % 8);
    o.off_kind = i % 3 ? FT_OFF_SLEEP : FT_OFF_PREEMPTED;
    o.syscall = i % 3 ? 202 : -1;
    o.out_pid = 3000 + static_cast<uint32_t>(i % 5);
  }
  return v;
}

struct Log {
  std::string path;
  KernelLogWriter w;
  Log() {
    const char* t = std::getenv("TMPDIR");
    path = std::string(t && *t ? t : "/tmp") + "/fabtrace-bench-collector." +
           std::to_string(getpid()) + ".klog";
    ::unlink(path.c_str());
    KernelLogMeta m;
    m.host = "bench";
    w.create(path, m);
  }
  ~Log() {
    w.close();
    ::unlink(path.c_str());
  }
};

enum Mode { kPlain, kAll, kWindows };

void BM_CollectorRawEvent(benchmark::State& state) {
  const Mode mode = static_cast<Mode>(state.range(0));
  std::vector<ft_offcpu> ev = events(kBatch);
  Log log;
  RawSummaries sums;
  sums.set_self({4242});
  RawWindows raw_windows;
  uint64_t t = 1000000000ULL, given = 0, n = 0;
  for (auto _ : state) {
    for (ft_offcpu& o : ev) {
      t += kGapNs;
      o.start = t - kGapNs / 2;
      o.h.ts = t;
      const auto* rec = reinterpret_cast<const uint8_t*>(&o);
      if (mode == kPlain) {
        log.w.append(&o, sizeof(o));
        continue;
      }
      sums.add(o.h, rec);
      if (mode == kAll) {
        log.w.append_raw(&o, sizeof(o));
      } else {
        if (++n % kWindowEvery == 0) raw_windows.keep(o.h.pid, o.start, t);
        raw_windows.hold(&o, sizeof(o), t);
      }
    }
    if (mode == kWindows)
      raw_windows.release(
          t, [&](const void* d, size_t len) { log.w.append_raw(d, len); },
          [&](const ft_hdr&) { ++given; });
    if (mode != kPlain) sums.drain(t, [&](const ft_summary& r) { log.w.append(&r, sizeof(r)); });
  }
  benchmark::DoNotOptimize(given);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kBatch));
  state.SetLabel(mode == kPlain ? "plain" : mode == kAll ? "raw all" : "raw windows");
}
BENCHMARK(BM_CollectorRawEvent)->Arg(kPlain)->Arg(kAll)->Arg(kWindows);

}  // namespace

BENCHMARK_MAIN();
