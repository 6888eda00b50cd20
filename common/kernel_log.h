// The kernel log: what `fabtrace record` saw on one node, in one file
// (fabtrace_kernel.<host>.p<pid>.klog beside the ranks' outputs, named by
// common/output_names.h). Its one home:
// the writer (the collector) and every reader (`fabtrace export kernel`, the
// report) use this file.
//
// Layout: the block framing of common/block_file.h with magic "FTKLOG".
//   kMeta     JSON, first: format, version, record_version, fabtrace_version
//             (the writer's; absent before 0.9.0), host, collector pid,
//             kernel release, boot id, the (CLOCK_MONOTONIC, CLOCK_REALTIME)
//             anchor, the command, options, and every attach point with its
//             state ("attached", "absent", "failed") and why
//   kTasks    JSON array: processes and threads as they were discovered
//             ({"pid","tid","comm","rank","preload","exe"})
//   kEvents   `count` records of bpf/fabtrace_events.h, back to back, each as the
//             BPF program wrote it (its header's size says how long it is); the
//             raw events (kernel_log::is_raw) in blocks of their own, which the
//             writer may drop, oldest first, to keep the log within its bound
//             (`record --max-size`); the collector's FT_EV_SUMMARY records keep
//             their sums
//   kSymbols  JSON array: addresses the records name ({"addr","name","class"}),
//             e.g. the cxi driver's work functions; with --uprobes, the probed
//             provider functions (class kUprobeSiteClass: addr = file offset,
//             name = "<providers> <table>.<op> <library> hits=N")
//   kStats    JSON: records emitted and lost per kind, events on sockets that were
//             not traced, thread-table overflows; written every few seconds and at
//             the end (the last one wins)
//   kEnd      JSON: written at a clean stop ({"records","duration_ns"})
//   kUprobeRows  --uprobes: FT_EV_UPROBE_OPS records of the rows that changed
//             since the last such block, cumulative, every few seconds: what a
//             session killed before its end (when it writes the final rows into
//             kEvents) leaves. A reader of a log without final rows takes each
//             row's latest.
// All times are CLOCK_MONOTONIC ns (bpf_ktime_get_ns). Events are written in the
// order the collector drained them: per CPU in time order, across CPUs nearly so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bpf/fabtrace_events.h"
#include "common/block_file.h"

namespace fabtrace {

namespace kernel_log {
constexpr char kMagic[8] = {'F', 'T', 'K', 'L', 'O', 'G', '\0', '\0'};
constexpr uint32_t kVersion = 1;
constexpr const char* kFormatName = "fabtrace-kernel-log";
enum BlockType : uint16_t {
  kMeta = 1,
  kTasks = 2,
  kEvents = 3,
  kSymbols = 4,
  kStats = 5,
  kEnd = 6,
  kUprobeRows = 7
};
// Rows a reader keeps of the kUprobeRows blocks (the statistics map's most),
// and tasks and symbols (a collector writes far fewer): a crafted log cannot
// make a reader hold more.
constexpr size_t kMaxUprobeRows = 65536;
constexpr size_t kMaxTasks = 1u << 18;
constexpr size_t kMaxSymbols = 1u << 18;
// The writer cuts kEvents blocks at this size (and at every flush). Strings read
// from a log are cut at limits::kMaxStringBytes (common/input_limits.h).
constexpr size_t kEventsBlockBytes = 1u << 20;
// The symbol class of a --uprobes attach site (not a kernel address).
constexpr const char* kUprobeSiteClass = "uprobe_site";

// The raw events: off-CPU intervals, IRQs, softirqs, fault summaries, cxi work
// items and --polls' polls. They give way to the log's bound, oldest first and
// counted (KernelStats::given_way, evicted); their sums never do (FT_EV_SUMMARY).
// Every other kind is always kept: stalls and slow ops with their breakdowns,
// op errors, marks, retransmits and drops, cxi errors, threads and their exits,
// the --uprobes rows, the summaries.
bool is_raw(uint16_t kind);
// The raw kinds `record --raw windows` (the default) writes only around stalls
// and slow ops: all of them but polls (--polls asks for every one).
bool around_windows(uint16_t kind);
// The meta option a writer of FT_EV_SUMMARY records sets ("1"): a reader then
// takes the raw events' totals from the summaries, not from the raw records.
constexpr const char* kSummaryOption = "summaries";
// The meta option that says from how many ns --raw windows wrote softirqs.
constexpr const char* kMinSoftirqOption = "min_softirq_ns";

// The size of a whole record of `kind`, 0 for a kind this build does not know.
size_t record_size(uint16_t kind);
// The record of type T that starts at p (in a kEvents payload, where records
// are packed: p need not be aligned for T).
template <typename T>
T record_as(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
// "offcpu", "irq", ... ("kind<N>" for unknown kinds).
std::string kind_name(uint16_t kind);
// "preempted", "sleep", "disk", "stopped", "other".
const char* off_kind_name(uint8_t k);
}  // namespace kernel_log

// A record the collector writes itself (not one the BPF side sent): zeroed,
// its header filled.
template <typename T>
T log_record(uint32_t kind, uint64_t ts, uint32_t pid) {
  T rec{};
  rec.h.ts = ts;
  rec.h.kind = static_cast<decltype(rec.h.kind)>(kind);
  rec.h.size = static_cast<decltype(rec.h.size)>(sizeof(rec));
  rec.h.pid = pid;
  return rec;
}

struct KernelAttach {
  std::string program;  // "sched", "irq", ...
  std::string point;    // "tp_btf/sched_switch", "usdt:fabtrace:cq_stall", ...
  std::string state;    // "attached", "absent", "failed"
  std::string detail;   // why, when not attached
};

struct KernelLogMeta {
  std::string host, kernel, boot_id, command;
  // The fabtrace that wrote the log (common/version.h): the writer puts its
  // own; read back ("" in logs before 0.9.0).
  std::string fabtrace_version;
  long pid = 0;                       // the collector
  uint64_t mono_ns = 0, real_ns = 0;  // one instant on both clocks
  uint32_t record_version = FT_RECORD_VERSION;
  std::map<std::string, std::string> options;
  std::vector<KernelAttach> attach;
};

struct KernelTask {
  long pid = 0, tid = 0;
  std::string comm, rank, exe;
  bool preload = false;  // runs libfabtrace.so (else: libfabric only)
};

struct KernelSymbol {
  uint64_t addr = 0;
  std::string name, cls;
};

struct KernelStats {
  uint64_t emitted[FT_EV_KINDS] = {};
  uint64_t lost[FT_EV_KINDS] = {};
  // The whole session's counters: one list for the struct and the log's JSON
  // (the member, its key; kernel_log.cpp writes it, kernel_log_reader.cpp reads it).
  // - untraced_*: retransmits and drops on connections of no traced process;
  // - threads_full, threads_over_share: events of threads not tracked (the
  //   thread table full, or their process holding its share of it);
  // - recursion_misses: runs of a program the kernel skipped because another
  //   run of it was active on the same CPU (bpf_prog_info, summed): events not seen;
  // - in_without_out: a thread came back on a CPU, never seen leaving it;
  //   in_unseen: a thread ran again with no switch naming it (repaired);
  // - usdt_*: USDT records over their process's budget (dropped), and probes
  //   whose arguments were out of range (not recorded); per process below;
  // - over_size: records always kept that the log's bound refused (lost: said);
  // - short_softirqs: --raw windows' softirqs too short to write (summed only;
  //   the bound is the meta option kMinSoftirqOption). Not lost: given way.
#define FT_KERNEL_STATS_COUNTS(X)             \
  X(untraced_retrans, "untraced_retransmits") \
  X(untraced_drops, "untraced_drops")         \
  X(threads_full, "threads_full")             \
  X(threads_over_share, "threads_over_share") \
  X(recursion_misses, "recursion_misses")     \
  X(in_without_out, "in_without_out")         \
  X(in_unseen, "in_unseen")                   \
  X(usdt_over_budget, "usdt_over_budget")     \
  X(usdt_malformed, "usdt_malformed")         \
  X(over_size, "over_size")                   \
  X(short_softirqs, "short_softirqs")
#define FT_X(name, key) uint64_t name = 0;
  FT_KERNEL_STATS_COUNTS(FT_X)
#undef FT_X
  // What one process lost to its budget, quotas and shares: one list for the
  // struct, the log's JSON (the member's name) and the collector's line.
#define FT_KERNEL_PROCESS_COUNTS(X)                                                           \
  X(over_budget, "probe records over its budget (dropped)")                                   \
  X(malformed, "probes with malformed arguments (not explained)")                             \
  X(uprobe_rows_over_quota, "uprobe rows refused over its quota")                             \
  X(uprobe_objects_over_quota, "of its CQs, endpoints and addresses not kept over its share") \
  X(uprobe_inflight_over_quota, "uprobe ops not timed over its share of ops in flight")       \
  X(threads_over_share,                                                                       \
    "events of its threads not tracked (its share of the thread table held, or the table full)")
  struct Process {
#define FT_X(name, what) uint64_t name = 0;
    FT_KERNEL_PROCESS_COUNTS(FT_X)
#undef FT_X
    uint64_t total() const;
  };
  std::map<uint32_t, Process> per_process;  // only processes with a count
  uint64_t lost_total() const;
  // Raw events (kernel_log::is_raw) the log does not hold, by kind: never
  // written (outside the windows kept, or past the bound), and written, then
  // dropped oldest first to keep the log within its bound. Both are in the
  // FT_EV_SUMMARY records' sums. Not lost: given way by design.
  uint64_t given_way[FT_EV_KINDS] = {};
  uint64_t evicted[FT_EV_KINDS] = {};
  uint64_t given_way_total() const;
  uint64_t evicted_total() const;
  // The collector itself (the observer's effect): its CPU time, all threads,
  // user + system; the events it drained; its own scheduling policy.
  uint64_t collector_cpu_ns = 0, collector_events = 0, collector_wall_ns = 0;
  std::string collector_sched;
};
// What KernelStats::short_softirqs counts, in words: "softirqs shorter than 10 us".
std::string short_softirqs_what(const KernelLogMeta& meta);

// The processes a stats block keeps (those with the largest counts).
constexpr size_t kMaxStatsProcesses = 1024;

// Streams a kernel log to a new file. One thread.
class KernelLogWriter {
 public:
  // Creates the file (never over an existing one) and writes kMeta. False with
  // the reason in error().
  bool create(const std::string& path, const KernelLogMeta& meta);
  // The same on a new file the caller created (OutputDir::create); `path` names it.
  bool create(int fd, const std::string& path, const KernelLogMeta& meta);
  // Buffers one record (its header's size bytes); writes a kEvents block when
  // the buffer reaches kEventsBlockBytes.
  bool append(const void* record, size_t len);
  // The same for a raw event (kernel_log::is_raw): in blocks of their own, so
  // that compaction can drop them.
  bool append_raw(const void* record, size_t len);
  bool flush();  // writes the buffered records (kept, then raw) as blocks
  uint64_t buffered_bytes() const { return buf_.size() + raw_buf_.size(); }
  uint64_t buffered_raw_bytes() const { return raw_buf_.size(); }
  uint64_t raw_bytes() const { return raw_bytes_; }  // raw blocks in the file

  // Compaction, which keeps the log within a bound by dropping its oldest raw
  // blocks (flushed first): copy_compacted() writes the log without them into
  // `fd`, a new file the caller made, until it holds at most `target` bytes or
  // no raw block is left; the caller renames it over this one, then adopt()s
  // it and the writer goes on there. A failed copy leaves the writer as it was.
  struct Compaction {
    uint64_t bytes = 0, records = 0, blocks_dropped = 0;
    uint64_t evicted[FT_EV_KINDS] = {};
  };
  bool copy_compacted(int fd, uint64_t target, Compaction* c, std::string* error);
  void adopt(int fd, const Compaction& c);
  bool write_tasks(const std::vector<KernelTask>& tasks);
  bool write_symbols(const std::vector<KernelSymbol>& syms);
  bool write_stats(const KernelStats& s);
  // --uprobes: rows as they stand now (kUprobeRows), n records back to back.
  bool write_uprobe_rows(const void* records, size_t n, size_t record_bytes);
  bool write_end(uint64_t duration_ns);  // flushes first
  bool close();                          // false when anything was not written
  // Records in the file (their block written), and records that a write error
  // kept out of it (the file fails for good at its first error: error()).
  uint64_t records() const { return written_; }
  uint64_t records_lost() const { return lost_; }
  bool failed() const { return !file_.error().empty(); }
  uint64_t bytes_written() const { return file_.bytes_written(); }
  const std::string& error() const { return file_.error(); }
  const std::string& path() const { return file_.path(); }

 private:
  bool json_block(uint16_t type, const std::string& text);
  bool write_meta(const KernelLogMeta& meta);
  // Writes one block and keeps its place in the index.
  bool block(uint16_t type, uint32_t count, const void* payload, size_t len, bool raw);
  bool flush_raw();
  BlockFileWriter file_;
  std::vector<uint8_t> buf_, raw_buf_;
  uint32_t buffered_ = 0, raw_buffered_ = 0;
  uint32_t raw_kinds_[FT_EV_KINDS] = {};  // of raw_buf_
  uint64_t written_ = 0, lost_ = 0, raw_bytes_ = 0;
  // Every block in the file, in order (header and JSON blocks too); a run of
  // blocks that are not raw is one entry.
  struct Block {
    uint64_t off = 0, bytes = 0;
    uint32_t records = 0;
    bool raw = false;
    uint32_t kinds[FT_EV_KINDS] = {};  // raw blocks: their records by kind
  };
  std::vector<Block> index_;
};

// Reads a kernel log written by KernelLogWriter, streaming the records. Memory
// is bounded by the largest block plus the tasks and symbols.
class KernelLogReader {
 public:
  // Opens the file and reads kMeta. False with one line in *error.
  bool open(const std::string& path, std::string* error);
  // Calls on_record for every valid record (valid during the call). Tracks tasks,
  // symbols, the last stats and kEnd. Stops at the first incomplete or corrupt
  // block (truncated()). Records with a size that does not fit their kind or
  // block are skipped and counted (bad_records()); the rest of their block with
  // them. A log without final --uprobes rows (a killed session) has the latest
  // of its periodic rows (kUprobeRows) delivered after the rest. False only on
  // a hard read error.
  bool read_all(const std::function<void(const ft_hdr&, const uint8_t*)>& on_record,
                std::string* error);

  const KernelLogMeta& meta() const { return meta_; }
  const std::vector<KernelTask>& tasks() const { return tasks_; }
  const std::vector<KernelSymbol>& symbols() const { return symbols_; }
  const KernelStats& stats() const { return stats_; }
  bool has_stats() const { return has_stats_; }
  bool has_end() const { return has_end_; }
  uint64_t end_records() const { return end_records_; }
  uint64_t end_duration_ns() const { return end_duration_ns_; }
  uint64_t records_read() const { return records_read_; }
  uint64_t bad_records() const { return bad_records_; }
  uint64_t unknown_records() const { return unknown_records_; }
  bool truncated() const { return file_.truncated(); }
  const std::string& truncation() const { return file_.truncation(); }
  const std::string& path() const { return file_.path(); }

 private:
  BlockFileReader file_;
  KernelLogMeta meta_;
  std::vector<KernelTask> tasks_;
  std::vector<KernelSymbol> symbols_;
  KernelStats stats_;
  bool has_stats_ = false, has_end_ = false;
  uint64_t end_records_ = 0, end_duration_ns_ = 0;
  uint64_t records_read_ = 0, bad_records_ = 0, unknown_records_ = 0;
};

}  // namespace fabtrace
