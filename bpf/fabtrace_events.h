// SPDX-License-Identifier: (BSD-3-Clause OR GPL-2.0-only)
/* The kernel side's record layouts and event kinds: the one home shared by every
 * BPF program (bpf/NAME.bpf.c), the collector (`fabtrace record`), the kernel log's
 * writer and readers (common/kernel_log.*) and the report.
 *
 * A record is what a BPF program puts in the ring buffer, and it is stored in the
 * kernel log byte for byte: the header's `size` says how long it is, `kind` what
 * follows. Times are CLOCK_MONOTONIC nanoseconds (bpf_ktime_get_ns(), the clock
 * the preload's stall and slow-op probes convert their times to). Every struct is
 * a multiple of 8 bytes with naturally aligned fields, so the layout is the same
 * for the BPF target and for x86_64/aarch64 user space; the static asserts at the
 * bottom hold it there. Changing a layout means bumping FT_RECORD_VERSION.
 *
 * C, not C++: clang -target bpf compiles it too. The BPF side gets the __u*
 * types from vmlinux.h, user space from <linux/types.h>. */
#ifndef FABTRACE_BPF_EVENTS_H
#define FABTRACE_BPF_EVENTS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define FT_RECORD_VERSION 5

#define FT_COMM_LEN 16 /* TASK_COMM_LEN */
#define FT_NAME_LEN 32 /* IRQ action names ("cxi0_comp3", "virtio0-input.0") */
#define FT_ADDR_LEN 48 /* NIC address strings carried by the op probes */
#define FT_RANK_LEN 16 /* rank token of a preloaded process */
#define FT_TOP_TASKS 3 /* tasks named in a stall/slow-op breakdown */

/* Per-thread history kept in the kernel so that a stall or slow-op probe can
 * break down a window that started before anything told the kernel about it. */
#define FT_OFF_HIST 64   /* off-CPU intervals */
#define FT_IRQ_HIST 64   /* IRQ/softirq intervals taken while the thread ran */
#define FT_FAULT_HIST 64 /* page-fault buckets (bursts, cut by count and by time) */
/* A bucket holds at most FT_FAULT_BUCKET_MAX faults over FT_FAULT_BUCKET_NS, so
 * 64 buckets cover 524,288 faults of non-stop faulting (2 GiB of fresh 4 KiB
 * pages) or 16 s, whichever is less, however often the thread is preempted
 * meanwhile: a bucket cut every few ms of wall time ran out of history on a
 * loaded machine, where a 64 MiB touch took up to 2.3 s of which half was
 * spent preempted; 1024 faults a bucket covered 256 MiB of a 512 MiB touch.
 * A window whose start the history does not reach counts only the faults it
 * holds for certain (FT_WIN_PARTIAL_FAULT: a lower bound). */
#define FT_FAULT_BUCKET_MAX 8192
#define FT_FAULT_BUCKET_NS 256000000ULL
/* A pause this long ends a bucket, so bursts stay apart and a window edge rarely
 * falls inside one (the breakdown prorates those); a pause that was the
 * scheduler's (the thread preempted, then back) does not. A burst (at least
 * FT_FAULT_BURST_MIN faults, coming on average at most FT_FAULT_BURST_PACE_NS
 * apart lately) holds through pauses up to FT_FAULT_BURST_HOLD_NS: what the
 * kernel takes from a faulting thread that stays on its CPU (each timer tick's
 * work, every 4 ms at HZ=250, more with a hypervisor's steal) cut a bucket at
 * 100 us, and 64 buckets covered 256 ms of a 290 ms touch. Sparse faults are
 * not held: a bucket of faults a few hundred us apart (an ASan build's round
 * trips) held on for 25 ms into a 64 MiB touch, and prorating it counted about
 * 17,000 of the touch's 18,432 faults. */
#define FT_FAULT_BURST_GAP_NS 100000ULL
#define FT_FAULT_BURST_MIN 64
#define FT_FAULT_BURST_PACE_NS 50000ULL
#define FT_FAULT_BURST_HOLD_NS 1000000ULL
#define FT_FAULT_OFF_SCAN 8 /* off-CPU intervals looked at to tell the two apart */
#define FT_RUN_LOG 256      /* per CPU: the last tasks that ran (who held a waiting thread's CPU) */
#define FT_RUNNERS 2        /* runners kept per off-CPU interval */

/* The record kinds, one line each: X(kind, value, record struct, name, raw).
 * The enum below, the kernel log's record sizes, names and raw classes
 * (common/kernel_log.cpp) and the fixtures' list of kinds come from here; a
 * kind's meaning is written where it is emitted and where it is used.
 * raw: an event of the node's raw stream, which the log keeps only around
 * stalls and slow ops by default and which gives way first at its bound. */
#define FT_EVENT_KINDS(X)                                                                          \
  X(FT_EV_OFFCPU, 1, ft_offcpu, "offcpu", 1)   /* a traced thread was off its CPU: why, who ran */ \
  X(FT_EV_IRQ, 2, ft_irq, "irq", 1)            /* a hard IRQ while a traced thread was on CPU */   \
  X(FT_EV_SOFTIRQ, 3, ft_irq, "softirq", 1)    /* a softirq while a traced thread was on CPU */    \
  X(FT_EV_FAULTS, 4, ft_faults, "faults", 1)   /* page faults of a traced thread, summarized */    \
  X(FT_EV_RETRANS, 5, ft_net, "retransmit", 0) /* tcp_retransmit_skb */                            \
  X(FT_EV_DROP, 6, ft_net, "drop", 0)          /* skb:kfree_skb with its drop reason */            \
  X(FT_EV_WORK, 7, ft_work, "cxi_work", 1)     /* a cxi driver work item (workqueue start/end) */  \
  X(FT_EV_CXI_ERR, 8, ft_cxi_err, "cxi_err", 0) /* cass:cass_err */                                \
  X(FT_EV_THREAD, 9, ft_thread, "thread", 0)    /* a preloaded thread's first fabric activity */   \
  X(FT_EV_STALL, 10, ft_stall, "stall", 0)      /* a CQ poll gap above the threshold, explained */ \
  X(FT_EV_SLOW_OP, 11, ft_op, "slow_op", 0)     /* an op above the latency threshold, explained */ \
  X(FT_EV_OP_ERROR, 12, ft_op, "op_error", 0)   /* an op completed in error */                     \
  X(FT_EV_POLL, 13, ft_poll, "poll", 1)         /* a run of CQ polls (opt-in, --polls) */          \
  X(FT_EV_EXIT, 14, ft_exit, "exit", 0)         /* a traced thread exited */                       \
  X(FT_EV_MARK, 15, ft_mark, "mark", 0) /* the application's phase mark (include/fabtrace.h) */    \
  X(FT_EV_UPROBE_OPS, 16, ft_uprobe_ops, "uprobe_ops", 0) /* --uprobes: a link's ops of a kind */  \
  X(FT_EV_UPROBE_CQ, 17, ft_uprobe_cq, "uprobe_cq", 0) /* --uprobes: an application CQ's polls */  \
  X(FT_EV_SUMMARY, 18, ft_summary, "summary", 0)       /* the collector's: raw events summed */

#define FT_EVENT_KIND_ENUM(kind, value, record, name, raw) kind = value,
enum ft_kind {
  FT_EVENT_KINDS(FT_EVENT_KIND_ENUM) FT_EV_KINDS /* one past the last: sizes the counters */
};
#undef FT_EVENT_KIND_ENUM

struct ft_hdr {
  __u64 ts;   /* CLOCK_MONOTONIC ns: when the event ended (or happened) */
  __u16 kind; /* enum ft_kind */
  __u16 size; /* bytes of the whole record, header included */
  __u32 cpu;
  __u32 pid; /* tgid of the task the event belongs to (0: none, e.g. softirq context) */
  __u32 tid;
};

/* Why a thread was off CPU. */
enum ft_off_kind {
  FT_OFF_PREEMPTED = 1, /* still runnable: another task took the CPU */
  FT_OFF_SLEEP = 2,     /* interruptible sleep (futex, nanosleep, poll, ...: see syscall) */
  FT_OFF_DISK = 3,      /* uninterruptible sleep (I/O, page-in, mutexes in the kernel) */
  FT_OFF_STOPPED = 4,   /* stopped (SIGSTOP, job control) or traced (ptrace) */
  FT_OFF_OTHER = 5      /* dead, parked, idle states */
};

/* What a thread asleep in a syscall on a file descriptor (read, write,
 * recvmsg, accept, ...: its first argument) waited on: that file's type. */
enum ft_wait_on {
  FT_ON_NONE = 0, /* not such a syscall, or not known */
  FT_ON_PIPE = 1,
  FT_ON_SOCKET = 2,
  FT_ON_FILE = 3, /* a regular file */
  FT_ON_CHAR = 4, /* a character device (a terminal, ...) */
  FT_ON_OTHER = 5 /* an eventfd, a signalfd, ... */
};

/* FT_EV_OFFCPU; h.ts = switch-in, h.cpu = CPU it came back on. */
struct ft_offcpu {
  struct ft_hdr h;
  __u64 start;      /* switch-out */
  __u64 wake;       /* sched_wakeup seen while off CPU (0: none; preempted threads never sleep) */
  __s32 syscall;    /* syscall the thread blocked in (-1: none, e.g. a page fault) */
  __u32 prev_state; /* the raw task state at switch-out */
  __u32 cpu_out;    /* CPU it left */
  __u8 off_kind;    /* enum ft_off_kind */
  __u8 wait_on;     /* enum ft_wait_on: what a sleeping read, write, ... waited on */
  __u8 pad[2];
  __u32 out_pid; /* the task that took the CPU at switch-out (tid) */
  __u32 in_pid;  /* the task that gave the CPU back at switch-in (tid) */
  char out_comm[FT_COMM_LEN];
  char in_comm[FT_COMM_LEN];
  /* The task that ran longest on the CPU it came back on while it was runnable
   * and waiting (from switch-out if preempted, else from its wakeup): who really
   * held the CPU, which may not be the task that took it first. */
  __u64 ran_ns;
  __u32 ran_pid;
  __u32 pad2;
  char ran_comm[FT_COMM_LEN];
};

/* FT_EV_IRQ / FT_EV_SOFTIRQ; h.ts = handler exit, h.pid/tid = the traced thread it interrupted. */
struct ft_irq {
  struct ft_hdr h;
  __u64 start;
  __u32 irq;              /* IRQ number, or softirq vector */
  __s32 ret;              /* irqreturn_t (hard IRQs) */
  char name[FT_NAME_LEN]; /* action name (hard IRQs); empty for softirqs */
};

/* FT_EV_FAULTS: page faults of one thread since its previous summary. Emitted
 * when the thread leaves the CPU, exits, or after FT_FAULTS_PER_SUMMARY faults. */
#define FT_FAULTS_PER_SUMMARY 4096
struct ft_faults {
  struct ft_hdr h; /* ts = the last fault */
  __u64 first;     /* the first fault of this summary */
  __u64 count;
  __u64 last_addr;
  __u64 total; /* the thread's faults since it was first seen */
};

/* A traced process (value of the `traced` map, key: tgid). The collector adds the
 * processes it finds in /proc; the preload's thread_start probe adds its own. */
#define FT_PROC_PRELOAD 1u /* runs the preload (its probes fire) */
#define FT_PROC_SCANNED 2u /* found by the collector (libfabric or the preload mapped) */
struct ft_proc {
  __u32 flags;
  __u32 pad;
  __u64 since; /* CLOCK_MONOTONIC ns when it became traced */
};

/* A traced process's share of the thread table (map thread_share, key: tgid):
 * the threads it has there, and the events of its threads refused a place
 * (over its share, or the table full). */
struct ft_thread_share {
  __u32 held;
  __u32 over;
};

/* A connection as the kernel's socket sees it (local first). The key of the
 * traced-sockets map, which the collector also fills from /proc for connections
 * that existed before the session. Unused bytes are zero. */
struct ft_tuple {
  __u8 saddr[16]; /* IPv4 in the first 4 bytes (family says which) */
  __u8 daddr[16];
  __u16 sport; /* host order */
  __u16 dport;
  __u16 family; /* AF_INET / AF_INET6 */
  __u16 pad;
};

/* FT_EV_RETRANS / FT_EV_DROP: one segment, with its connection's 4-tuple. */
struct ft_net {
  struct ft_hdr h;
  struct ft_tuple t;
  __u8 state;    /* TCP state of the socket */
  __u8 protocol; /* IPPROTO_TCP / IPPROTO_UDP, 0 unknown */
  __u16 pad;
  __u32 reason;    /* enum skb_drop_reason (drops); err (retransmits) */
  __u32 owner_pid; /* tgid of the traced process owning the socket, 0: not known traced */
  __u32 segs;      /* retransmits: segments sent again (one skb can carry several, and
                    * the kernel's RetransSegs counts segments); 0 elsewhere */
};

/* FT_EV_WORK: h.ts = end. */
struct ft_work {
  struct ft_hdr h;
  __u64 start;
  __u64 func; /* the work function's address (resolved through /proc/kallsyms) */
};

/* FT_EV_CXI_ERR: the cass_err tracepoint's scalar arguments. */
struct ft_cxi_err {
  struct ft_hdr h;
  __u32 csr_flag;
  __u32 bit;
  __u64 sec;
  __u64 nsec;
};

/* FT_EV_THREAD: the preload's thread_start probe. */
struct ft_thread {
  struct ft_hdr h;
  char comm[FT_COMM_LEN];
  char rank[FT_RANK_LEN];
};

/* What a thread went through inside a window [start, end], worked out in the
 * kernel at the probe that closes the window. on_cpu + runnable + the blocked
 * kinds + stopped = end - start (up to the history's reach: see flags). */
#define FT_WIN_PARTIAL_OFF 1u    /* off-CPU history did not reach back to `start` */
#define FT_WIN_PARTIAL_IRQ 2u    /* IRQ history did not reach back to `start` */
#define FT_WIN_PARTIAL_FAULT 4u  /* fault history did not reach back to `start` */
#define FT_WIN_UNKNOWN_THREAD 8u /* the kernel had no state for the thread */
/* The faults of a burst reaching over an edge of the window were prorated by
 * time: `faults` is an estimate (without FT_WIN_PARTIAL_FAULT: exact). */
#define FT_WIN_FAULTS_PRORATED 16u
/* The blocked-sleep time (sleep_ns) by syscall: the two that took the most,
 * each with what it waited on; the rest of sleep_ns is in no syscall known. */
#define FT_SLEEP_CALLS 2
struct ft_sleep_call {
  __u64 ns;
  __s32 syscall;
  __u32 wait_on; /* enum ft_wait_on */
};
struct ft_task_time {
  __u32 pid; /* tid of a task that ran instead */
  __u32 pad;
  __u64 ns;
  char comm[FT_COMM_LEN];
};
struct ft_breakdown {
  __u64 start, end; /* the window (from the preload's clock, converted) */
  __u64 on_cpu_ns;
  __u64 runnable_ns; /* runnable, waiting for a CPU */
  __u64 sleep_ns;    /* interruptible sleep outside futex/nanosleep */
  __u64 futex_ns;
  __u64 nanosleep_ns;
  __u64 disk_ns; /* uninterruptible sleep */
  __u64 stopped_ns;
  __u64 other_ns;
  __u64 irq_ns; /* hard IRQs on its CPU while it ran */
  __u64 softirq_ns;
  __u32 faults;
  __u32 offcpu_count; /* off-CPU intervals overlapping the window */
  __u32 migrations;
  __u32 flags;                           /* FT_WIN_* */
  struct ft_task_time top[FT_TOP_TASKS]; /* who ran instead, longest first */
  /* faults: with FT_WIN_PARTIAL_FAULT, only those the history holds for
   * certain (a lower bound); with FT_WIN_FAULTS_PRORATED, an estimate */
  struct ft_sleep_call sleep_calls[FT_SLEEP_CALLS];
};

/* FT_EV_STALL: fired by the thread whose poll ended the gap. */
struct ft_stall {
  struct ft_hdr h;
  __u64 cq; /* the CQ's index in the rank's report (CQ#n) */
  struct ft_breakdown w;
};

/* FT_EV_SLOW_OP / FT_EV_OP_ERROR: fired by the thread that polled the completion. */
struct ft_op {
  struct ft_hdr h;
  __u64 bytes;
  __u32 op;  /* OpKind (common/op_kinds.h) */
  __s32 err; /* FT_EV_OP_ERROR: the provider's error (positive FI_E*) */
  char local[FT_ADDR_LEN];
  char remote[FT_ADDR_LEN];
  struct ft_breakdown w;
};

/* FT_EV_POLL: a run of one thread's polls of one CQ (fi_cq_read/readfrom/
 * sread...), from the preload's poll probe (struct ft_poll_run, below): h.ts =
 * its last poll's end, enter = its first poll's start. */
struct ft_poll {
  struct ft_hdr h; /* ts: the run's last poll's end */
  __u64 enter;     /* the run's first poll's start */
  __u32 cq;
  __u32 polls;   /* polls in the run: the last one found entries, or an error, */
  __s64 ret;     /* and returned this (entries, or -errno); -FI_EAGAIN or 0 for */
  __u64 busy_ns; /* a run cut at FT_POLL_RUN_NS of empty polls; time inside them */
};

/* Softirqs shorter than the session's --min-softirq-us (--raw windows), summed
 * in the kernel per thread, CPU and vector instead of sent one by one: on
 * loopback TCP nearly every message takes a NET_RX softirq of a few us, and
 * they were nine events in ten the collector read (bpf/irq.bpf.c). Cumulative:
 * the collector writes what each key gained since it last read it. */
struct ft_softirq_key {
  __u32 tgid, tid, cpu, vec;
};
struct ft_softirq_sum {
  __u64 count, ns;
};
#define FT_SOFTIRQ_SUMS 16384 /* keys; past them, softirqs are sent one by one */

/* FT_EV_EXIT */
struct ft_exit {
  struct ft_hdr h;
  char comm[FT_COMM_LEN];
  __u64 faults_total;
};

/* FT_EV_MARK: fabtrace_mark(name), fabtrace_begin(name) or fabtrace_end(), as
 * the thread called it; h.ts = the probe's hit. The name is cut at
 * FT_MARK_NAME_LEN - 1 bytes (the preload's timeline keeps it whole). */
#define FT_MARK_NAME_LEN 64
enum ft_mark_type {
  FT_MARK_INSTANT = 1, /* fabtrace_mark */
  FT_MARK_BEGIN = 2,   /* fabtrace_begin */
  FT_MARK_END = 3      /* fabtrace_end: closes the thread's innermost phase; no name */
};
struct ft_mark {
  struct ft_hdr h;
  __u32 type; /* enum ft_mark_type */
  __u32 pad;
  char name[FT_MARK_NAME_LEN];
};

/* --uprobes (bpf/uprobe_ops.h): what the kernel paired for one process's ops
 * of one kind on one link (endpoint, peer), from uprobes on the provider's
 * op-table functions, without the preload. Kept in a BPF map while the session
 * runs; the collector writes one FT_EV_UPROBE_OPS record per (process, op
 * kind, endpoint, peer) when it stops. Latency is op
 * entry -> the application's CQ read that returned its completion. The
 * histogram's bucket i counts latencies in [2^i, 2^(i+1)) ns (bucket 0 also 0,
 * the last one everything above). */
#define FT_UP_HIST 32
struct ft_up_stats {
  __u64 calls;       /* ops: calls (an op the provider refused with -FI_EAGAIN and
                      * issued again counts each time); polls: CQ reads */
  __u64 refused;     /* ops: calls that returned an error (-FI_EAGAIN included) */
  __u64 eagain;      /* ops: the refused calls that returned -FI_EAGAIN */
  __u64 completions; /* ops: completions paired with their op; polls: entries returned */
  __u64 bytes;       /* ops: bytes of the paired ops (receives: as arrived, where told) */
  /* ops: accepted calls that by design get no completion (an inject, FI_INJECT
   * without FI_COMPLETION, an op without FI_COMPLETION on a CQ bound with
   * FI_SELECTIVE_COMPLETION, a context the provider keeps: FI_PEEK, FI_CLAIM,
   * FI_MULTI_RECV, FI_TRIGGER), as the preload's "untimed", and their bytes */
  __u64 untimed, untimed_bytes;
  __u64 lat_sum_ns, lat_min_ns, lat_max_ns;
  __u64 unmatched; /* polls: entries no probed op had issued; ops: accepted with a
                    * NULL context on an endpoint whose CQ is not known (not paired) */
  __u64 by_order;  /* ops: completions paired by order (the op had a NULL context) */
  __u64 unwalked;  /* polls: entries past FT_UP_WALK_MAX in one read (not paired) */
  __u64 early;     /* polls: NULL-context entries of a CQ opened before the session, on a
                    * side that issued no op in the session yet (the op was issued before) */
  __u64 remote;    /* polls: NULL-context entries flagged FI_REMOTE_WRITE/FI_REMOTE_READ: an
                    * RMA or atomic of a peer landing here (fi_writedata's CQ data), no op of
                    * this process */
  __u64 hist[FT_UP_HIST];
};
struct ft_uprobe_ops {
  struct ft_hdr h;  /* ts = written, pid = the process, tid = 0 */
  __u32 op;         /* OpKind (common/op_kinds.h), or FT_UP_OP_POLLS (200) */
  __u16 size_class; /* the ops' bytes: 0, or [2^(c-1), 2^c) (ft_up_size_class) */
  __u16 posted;     /* 1: receives sized as posted (struct ft_up_stat_key) */
  __u64 pending;    /* ops issued whose completion was not seen (ops rows) */
  __u64 ep;         /* the application's endpoint (struct fid_ep *); 0 in the polls row */
  __u64 peer;       /* the ops' fi_addr_t; ~0 (FI_ADDR_UNSPEC): receives from any source */
  struct ft_up_stats s;
};

/* --uprobes: one application CQ of a process (FT_EV_UPROBE_CQ, written when
 * the session stops): its outermost reads (the application's polls) and the
 * gaps between them, as the preload's per-CQ poll statistics: a read is
 * stamped at its return (a blocking one, fi_cq_sread, at its entry), the gap
 * is the time since the CQ's previous stamp, by any thread. */
#define FT_UP_GAP_CLASSES 6 /* <10us <100us <1ms <10ms <100ms >=100ms */
struct ft_uprobe_cq {
  struct ft_hdr h; /* ts = written, pid = the process, tid = 0 */
  __u64 cq;        /* the application's struct fid_cq * */
  __u64 opened;    /* CLOCK_MONOTONIC ns of its cq_open (0: opened before the session) */
  __u64 polls;
  __u64 gaps[FT_UP_GAP_CLASSES];
  __u64 max_gap_ns;
  __u64 max_gap_end; /* CLOCK_MONOTONIC ns of the poll that ended the longest gap */
};

/* FT_EV_SUMMARY: written by the collector, never by a program. The raw events
 * (off-CPU intervals, IRQs, softirqs, fault summaries, cxi work items, polls)
 * of one thread with one cause since the previous summary of that key, whether
 * the log holds them or not: the raw events give way to the log's bound
 * (`record --max-size`, `--raw`), their sums never do. h.ts = when written,
 * h.pid/h.tid = the thread (0 for cxi work), h.cpu = the CPU (IRQs and softirqs;
 * else 0). Summing a key's records gives its totals over the session. */
struct ft_summary {
  struct ft_hdr h;
  __u16 of;      /* the kind summarised (FT_EV_OFFCPU, ...) */
  __u8 off_kind; /* off-CPU: enum ft_off_kind */
  __u8 wait_on;  /* off-CPU: enum ft_wait_on */
  __s32 code;    /* off-CPU: the syscall (-1: none); IRQ: its number; softirq: its vector */
  __u64 func;    /* cxi work: the function's address */
  __u64 count;   /* events */
  __u64 ns;      /* their summed durations (faults: 0) */
  __u64 faults;  /* fault summaries: the faults they counted */
  /* Off-CPU: the intervals in which the collector itself took the thread's CPU
   * or held it longest while the thread waited, and the time it held it. */
  __u64 self_count;
  __u64 self_ns;
  char name[FT_NAME_LEN]; /* IRQ: its action's name */
};

/* Counters the collector reads from the `counters` map (per CPU, summed): for
 * kind k, [k] records emitted and [FT_EV_KINDS + k] records lost because the
 * ring buffer was full; then the slots below. */
enum ft_counter {
  FT_CNT_UNTRACED_RETRANS = 2 * FT_EV_KINDS, /* retransmits on sockets not traced */
  FT_CNT_UNTRACED_DROP,                      /* drops on sockets not traced */
  FT_CNT_THREADS_FULL,                       /* a traced thread found the thread table full */
  FT_CNT_IN_WITHOUT_OUT,                     /* a known thread came back, never seen leaving */
  /* A thread found running while its last off-CPU interval was still open: the
   * kernel ran it without a sched_switch naming it (seen on these VMs after a
   * real-time task exits). The interval is closed at the CPU's last switch. */
  FT_CNT_IN_UNSEEN,
  FT_CNT_USDT_OVER_BUDGET,   /* a USDT record over its process's budget per second: dropped */
  FT_CNT_USDT_MALFORMED,     /* a USDT probe's arguments out of range: counted, not recorded */
  FT_CNT_THREADS_OVER_SHARE, /* a traced thread not tracked: its process holds its share */
  FT_COUNTERS
};

/* Per process (probes.bpf.c's usdt_budget map, key: tgid): what its USDT
 * probes may emit and what was dropped. Each process may emit `rate` records
 * per second (the collector's ft_usdt_rate; --polls' poll records have
 * ft_poll_rate of their own); the rest are counted here, as are probes whose
 * arguments are out of range (a window reversed, in the future or reaching
 * before the session; an error code that is not one), which are never
 * explained. */
struct ft_usdt_budget {
  __u64 window;     /* CLOCK_MONOTONIC ns: the current second's start */
  __u32 used;       /* records emitted in it */
  __u32 polls_used; /* poll records emitted in it */
  __u64 over_budget;
  __u64 malformed;
};
/* The largest error code an op_error probe may carry (errno's range). */
#define FT_MAX_ERR 4095
/* How far in the future a window may end (the preload converts its clock). */
#define FT_WINDOW_SLACK_NS 10000000ULL

/* ---- USDT probe arguments (preload/probes.h fires them; probes.bpf.c reads them) ----
 * provider "fabtrace":
 *   thread_start(const char *rank)
 *   cq_stall(u64 cq_index, u64 start_ns, u64 end_ns)
 *   slow_op(u32 op, u64 bytes, u64 start_ns, u64 end_ns, const char *local, const char *remote)
 *   op_error(u32 op, u64 bytes, u64 start_ns, u64 end_ns, s32 err, const char *local,
 *            const char *remote)
 *   poll(const struct ft_poll_run *runs, u64 n)   --polls: 1 to FT_POLL_BATCH runs
 *                                   of a thread's polls (below), handed over together
 *   mark(const char *name)          the application's fabtrace_mark(name) (include/fabtrace.h)
 *   phase_begin(const char *name)   fabtrace_begin(name)
 *   phase_end()                     fabtrace_end(): closes the thread's innermost phase
 * The mark probes carry no time: a program reads bpf_ktime_get_ns() at the hit.
 * Times are CLOCK_MONOTONIC ns. Every probe has a semaphore; the preload does the
 * work of preparing arguments only while a session has the probe attached. */
#define FT_USDT_PROVIDER "fabtrace"

/* One run of a thread's consecutive polls of one CQ, as the preload hands it to
 * the poll probe: a run ends at the poll that finds entries or an error, or
 * once its empty polls have lasted FT_POLL_RUN_NS. The preload hands its ended
 * runs over at an empty poll (while the thread waits anyway) once
 * FT_POLL_BATCH of them wait or the oldest has waited FT_POLL_RUN_NS: one
 * probe hit for many polls. */
struct ft_poll_run {
  __u32 cq;
  __u32 polls;
  __s64 ret;     /* what the run's last poll returned */
  __u64 start;   /* CLOCK_MONOTONIC ns: the first poll's start */
  __u64 end;     /* the last poll's end */
  __u64 busy_ns; /* time inside the run's polls */
};
#define FT_POLL_BATCH 16
#define FT_POLL_RUN_NS 1000000ULL

#ifndef __VMLINUX_H__
#ifdef __cplusplus
#define FT_STATIC_ASSERT static_assert
#else
#define FT_STATIC_ASSERT _Static_assert
#endif
FT_STATIC_ASSERT(sizeof(struct ft_hdr) == 24, "ft_hdr layout");
FT_STATIC_ASSERT(sizeof(struct ft_offcpu) % 8 == 0, "ft_offcpu layout");
FT_STATIC_ASSERT(sizeof(struct ft_irq) % 8 == 0, "ft_irq layout");
FT_STATIC_ASSERT(sizeof(struct ft_tuple) == 40, "ft_tuple layout");
FT_STATIC_ASSERT(sizeof(struct ft_proc) == 16, "ft_proc layout");
FT_STATIC_ASSERT(sizeof(struct ft_net) % 8 == 0, "ft_net layout");
FT_STATIC_ASSERT(sizeof(struct ft_breakdown) % 8 == 0, "ft_breakdown layout");
FT_STATIC_ASSERT(sizeof(struct ft_stall) % 8 == 0, "ft_stall layout");
FT_STATIC_ASSERT(sizeof(struct ft_op) % 8 == 0, "ft_op layout");
FT_STATIC_ASSERT(sizeof(struct ft_thread) % 8 == 0, "ft_thread layout");
FT_STATIC_ASSERT(sizeof(struct ft_exit) % 8 == 0, "ft_exit layout");
FT_STATIC_ASSERT(sizeof(struct ft_mark) == 96, "ft_mark layout");
FT_STATIC_ASSERT(sizeof(struct ft_poll) == 24 + 32, "ft_poll layout");
FT_STATIC_ASSERT(sizeof(struct ft_poll_run) == 40, "ft_poll_run layout");
FT_STATIC_ASSERT(sizeof(struct ft_softirq_key) == 16, "ft_softirq_key layout");
FT_STATIC_ASSERT(sizeof(struct ft_uprobe_ops) == 24 + 32 + 8 * (15 + FT_UP_HIST), "ft_uprobe_ops");
FT_STATIC_ASSERT(sizeof(struct ft_summary) == 24 + 16 + 8 * 5 + FT_NAME_LEN, "ft_summary");
FT_STATIC_ASSERT(sizeof(struct ft_uprobe_cq) == 24 + 8 * (5 + FT_UP_GAP_CLASSES), "ft_uprobe_cq");
#endif

#endif /* FABTRACE_BPF_EVENTS_H */
