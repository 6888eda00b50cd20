// `fabtrace report`'s Perfetto trace: how many per-op records per second are
// merged from oplog files into the trace (one core: the writer is single-threaded).
//
//   build/bench/bench_report_merge
//   FABTRACE_BENCH_DIR=/dev/shm build/bench/bench_report_merge   (no disk in the way)
//
// The input is made once per run: oplogs of 4 ranks, 1 Mi ops in all, shaped
// like a real one: 4 threads per rank, each with up to 8 ops in flight over 16
// links (so overlapping ops need lanes), written in completion order and in
// per-thread chunks of 4096 (so the reorder window has work to do), 1 op in
// 1000 in error.
//
// BM_MergeToPerfetto: write_perfetto over the whole job; ops_per_s is records
//   per second of wall time, trace_bytes_per_op the output size per record.
// BM_OplogStreamOnly: just streaming the same oplogs (OplogReader::read_all):
//   the floor set by reading and checksumming the input.
// BM_EncodeSlicesOnly: just PerfettoWriter slice_begin + slice_end per record
//   into a file: the floor set by encoding and writing the output.
#include <benchmark/benchmark.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "common/op_kinds.h"
#include "common/oplog_file.h"
#include "userspace/report/perfetto/perfetto_trace.h"
#include "userspace/report/perfetto/writer.h"

namespace fabtrace::report {
namespace {

constexpr int kRanks = 4;
constexpr int kThreads = 4;
constexpr int kLinks = 16;
constexpr int kInFlight = 8;
constexpr size_t kChunk = 4096;
constexpr uint64_t kOpsPerRank = uint64_t{1} << 18;

std::string bench_dir() {
  const char* d = std::getenv("FABTRACE_BENCH_DIR");
  return std::string(d && *d ? d : "/tmp") + "/fabtrace-bench-merge." + std::to_string(getpid());
}

struct Input {
  std::string dir;
  Job job;
  uint64_t ops = 0;
  uint64_t oplog_bytes = 0;
  ~Input() {
    if (!dir.empty()) std::system(("rm -rf '" + dir + "'").c_str());  // the bench's own directory
  }
};

// Ops of one thread: starts increasing, up to kInFlight outstanding, then sorted
// by completion (the order the oplog holds them in).
std::vector<oplog::OpEntry> thread_ops(std::mt19937_64& rng, uint64_t n, uint32_t tid) {
  std::vector<oplog::OpEntry> ops;
  ops.reserve(n);
  std::uniform_int_distribution<uint64_t> dur(2000, 40000);  // 1..20 us in 0.5 ns ticks
  std::uniform_int_distribution<uint64_t> gap(200, 6000);
  std::uniform_int_distribution<uint32_t> link(0, kLinks - 1);
  uint64_t t = 1000000;
  std::vector<uint64_t> ends;  // outstanding
  for (uint64_t i = 0; i < n; ++i) {
    if (ends.size() >= kInFlight) {  // wait for the earliest completion
      std::sort(ends.begin(), ends.end());
      t = std::max(t, ends.front());
      ends.erase(ends.begin());
    }
    oplog::OpEntry e{};
    e.start_ticks = t;
    e.end_ticks = t + dur(rng);
    e.bytes = uint64_t{4096} << (i % 6);
    e.link_id = link(rng);
    e.tid = tid;
    e.kind = static_cast<uint8_t>(i % 4 == 3 ? OpKind::kTrecv : OpKind::kTsend);
    e.error = i % 1000 == 999;
    ends.push_back(e.end_ticks);
    ops.push_back(e);
    t += gap(rng);
  }
  std::stable_sort(ops.begin(), ops.end(), [](const oplog::OpEntry& a, const oplog::OpEntry& b) {
    return a.end_ticks < b.end_ticks;
  });
  return ops;
}

bool make_input(Input* p) {
  {
    p->dir = bench_dir();
    ::mkdir(p->dir.c_str(), 0755);
    std::mt19937_64 rng(42);
    for (int r = 0; r < kRanks; ++r) {
      const std::string rank = std::to_string(r);
      const std::string path = p->dir + "/fabtrace_ops.node" + rank + ".r" + rank + ".oplog";
      OplogFileWriter w;
      if (!w.open(path, OplogMeta{"node" + rank, rank, 1000 + r})) return false;
      OplogCalib c;
      c.tsc = true;
      c.ns_per_tick = 0.5;
      c.tick0 = 1000000;
      c.mono0_ns = 1000000000000ull + static_cast<uint64_t>(r) * 777;
      c.pairs = 100;
      w.write_calib(c);
      std::vector<OplogLink> links;
      for (uint32_t l = 0; l < kLinks; ++l)
        links.push_back(
            {l, "cxi0:0x" + std::to_string(100 + r), "cxi0:0x" + std::to_string(200 + l)});
      w.write_links(links);
      std::vector<std::vector<oplog::OpEntry>> th;
      for (int t = 0; t < kThreads; ++t)
        th.push_back(thread_ops(rng, kOpsPerRank / kThreads, static_cast<uint32_t>(100 + t)));
      // Per-thread chunks, interleaved as the background writer would write them.
      for (size_t off = 0; off < th[0].size(); off += kChunk)
        for (int t = 0; t < kThreads; ++t) {
          const size_t n = std::min(kChunk, th[t].size() - off);
          w.write_ops(th[t].data() + off, n);
          p->ops += n;
        }
      w.write_end(kOpsPerRank, 0, 0);
      p->oplog_bytes += w.bytes_written();
      w.close();
      Rank rk;
      rk.report.host = "node" + rank;
      rk.report.rank = rank;
      rk.report.pid = 1000 + r;
      rk.report.start_mono_ns = c.mono0_ns;
      rk.report.start_wall_ns = 1760000000000000000ull;
      rk.oplog_path = path;
      p->job.ranks.push_back(rk);
    }
  }
  return true;
}

// Made at first use, removed at exit.
Input* input() {
  static Input in;
  static const bool made = make_input(&in);
  if (!made) in.ops = 0;
  return &in;
}

void BM_MergeToPerfetto(benchmark::State& state) {
  Input* in = input();
  if (in->ops == 0) {
    state.SkipWithError("cannot write the input oplogs");
    return;
  }
  const std::string out = in->dir + "/trace";
  std::vector<std::string> files;
  PerfettoStats st;
  uint64_t trace_bytes = 0;
  for (auto _ : state) {
    std::string err;
    if (!write_perfetto_stats(in->job, out, PerfettoOptions(), &files, &st, &err)) {
      state.SkipWithError(err.c_str());
      return;
    }
    trace_bytes = 0;
    for (const std::string& f : files) {
      struct stat sb;
      if (::stat(f.c_str(), &sb) == 0) trace_bytes += static_cast<uint64_t>(sb.st_size);
    }
  }
  const double ops = static_cast<double>(in->ops);
  state.counters["ops_per_s"] = benchmark::Counter(ops * static_cast<double>(state.iterations()),
                                                   benchmark::Counter::kIsRate);
  state.counters["trace_bytes_per_op"] = static_cast<double>(trace_bytes) / ops;
  state.counters["oplog_bytes_per_op"] = static_cast<double>(in->oplog_bytes) / ops;
  state.counters["max_lanes"] = st.max_lanes;
  state.counters["late_ops"] = static_cast<double>(st.late_ops);
  state.counters["dropped"] = static_cast<double>(st.overlap_dropped);
}
BENCHMARK(BM_MergeToPerfetto)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_OplogStreamOnly(benchmark::State& state) {
  Input* in = input();
  uint64_t sum = 0;
  for (auto _ : state) {
    for (const Rank& r : in->job.ranks) {
      OplogReader rd;
      std::string err;
      if (!rd.open(r.oplog_path, &err)) {
        state.SkipWithError(err.c_str());
        return;
      }
      rd.read_all(
          [&](const oplog::OpEntry* e, size_t n) {
            for (size_t i = 0; i < n; ++i) sum += e[i].end_ticks - e[i].start_ticks;
          },
          &err);
    }
  }
  benchmark::DoNotOptimize(sum);
  state.counters["ops_per_s"] =
      benchmark::Counter(static_cast<double>(in->ops) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_OplogStreamOnly)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_EncodeSlicesOnly(benchmark::State& state) {
  Input* in = input();
  const std::string path = in->dir + "/encode_only.pftrace";
  const uint64_t n = in->ops;
  for (auto _ : state) {
    PerfettoWriter w;
    std::string err;
    if (!w.open(path, 1, &err)) {
      state.SkipWithError(err.c_str());
      return;
    }
    w.process_track(1, 1, "rank 0 (node0)", 0);
    w.child_track(2, 1, "a -> b", 0, true);
    const uint64_t name = w.event_name("fi_tsend");
    const uint64_t bytes = w.annotation_name("bytes"), error = w.annotation_name("error");
    uint64_t ts = 1760000000000000000ull;
    for (uint64_t i = 0; i < n; ++i) {
      const DebugArg args[2] = {DebugArg::Uint(bytes, 4096), DebugArg::Bool(error, false)};
      w.slice_begin(ts, 2, name, args, 2);
      w.slice_end(ts + 5000, 2);
      ts += 6000;
    }
    if (!w.close(&err)) {
      state.SkipWithError(err.c_str());
      return;
    }
  }
  state.counters["ops_per_s"] =
      benchmark::Counter(static_cast<double>(n) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EncodeSlicesOnly)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace fabtrace::report

BENCHMARK_MAIN();
