// The per-op timeline's costs: the data-path append, and the record rate the
// background writer sustains into a real file.
//
//   build/bench/bench_timeline                 (all)
//   build/bench/bench_timeline --benchmark_filter=Sustained
//
// BM_TimelineAppend: ns per append on the data path (writer running).
// BM_TimelineAppendWindowed/<window>: the same with FABTRACE_OPS_WINDOW set:
//   "0:3600" (every op inside: the fast path) or "3600" (every op outside: it
//   is counted and left out).
// BM_TimelineMark: one fabtrace_mark's work in the preload with the timeline
//   on: the name looked up in the mark dictionary, the clock read, one append.
// BM_MarkApi/<mode>: fabtrace_mark("iteration 12") as the application calls it
//   (include/fabtrace.h): no_preload (the header's fallback after its one
//   lookup), no_timeline (the preload's entry point, tracer on, no timeline:
//   the probe's semaphore checked, nothing recorded).
// BM_TimelineSustained/<threads>: producers append flat out for 2 s, far faster
//   than any file takes them, so written_per_s is the writer's ceiling (what it
//   sustains); the rest is dropped and counted. bytes_per_op: file size / records.
#include <benchmark/benchmark.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "common/capture_spec.h"
#include "common/clock.h"
#include "common/oplog_file.h"
#include "fabtrace.h"
#include "preload/inflight.h"
#include "preload/marks.h"
#include "preload/stats.h"
#include "preload/timeline.h"

namespace fabtrace {
namespace {

std::string bench_path(const char* tag) {
  const char* d = std::getenv("FABTRACE_BENCH_DIR");
  return std::string(d && *d ? d : "/tmp") + "/fabtrace-bench-" + tag + "." +
         std::to_string(getpid()) + ".oplog";
}

TimelineConfig config(uint64_t mb) {
  TimelineConfig c;
  c.on = true;
  c.min_bytes = 0;
  c.mb = mb;
  c.flush_ms = 200;
  return c;
}

void fake_record(OpRecord* r) {
  r->kind = OpKind::kTsend;
  r->tid = 1;
  r->start = now_ticks();
}

// Starts `t` on a fresh file with FABTRACE_OPS_WINDOW=capture, a pool larger
// than the run (every append lands in a chunk, none dropped). False (and the
// benchmark skipped) when the file cannot be opened.
bool start_timeline(benchmark::State& state, Timeline& t, const char* tag, const char* capture,
                    std::string* path) {
  clock_init();
  *path = bench_path(tag);
  TimelineConfig c = config(256);
  std::string why;
  parse_capture_spec(capture, &c.capture, &why);
  if (t.start(c, *path, OplogMeta{"bench", "0", getpid()})) return true;
  state.SkipWithError("cannot open the oplog");
  return false;
}

void append_loop(benchmark::State& state, const char* capture) {
  Timeline t;
  std::string path;
  if (!start_timeline(state, t, "append", capture, &path)) return;
  Shard* s = my_shard();
  OpRecord r;
  fake_record(&r);
  uint64_t end = r.start;
  for (auto _ : state) {
    t.append(s, nullptr, &r, ++end, 65536, false);
  }
  state.SetItemsProcessed(state.iterations());
  t.finish();
  unlink(path.c_str());
}

void BM_TimelineAppend(benchmark::State& state) { append_loop(state, ""); }
BENCHMARK(BM_TimelineAppend)->Iterations(5000000);

void BM_TimelineAppendWindowed(benchmark::State& state, const char* capture) {
  append_loop(state, capture);
}
BENCHMARK_CAPTURE(BM_TimelineAppendWindowed, inside, "0:3600")->Iterations(5000000);
BENCHMARK_CAPTURE(BM_TimelineAppendWindowed, outside, "3600")->Iterations(5000000);

void BM_TimelineMark(benchmark::State& state) {
  Timeline t;
  std::string path;
  if (!start_timeline(state, t, "mark", "", &path)) return;
  Shard* s = my_shard();
  for (auto _ : state) {
    t.append_mark(s, oplog::kMarkInstant, t.mark_name_id("iteration 12"), 1, 0, now_ticks());
  }
  state.SetItemsProcessed(state.iterations());
  t.finish();
  unlink(path.c_str());
}
BENCHMARK(BM_TimelineMark)->Iterations(2000000);

// Run before anything activates the preload's runtime in this process (the
// benchmarks above drive their own Timeline objects only).
void BM_MarkApi(benchmark::State& state, int mode) {
  for (auto _ : state) {
    if (mode == 0)
      fabtrace_mark("iteration 12");
    else
      marks::mark("iteration 12");
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK_CAPTURE(BM_MarkApi, no_preload, 0);
BENCHMARK_CAPTURE(BM_MarkApi, no_timeline, 1);

void BM_TimelineSustained(benchmark::State& state) {
  clock_init();
  const int producers = static_cast<int>(state.range(0));
  for (auto _ : state) {
    Timeline t;
    const std::string path = bench_path("sustained");
    OplogMeta meta{"bench", "0", getpid()};
    if (!t.start(config(64), path, meta)) {
      state.SkipWithError("cannot open the oplog");
      return;
    }
    std::atomic<bool> go{true};
    std::atomic<uint64_t> appended{0};
    std::vector<std::thread> ts;
    const auto t0 = std::chrono::steady_clock::now();
    for (int p = 0; p < producers; ++p) {
      ts.emplace_back([&] {
        Shard* s = my_shard();
        OpRecord r;
        fake_record(&r);
        uint64_t end = r.start, n = 0;
        while (go.load(std::memory_order_relaxed)) {
          for (int i = 0; i < 1024; ++i) t.append(s, nullptr, &r, ++end, 65536, false);
          n += 1024;
        }
        appended += n;
      });
    }
    std::this_thread::sleep_for(std::chrono::seconds(2));
    go = false;
    for (auto& th : ts) th.join();
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    t.finish();
    OplogReader rd;
    std::string err;
    uint64_t written = 0;
    if (rd.open(path, &err))
      rd.read_all([&](const oplog::OpEntry*, size_t n) { written += n; }, &err);
    struct stat st {};
    stat(path.c_str(), &st);
    unlink(path.c_str());
    const double a = static_cast<double>(appended.load());
    state.counters["attempted_per_s"] = a / secs;
    state.counters["written_per_s"] = static_cast<double>(written) / secs;
    state.counters["dropped_share"] = a > 0 ? 1.0 - static_cast<double>(written) / a : 0;
    state.counters["bytes_per_op"] = written ? static_cast<double>(st.st_size) / written : 0;
  }
}
BENCHMARK(BM_TimelineSustained)->Arg(1)->Arg(2)->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace
}  // namespace fabtrace

BENCHMARK_MAIN();
