// The collector of `fabtrace record`: one per node, as root. Keeps the BPF
// session's view of "which processes are traced" current (a /proc scan every
// half second, cheap where nothing changed: proc_watch.h; besides the
// preload's own registration probe), drains the ring
// buffer into the kernel log, writes the kernel's counters every few seconds, and
// samples the node's Cassini counters once for all its ranks.
//
// The log's size: every record of a kept kind is written; the raw events
// (kernel_log::is_raw) are summed per thread and cause (raw_summaries.h), and
// written only around stalls and slow ops by default (raw_windows.h); within
// the bound, the oldest raw blocks make room (KernelLogWriter's compaction).
//
// Out of the ranks' way: once started (background()), its threads run at
// SCHED_BATCH and nice 19, so that they never preempt a rank on waking; the
// programs wake it only when the ring buffer is half full, else it drains on
// a timer. Stalls and slow ops come a second time on a small ring of their own
// that wakes a thread of its own at the collector's first priority
// (live_thread.h): `fabtrace top` shows them within a refresh while a flood
// fills the main ring.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "common/kernel_log.h"
#include "common/live_stalls.h"
#include "common/safe_output.h"
#include "common/session_lock.h"
#include "userspace/record/bpf_session.h"
#include "userspace/record/live_thread.h"
#include "userspace/record/proc_scan.h"
#include "userspace/record/proc_watch.h"
#include "userspace/record/raw_summaries.h"
#include "userspace/record/raw_windows.h"

namespace fabtrace {

struct CollectorOptions {
  std::string dir = ".";  // where the kernel log goes (the ranks' FABTRACE_DIR)
  // An expanded template's first own component (path_template.h): the missing
  // directories from there on are created, each as the last one is (start()).
  size_t create_from = std::string::npos;
  BpfOptions bpf;
  std::vector<pid_t> pids;  // --pid: these too, mapped libfabric or not
  bool discover = true;     // trace every libfabric/preload process found
  std::string command;      // for the log's header
  uint64_t flush_ms = 200;  // events reach the file at least this often
  // The kernel log's bound (--max-size; --max-log-mb N, its older name: N
  // MiB), whatever the processes do (their rates: BpfOptions::usdt_rate): raw
  // events make room for the rest, oldest first, and past it a record of a
  // kept kind is counted, not written.
  uint64_t max_log_bytes = kDefaultMaxLogBytes;
  static constexpr uint64_t kDefaultMaxLogBytes = 1ULL << 30;
  static constexpr uint64_t kMinLogBytes = 1ULL << 20;
  // --raw: which raw events are written (all are summed).
  enum class Raw { kWindows, kAll, kNone };
  Raw raw = Raw::kWindows;
  RawWindows::Options raw_windows;  // --raw windows: the hold and the margin
  // The sums of the raw events go into the log at least this often.
  uint64_t summary_ms = 10000;
  // --owner UID:GID: the outputs are the user's. DIR must exist and be theirs
  // (OutputDir::open_owned_by); every file is created by root in it and given
  // to them (how slurmstepd runs a session for a user's step: docs/slurm.md).
  bool owned = false;
  uid_t owner_uid = 0;
  gid_t owner_gid = 0;
  std::string proc_root = "/proc";
  // The latest stalls, for `fabtrace top` and `fabtrace metrics` while the
  // session runs (common/live_stalls.h); "" for none.
  std::string live_dir = live::kRunDir;
  std::string lock_dir = kSessionLockDir;  // the node's session lock (session_lock.h)
  bool node_counters = true;               // sample the node's cxi counters (FABTRACE_NIC=0: off)
  // --uprobes: the providers whose op tables are probed (opened by a helper).
  std::vector<std::string> uprobe_providers = {"tcp;ofi_rxm", "shm"};
  // --symbols FILE and --uprobe-by-name (uprobe_symbols.h).
  std::string symbols_file;
  bool uprobe_by_name = false;
};

class Collector {
 public:
  explicit Collector(CollectorOptions opt);

  // Starts the session: as root only, the node's one (its lock), in its
  // directory opened once (created when missing: nothing is created before
  // those checks pass), then the BPF programs and the log. False with one line
  // in *error when nothing can be traced.
  bool start(std::string* error);
  const std::vector<KernelAttach>& attach_list() const { return session_.attach_list(); }
  const std::string& log_path() const { return log_.path(); }

  // One turn of the loop: drain for up to `wait_ms`, and do what is due (scan,
  // flush, stats). Call until done.
  void step(int wait_ms);
  // Drains what is left, writes the final counters and the end block.
  void finish();
  // Out of the ranks' way from now on: every thread of the collector but the
  // live view's at SCHED_BATCH and nice 19 (call it after the traced command is launched:
  // posix_spawn's child would inherit the nice level). finish() restores the
  // calling thread. What was set, in one line ("" when nothing could be).
  std::string background();
  // background()'s line, with the times pace() raised the draining thread.
  std::string sched_line() const;

  uint64_t records() const { return log_.records(); }
  // What a write error kept out of the session's files: records of the log,
  // and whole outputs (a per-rank report, the node's counters). Each error was
  // said in one line when it happened; the first one is kept.
  uint64_t records_lost() const { return log_.records_lost(); }
  uint64_t outputs_lost() const { return outputs_lost_; }
  uint64_t records_over_size() const { return over_size_; }  // past max_log_bytes
  bool lost_data() const { return log_.failed() || outputs_lost_ > 0; }
  const std::string& first_write_error() const { return first_write_error_; }
  // The kernel's counters with the collector's own: raw events given way and
  // evicted, records over the bound, its CPU time and events drained.
  KernelStats stats() const;
  uint64_t events() const { return events_; }  // records drained from the ring buffer
  uint64_t cpu_ns() const;                     // its CPU time so far, all threads
  // Since background() (the tracing, without the set-up): CPU time and wall time.
  uint64_t run_cpu_ns() const { return cpu_ns() - run_cpu0_; }
  uint64_t run_wall_ns() const;
  const RawSummaries& summaries() const { return summaries_; }
  uint64_t malformed() const { return malformed_; }
  const std::string& counters_path() const { return counters_path_; }
  size_t traced_processes() const { return known_.size(); }
  // --uprobes: what the op-table probe could not do, the sites and their hits,
  // and the rows written into the log at finish().
  const std::vector<std::string>& uprobe_notes() const { return uprobe_notes_; }
  const std::vector<OpSite>& uprobe_sites() const { return session_.uprobes().sites(); }
  const std::vector<uint64_t>& uprobe_hits() const { return uprobe_hits_; }
  const std::vector<UprobeRow>& uprobe_rows() const { return uprobe_rows_; }
  const UprobeNames& uprobe_names() const { return uprobe_names_; }
  // What the programs could not keep (enum ft_up_lost) and the rows' map size.
  const std::vector<uint64_t>& uprobe_lost() const { return uprobe_lost_; }
  uint32_t uprobe_max_rows() const { return session_.uprobes().max_rows(); }
  // --uprobes --only-pids: the processes mapping libfabric that a scan found
  // started during the session (not at its first scan) and not listed: never
  // probed (the probes are attached to the listed pids only), named by record.
  const std::vector<ScannedProcess>& unprobed_later() const { return unprobed_later_; }

 private:
  static std::string host_name();  // gethostname, "unknown" when it fails
  void scan();
  void attach_preload(const ScannedProcess& p);
  void on_record(const void* data, size_t size);
  void write_kept(const void* data, size_t len);
  void write_raw(const void* data, size_t len);
  bool room(size_t len);  // the bound: compacts when it can
  bool compact();
  void drain_summaries(uint64_t now);
  void pace(uint64_t now);  // the draining thread's priority: raised while behind
  void set_own_priority(bool background);
  void find_own_threads();
  // --uprobes (uprobes/collector_uprobes.cpp); the priority (collector_pacing.cpp).
  void write_uprobes();
  void snapshot_uprobes();  // the rows changed since the last snapshot (kUprobeRows)
  void write_uprobe_reports();
  void write_error(const std::string& what);  // says it once per kind, keeps the first

  CollectorOptions opt_;
  SessionLock lock_;
  OutputDir dir_;
  BpfSession session_;
  ProcWatch watch_;
  KernelLogWriter log_;
  std::set<pid_t> known_;
  std::set<pid_t> preloaded_;  // processes a scan found with the preload
  uint64_t start_ns_ = 0, last_scan_ = 0, last_flush_ = 0, last_stats_ = 0;
  uint64_t malformed_ = 0;
  std::string counters_path_;
  struct NodeCounters;
  std::shared_ptr<NodeCounters> counters_;
  bool log_failed_ = false;
  uint64_t outputs_lost_ = 0, over_size_ = 0;
  std::string log_name_;  // the log's name in dir_ (compaction renames over it)
  RawWindows raw_windows_;
  RawSummaries summaries_;
  uint64_t given_way_[FT_EV_KINDS] = {}, evicted_[FT_EV_KINDS] = {};
  uint64_t short_softirqs_ = 0;  // --raw windows: softirqs too short to write
  // The kernel's sums of short softirqs as last read, per key (tgid, tid,
  // cpu, vector): what a key gained since is what is summed next.
  std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>, ft_softirq_sum> softirqs_read_;
  void fold_kernel_softirqs();
  uint64_t events_ = 0, arrival_ = 0, last_summary_ = 0;
  bool compact_failed_ = false;
  std::string sched_;  // background()'s line
  int nice_before_ = 0;
  // pace(): the draining thread at its own priority while behind a flood.
  static constexpr uint64_t kCaughtUpNs = 1000000000ULL;
  static constexpr uint64_t kFinishDrainNs = 2000000000ULL;
  bool raised_ = false;
  uint64_t raises_ = 0, raised_at_ = 0, raised_ns_ = 0, last_behind_ = 0;
  uint64_t run_cpu0_ = 0, run_t0_ = 0;  // at background()
  std::string first_write_error_;
  std::vector<std::string> uprobe_notes_;
  std::vector<uint64_t> uprobe_hits_;
  std::vector<UprobeRow> uprobe_rows_;
  std::vector<UprobeCq> uprobe_cqs_;
  UprobeNames uprobe_names_;
  std::vector<uint64_t> uprobe_lost_;
  std::set<pid_t> outside_;  // --uprobes --only-pids: libfabric processes not listed
  std::vector<ScannedProcess> unprobed_later_;
  bool scanned_once_ = false;
  std::set<uid_t> usdt_told_;  // users told that a copy of theirs was not attached
  uint64_t last_uprobe_snap_ = 0;
  std::map<std::tuple<uint32_t, uint32_t, uint64_t, uint64_t, uint32_t, bool>, ft_uprobe_ops>
      uprobe_snap_;  // each row as last written (kUprobeRows)
  LiveThread live_;  // after session_: stopped before the session goes
  // Each process's rank as first seen, for the end of the session. The live
  // thread keeps its own (LiveThread::known): neither thread waits for the
  // other's map.
  std::map<pid_t, std::string> ranks_;
};

// At the end of a session, on stderr: what each process had dropped (USDT
// records over its budget, malformed probe arguments, uprobe rows over its
// quota: the largest first), events past the log's bound, and, when a write
// error lost anything, one line saying how much and why. Returns 1 then (the
// session's exit code), else 0.
int report_lost_data(const Collector& col);

}  // namespace fabtrace
