// The BPF half of `fabtrace record`: opens the skeletons of bpf/ (one per
// concern), makes them share one set of maps and one ring buffer, loads and
// attaches every program this machine supports, and says for each attach point
// whether it is attached, absent (this kernel or node does not have it) or
// failed (it exists but was refused, with libbpf's reason).
//
// Nothing here is required: a missing tracepoint, a refused program, a node
// without the cxi driver each cost one line in the attach list, and the rest
// runs. Only when nothing at all attaches does the collector give up.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/kernel_log.h"
#include "userspace/record/optable_probe.h"
#include "userspace/record/uprobe_names.h"
#include "userspace/record/usdt_libraries.h"

namespace fabtrace {

// A kernel-log record the collector writes itself (not one the BPF side
// sent): zeroed, its header filled.
template <typename T>
T log_record(uint32_t kind, uint64_t ts, uint32_t pid) {
  T rec{};
  rec.h.ts = ts;
  rec.h.kind = static_cast<decltype(rec.h.kind)>(kind);
  rec.h.size = static_cast<decltype(rec.h.size)>(sizeof(rec));
  rec.h.pid = pid;
  return rec;
}

struct BpfOptions {
  bool polls = false;          // attach the per-poll probes (--polls)
  bool net_all = false;        // record net events of sockets not traced
  uint64_t min_offcpu_ns = 0;  // off-CPU intervals shorter than this: history only
  // The session's start (CLOCK_MONOTONIC ns): a probe's window reaching before
  // it is malformed (probes.bpf.c).
  uint64_t session_start_ns = 0;
  // USDT records each process may emit per second (0: no bound), and poll
  // records (--polls) apart: what is over is counted per process, not recorded.
  uint32_t usdt_rate = kDefaultUsdtRate;
  uint32_t poll_rate = kDefaultPollRate;
  static constexpr uint32_t kDefaultUsdtRate = 1000;
  static constexpr uint32_t kDefaultPollRate = 1000000;
  // --uprobes: the statistics rows one process may hold (0: a share of the
  // map, uprobe_max_rows() / kUprobeRowShares).
  uint32_t uprobe_rows_per_process = 0;
  static constexpr uint32_t kUprobeRowShares = 16;
  // The collector's own libfabtrace.so files (FABTRACE_PRELOAD: root's choice)
  // to attach the probes to; other processes' copies come through
  // BpfSession::attach_usdt_mapped.
  std::vector<std::string> usdt_libraries;
  // cxi work functions (kallsyms address -> "name") to filter the workqueue on;
  // empty: the driver is not loaded, the workqueue programs stay unattached.
  std::vector<KernelSymbol> cxi_work;
  // --uprobes: the provider functions to probe (optable_probe.h), attached per
  // library file for every process that maps it.
  bool uprobes = false;
  std::vector<OpSite> uprobe_sites;
  // One perf-event uprobe per probe even where the kernel makes uprobe_multi
  // links (--uprobe-perf-events): how kernels before 6.6 are attached.
  bool uprobe_perf_events = false;
  // The providers' layouts, which each site's `layout` indexes (none: CQs
  // opened before the session stay unknown).
  std::vector<UprobeLayout> uprobe_layouts;
  // The only processes traced (--only-pids with --pid): each USDT probe and
  // uprobe site is attached once per process, so only these take the traps and
  // only their preloads see a session (and leave their NIC counters to it).
  // Empty: every process that maps the library (pid -1).
  std::vector<pid_t> only_pids;
};

// --uprobes: what the kernel paired for one process's ops of one kind and size
// class on one link (endpoint, peer), or the process's polls row, summed over
// CPUs.
struct UprobeRow {
  uint32_t pid = 0;
  uint32_t op = 0;          // OpKind, or FT_UP_OP_POLLS
  uint64_t ep = 0;          // the application's endpoint (0 in the polls row)
  uint64_t peer = 0;        // the ops' fi_addr_t (FI_ADDR_UNSPEC: from any source)
  uint32_t size_class = 0;  // the ops' bytes (ft_up_size_class); 0 in the polls row
  bool posted = false;      // receives sized as posted (bpf/uprobe_ops.h, ft_up_stat_key)
  uint64_t pending = 0;
  uint64_t pending_bytes = 0;  // their bytes as posted
  ft_up_stats s{};

  // The row as the kernel log's FT_EV_UPROBE_OPS record, stamped `ts`.
  ft_uprobe_ops record(uint64_t ts) const {
    ft_uprobe_ops rec = log_record<ft_uprobe_ops>(FT_EV_UPROBE_OPS, ts, pid);
    rec.op = op;
    rec.size_class = static_cast<__u16>(size_class);
    rec.posted = posted ? 1 : 0;
    rec.pending = pending;
    rec.ep = ep;
    rec.peer = peer;
    rec.s = s;
    return rec;
  }
};

// --uprobes: one application CQ of a process, its polls and poll gaps
// (bpf/fabtrace_events.h, struct ft_uprobe_cq).
struct UprobeCq {
  uint32_t pid = 0;
  uint64_t cq = 0;
  uint64_t opened = 0;  // CLOCK_MONOTONIC ns of its open; 0: opened before the session
  uint64_t polls = 0;
  uint64_t gaps[FT_UP_GAP_CLASSES] = {};
  uint64_t max_gap_ns = 0, max_gap_end = 0;

  // As the kernel log's FT_EV_UPROBE_CQ record, stamped `ts`.
  ft_uprobe_cq record(uint64_t ts) const {
    ft_uprobe_cq rec = log_record<ft_uprobe_cq>(FT_EV_UPROBE_CQ, ts, pid);
    rec.cq = cq;
    rec.opened = opened;
    rec.polls = polls;
    for (int i = 0; i < FT_UP_GAP_CLASSES; ++i) rec.gaps[i] = gaps[i];
    rec.max_gap_ns = max_gap_ns;
    rec.max_gap_end = max_gap_end;
    return rec;
  }
};

class BpfSession {
 public:
  BpfSession();
  ~BpfSession();
  BpfSession(const BpfSession&) = delete;
  BpfSession& operator=(const BpfSession&) = delete;

  // Opens, loads and attaches. False only when BPF cannot be used at all (not
  // root, no BTF, bpf(2) refused), with one line in *error; otherwise the
  // attach list says what runs.
  bool start(const BpfOptions& opt, std::string* error);
  const std::vector<KernelAttach>& attach_list() const { return attach_; }
  size_t attached() const;  // attach points attached

  // Attaches the preload's USDT probes to the copy of libfabtrace.so that
  // process `pid` maps at `range` and names `path` (usdt_libraries.h: reached
  // through /proc/PID/map_files, once per file, within bounds), for a process
  // of user `uid`. "" when attached or known already, else one line saying why
  // not (the caller says it once per user).
  std::string attach_usdt_mapped(const std::string& proc_root, pid_t pid, const std::string& range,
                                 const std::string& path, uid_t uid);
  // Bounds on libfabtrace.so files: in all, and per user.
  static constexpr size_t kMaxUsdtFiles = 16;
  static constexpr size_t kMaxUsdtFilesPerUser = 4;

  // Marks a process traced (from the /proc scan), and its TCP connections.
  void trace_process(pid_t pid, uint64_t since_ns);
  void trace_connection(const ft_tuple& t, pid_t owner);
  void trace_listen_port(uint16_t port, pid_t owner);

  // Drains the ring buffer: calls on_record for each record, for at most
  // timeout_ms waiting. Returns the records consumed, or -1 on error.
  int poll(int timeout_ms, const std::function<void(const void*, size_t)>& on_record);

  KernelStats stats() const;  // the kernel-side counters, summed over CPUs

  // --uprobes: the sites as attached (index = the site's number in the
  // programs), the hits of each, and the statistics rows.
  const std::vector<OpSite>& uprobe_sites() const;
  std::vector<uint64_t> uprobe_site_hits() const;
  std::vector<UprobeRow> uprobe_rows() const;
  std::vector<UprobeCq> uprobe_cqs() const;  // the polled ones
  UprobeNames uprobe_names() const;          // what the rows' endpoints and peers are
  // What the programs could not keep (enum ft_up_lost), and the statistics
  // map's size (its rows).
  std::vector<uint64_t> uprobe_lost() const;
  uint32_t uprobe_max_rows() const;

  // The list of every program and attach point with its state on this machine
  // (`fabtrace record --list`): loads and attaches, then detaches everything.
  static std::vector<KernelAttach> probe_all(const BpfOptions& opt, std::string* error);

  // The names of the kernel's drop reasons (enum skb_drop_reason, from its BTF),
  // as symbols of class "drop_reason": their values differ between kernels.
  static std::vector<KernelSymbol> drop_reason_names();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  std::vector<KernelAttach> attach_;
};

}  // namespace fabtrace
