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
#include <set>
#include <string>
#include <vector>

#include "common/kernel_log.h"
#include "userspace/record/proc_changes.h"
#include "userspace/record/uprobes/uprobe_session.h"
#include "userspace/record/usdt_libraries.h"

namespace fabtrace {

struct BpfOptions {
  bool polls = false;          // attach the per-poll probes (--polls)
  bool net_all = false;        // record net events of sockets not traced
  uint64_t min_offcpu_ns = 0;  // off-CPU intervals shorter than this: history only
  // Softirqs shorter than this are summed in the kernel, not sent (--raw
  // windows writes none of them; 0: every one is sent).
  uint64_t min_softirq_ns = 0;
  // The session's start (CLOCK_MONOTONIC ns): a probe's window reaching before
  // it is malformed (probes.bpf.c).
  uint64_t session_start_ns = 0;
  // USDT records each process may emit per second (0: no bound), and poll
  // records (--polls) apart: what is over is counted per process, not recorded.
  uint32_t usdt_rate = kDefaultUsdtRate;
  uint32_t poll_rate = kDefaultPollRate;
  static constexpr uint32_t kDefaultUsdtRate = 1000;
  static constexpr uint32_t kDefaultPollRate = 1000000;
  // The collector's own libfabtrace.so files (FABTRACE_PRELOAD: root's choice)
  // to attach the probes to; other processes' copies come through
  // BpfSession::attach_usdt_mapped.
  std::vector<std::string> usdt_libraries;
  // cxi work functions (kallsyms address -> "name") to filter the workqueue on;
  // empty: the driver is not loaded, the workqueue programs stay unattached.
  std::vector<KernelSymbol> cxi_work;
  UprobeOptions uprobes;  // --uprobes (uprobes/uprobe_session.h)
  // The only processes traced (--only-pids with --pid): each USDT probe and
  // uprobe site is attached once per process, so only these take the traps and
  // only their preloads see a session (and leave their NIC counters to it).
  // Empty: every process that maps the library (pid -1).
  std::vector<pid_t> only_pids;
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
  size_t attached() const;                        // attach points attached
  bool attached(const std::string& point) const;  // that one ("tp_btf/sched_switch")

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

  // Waits up to timeout_ms, or until the programs wake it (the ring buffer half
  // full), then drains the ring buffer: on_drain first, then on_record for each
  // record, up to a ring's worth of records (a flood would otherwise hold it
  // for ever). Returns the records consumed, or -1 on error.
  int poll(int timeout_ms, const std::function<void(const void*, size_t)>& on_record,
           const std::function<void()>& on_drain = nullptr);
  // The live ring (probes.bpf.c's live_events: the stall and slow-op records
  // again, for `fabtrace top`; userspace/record/live_thread.h): the
  // descriptor to wait on (readable when it holds records; -1 when the
  // programs have none), and its drain, on_record for each record. Drained
  // by one thread, which may be another than poll()'s: the rings are apart.
  int live_fd() const;
  // A ring's record of `size` bytes: its header, when it is one (libbpf
  // rounds a record's size up to 8). For either ring's reader.
  static bool record_header(const void* data, size_t size, ft_hdr* h);
  int drain_live(const std::function<void(const void*, size_t)>& on_record);
  // What the last poll met: whether the programs' wakeup (the main ring half
  // full) ended its wait, and whether it stopped at its budget with records left.
  struct PollTurn {
    bool woken = false, full = false;
    uint64_t bytes = 0;  // drained
  };
  const PollTurn& last_poll() const;
  // The ring buffer's size in bytes (0 before start).
  uint64_t ring_bytes() const;
  // The size start() gives the ring buffer on a machine with `cpus` CPUs:
  // kRingBytesPerCpu each, within [kMinRingBytes, kMaxRingBytes], a power of 2.
  static uint64_t ring_bytes_for(unsigned cpus);
  static constexpr uint64_t kRingBytesPerCpu = 4ULL << 20;
  static constexpr uint64_t kMinRingBytes = 16ULL << 20;
  static constexpr uint64_t kMaxRingBytes = 256ULL << 20;

  KernelStats stats() const;  // the kernel-side counters, summed over CPUs
  // The short softirqs the kernel summed (BpfOptions::min_softirq_ns), each
  // key's sums since the session's start: on(const ft_softirq_key&,
  // const ft_softirq_sum&).
  void each_softirq_sum(
      const std::function<void(const ft_softirq_key&, const ft_softirq_sum&)>& on) const;
  // What the programs saw of the node's processes since the last call
  // (sched.bpf.c's proc_changes), taken out of their map into *out, with what
  // they tell (out->loads, out->ends: their programs attached). False when
  // they cannot tell (not loaded, not attached) or missed some since the last
  // call: then any process may have changed.
  bool take_proc_changes(ProcChanges* out);

  // --uprobes: its half of the session (empty without --uprobes).
  const UprobeSession& uprobes() const;

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
