// SPDX-License-Identifier: (BSD-3-Clause OR GPL-2.0-only)
/* What every fabtrace BPF program shares: the maps the collector creates once and
 * hands to each skeleton (bpf_map__reuse_fd), the per-thread history behind the
 * stall/slow-op breakdowns, and the helpers that emit records.
 *
 * Each .bpf.c includes this header and so defines these maps in its own object;
 * the collector loads the scheduler's object first and makes every later object
 * reuse its maps, so all programs see one `traced` set, one `threads` table and
 * one ring buffer. */
#ifndef FABTRACE_COMMON_BPF_H
#define FABTRACE_COMMON_BPF_H

#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "fabtrace_events.h"

#define FT_MAX_PROCS 4096
#define FT_MAX_THREADS 16384
#define FT_MAX_SOCKS 65536

/* Set by the collector before load (const volatile: folded by the verifier). */
const volatile __u32 ft_self_tgid = 0; /* the collector itself: never traced */

/* Traced processes: tgid -> struct ft_proc. Filled by the collector's scan of
 * /proc and by the preload's thread_start probe. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, FT_MAX_PROCS);
  __type(key, __u32);
  __type(value, struct ft_proc);
} traced SEC(".maps");

/* A task that held a CPU while a traced thread waited for it. */
struct ft_runner {
  __u32 pid;
  __u32 pad;
  __u64 ns;
  char comm[FT_COMM_LEN];
};

struct ft_off_slot {
  __u64 start, end, wake;
  __s32 syscall;
  __u8 kind;
  __u8 wait_on; /* enum ft_wait_on */
  __u16 cpu_out;
  __u16 cpu_in;
  __u16 pad2;
  __u32 pad3;
  /* the longest runners of the runnable part ([start or wake, end]) */
  struct ft_runner run[FT_RUNNERS];
};

struct ft_irq_slot {
  __u64 start, end;
  __u8 soft;
  __u8 pad[7];
};

struct ft_fault_slot {
  __u64 start;  /* first fault of the bucket */
  __u64 last;   /* latest fault in it */
  __u64 on_cpu; /* the thread's time on a CPU from start to last (a burst goes
                 * on through preemptions, so the two differ on a loaded node) */
  __u32 count;
  __u32 off_seq; /* the thread's off_n at that latest fault */
};

/* Per traced thread. Written by the programs that see the thread's events; the
 * sched programs only touch it when the thread leaves or gets a CPU, the IRQ and
 * fault programs only while it runs, so two writers rarely meet, and a torn
 * update costs at most one interval's accuracy in one breakdown. */
struct ft_thread_state {
  __u64 first_seen;
  /* the open off-CPU interval (off_start != 0 while off CPU) */
  __u64 off_start, wake;
  __s32 off_syscall;
  __u32 off_wait_on; /* enum ft_wait_on */
  __u32 off_state;
  __u32 off_cpu;
  __u32 off_kind;
  __u32 out_pid;
  __u32 last_cpu;
  char out_comm[FT_COMM_LEN];
  __u64 migrations;
  /* page faults not yet summarized */
  __u64 flt_first, flt_last, flt_count, flt_addr, flt_total;
  /* The current fault bucket's pace: on-CPU time between its recent faults (a
   * moving average over about 8), what tells a burst from sparse faults. */
  __u64 flt_pace;
  /* rings: the slot of event n is n % HIST */
  __u64 off_n, irq_n, flt_n;
  struct ft_off_slot off[FT_OFF_HIST];
  struct ft_irq_slot irq[FT_IRQ_HIST];
  struct ft_fault_slot flt[FT_FAULT_HIST];
};

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, FT_MAX_THREADS);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, __u32);
  __type(value, struct ft_thread_state);
} threads SEC(".maps");

/* Each traced process's share of `threads`: the entries its threads hold
 * (one each, from its first event to its exit) and the events of its threads
 * refused a place (over the share, or the table full), so that one process
 * with thousands of threads cannot take the table from the others. LRU: a forgotten process starts
 * again from zero, which errs towards tracing its threads. */
#define FT_THREADS_PER_PROC (FT_MAX_THREADS / 8)
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, FT_MAX_PROCS);
  __type(key, __u32);
  __type(value, struct ft_thread_share);
} thread_share SEC(".maps");

/* A zeroed state to create threads from (too large for the BPF stack). */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct ft_thread_state);
} thread_zero SEC(".maps");

/* Connections of traced processes: 4-tuple -> owner tgid (net.bpf.c). */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, FT_MAX_SOCKS);
  __type(key, struct ft_tuple);
  __type(value, __u32);
} traced_socks SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 16 << 20);
} events SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, FT_COUNTERS);
  __type(key, __u32);
  __type(value, __u64);
} counters SEC(".maps");

static __always_inline void ft_count(__u32 idx) {
  __u64* c = bpf_map_lookup_elem(&counters, &idx);
  if (c) *c += 1;
}

static __always_inline struct ft_proc* ft_proc_of(__u32 tgid) {
  if (!tgid || tgid == ft_self_tgid) return 0;
  return bpf_map_lookup_elem(&traced, &tgid);
}

static __always_inline bool ft_is_traced(__u32 tgid) { return ft_proc_of(tgid) != 0; }

static __always_inline struct ft_thread_state* ft_thread(__u32 tid) {
  return bpf_map_lookup_elem(&threads, &tid);
}

/* The state of thread `tid` of traced process `tgid`, created at its first
 * event while the process holds less than its share of the table (else NULL,
 * counted for the process and in FT_CNT_THREADS_OVER_SHARE). */
static __always_inline struct ft_thread_state* ft_thread_get(__u32 tgid, __u32 tid, __u64 now) {
  struct ft_thread_state* st = bpf_map_lookup_elem(&threads, &tid);
  if (st) return st;
  const struct ft_thread_share none = {};
  bpf_map_update_elem(&thread_share, &tgid, &none, BPF_NOEXIST);
  struct ft_thread_share* share = bpf_map_lookup_elem(&thread_share, &tgid);
  if (share && share->held >= FT_THREADS_PER_PROC) {
    __sync_fetch_and_add(&share->over, 1);
    ft_count(FT_CNT_THREADS_OVER_SHARE);
    return 0;
  }
  __u32 zero = 0;
  struct ft_thread_state* z = bpf_map_lookup_elem(&thread_zero, &zero);
  if (!z) return 0;
  z->first_seen = now;
  const long err = bpf_map_update_elem(&threads, &tid, z, BPF_NOEXIST);
  z->first_seen = 0;
  if (!err && share) __sync_fetch_and_add(&share->held, 1);
  st = bpf_map_lookup_elem(&threads, &tid);
  if (!st && err) {
    ft_count(FT_CNT_THREADS_FULL);
    if (share) __sync_fetch_and_add(&share->over, 1);
  }
  return st;
}

/* Thread `tid` of `tgid` exits: its entry leaves the table and its process's share. */
static __always_inline void ft_thread_exit(__u32 tgid, __u32 tid) {
  if (bpf_map_delete_elem(&threads, &tid) != 0) return;
  struct ft_thread_share* share = bpf_map_lookup_elem(&thread_share, &tgid);
  if (share && share->held) __sync_fetch_and_add(&share->held, (__u32)-1);
}

/* A record's header, for a record of `size` bytes and `kind`. */
static __always_inline void ft_hdr_fill(struct ft_hdr* h, __u32 size, __u16 kind, __u64 ts,
                                        __u32 pid, __u32 tid) {
  h->ts = ts;
  h->kind = kind;
  h->size = (__u16)size;
  h->cpu = bpf_get_smp_processor_id();
  h->pid = pid;
  h->tid = tid;
}

/* Reserves a record of `kind` in the ring buffer with its header filled; counts
 * it as emitted, or as lost when the ring is full. */
static __always_inline void* ft_reserve(__u32 size, __u16 kind, __u64 ts, __u32 pid, __u32 tid) {
  struct ft_hdr* h = bpf_ringbuf_reserve(&events, size, 0);
  if (!h) {
    ft_count(FT_EV_KINDS + kind);
    return 0;
  }
  ft_count(kind);
  ft_hdr_fill(h, size, kind, ts, pid, tid);
  return h;
}

/* Per CPU: the tasks that ran there, newest last, so that a thread coming back
 * after waiting for the CPU can name who held it all that time (the task that
 * preempts is not always the one that runs longest). One entry per context
 * switch on every CPU (sched.bpf.c writes it): a store and a 16-byte copy. */
struct ft_run_entry {
  __u64 start, end;
  __u32 pid;
  __u32 pad;
  char comm[FT_COMM_LEN];
};
struct ft_run_log {
  __u64 last_switch; /* when the task running now got this CPU */
  __u64 n;
  struct ft_run_entry e[FT_RUN_LOG];
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct ft_run_log);
} run_log SEC(".maps");

static __always_inline struct ft_run_log* ft_run_log_here(void) {
  __u32 zero = 0;
  return bpf_map_lookup_elem(&run_log, &zero);
}

/* The two tasks (idle left out) that ran longest on this CPU in [from, to]: a
 * walk of the run log from its newest entry back to `from`, as a bpf_loop so
 * that the verifier checks the step once, not once per entry and call site. */
struct ft_runners_walk {
  struct ft_run_log* rl;
  __u64 n, from, to;
  struct ft_runner r[FT_RUNNERS];
};

static long ft_runners_step(__u64 i, void* arg) {
  struct ft_runners_walk* w = arg;
  if (i >= w->n || !w->rl) return 1;
  struct ft_run_entry* e = &w->rl->e[(w->n - 1 - i) & (FT_RUN_LOG - 1)];
  if (e->end <= w->from) return 1;
  if (!e->pid) return 0;
  const __u64 a = e->start < w->from ? w->from : e->start;
  const __u64 b = e->end > w->to ? w->to : e->end;
  if (b <= a) return 0;
  const __u64 ns = b - a;
  struct ft_runner* r = w->r;
  if (r[0].pid == e->pid) {
    r[0].ns += ns;
  } else if (r[1].pid == e->pid) {
    r[1].ns += ns;
  } else if (!r[0].pid) {
    r[0].pid = e->pid;
    r[0].ns = ns;
    __builtin_memcpy(r[0].comm, e->comm, FT_COMM_LEN);
  } else if (!r[1].pid || ns > r[1].ns) {
    r[1].pid = e->pid;
    r[1].ns = ns;
    __builtin_memcpy(r[1].comm, e->comm, FT_COMM_LEN);
  }
  if (r[1].ns > r[0].ns) {
    struct ft_runner t = r[0];
    r[0] = r[1];
    r[1] = t;
  }
  return 0;
}

static __always_inline void ft_runners(struct ft_run_log* rl, __u64 from, __u64 to,
                                       struct ft_runner* out) {
  if (!rl || to <= from) return;
  struct ft_runners_walk w = {};
  w.rl = rl;
  w.n = rl->n;
  w.from = from;
  w.to = to;
  bpf_loop(FT_RUN_LOG, ft_runners_step, &w, 0);
  __builtin_memcpy(out, w.r, sizeof(w.r));
}

/* Submits without waking the collector: its wakeups would be context switches
 * of their own, preempting the very threads it traces (each record would beget
 * another). The collector drains the ring on a timer instead, unless the ring
 * is half full: then it is woken, so that a collector that runs seldom (it
 * drains every few hundred ms, at a low priority) loses nothing. */
static __always_inline __u64 ft_wakeup_flag(void) {
  const __u64 avail = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
  const __u64 size = bpf_ringbuf_query(&events, BPF_RB_RING_SIZE);
  return avail > size / 2 ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}
static __always_inline void ft_submit(void* r) { bpf_ringbuf_submit(r, ft_wakeup_flag()); }

/* A record built elsewhere (its header filled) copied into the ring buffer,
 * waking the collector as ft_submit does; counted as ft_reserve counts. */
static __always_inline void ft_output(void* rec, __u32 size, __u16 kind) {
  if (bpf_ringbuf_output(&events, rec, size, ft_wakeup_flag()) != 0) {
    ft_count(FT_EV_KINDS + kind);
    return;
  }
  ft_count(kind);
}

/* The current task's tgid and tid. */
static __always_inline __u32 ft_cur_tgid(void) { return bpf_get_current_pid_tgid() >> 32; }
static __always_inline __u32 ft_cur_tid(void) { return (__u32)bpf_get_current_pid_tgid(); }

/* Emits (and clears) a thread's pending page-fault summary. */
static __always_inline void ft_flush_faults(struct ft_thread_state* st, __u32 tgid, __u32 tid) {
  if (!st->flt_count) return;
  struct ft_faults* r = ft_reserve(sizeof(*r), FT_EV_FAULTS, st->flt_last, tgid, tid);
  if (r) {
    r->first = st->flt_first;
    r->count = st->flt_count;
    r->last_addr = st->flt_addr;
    r->total = st->flt_total;
    ft_submit(r);
  }
  st->flt_count = 0;
}

/* Closes the thread's open off-CPU interval at `end` (it came back on CPU `cpu`):
 * into its history, and as a record unless shorter than `min_ns`. `in_pid` and
 * `in_comm` (kernel memory, may be NULL) name the task that gave the CPU back. */
static __always_inline void ft_close_off(struct ft_thread_state* st, __u32 tgid, __u32 tid,
                                         __u64 end, __u32 cpu, __u32 in_pid, const char* in_comm,
                                         struct ft_run_log* rl, __u64 min_ns) {
  const __u64 start = st->off_start;
  st->off_start = 0;
  if (!start || end < start) return;
  __u64 n = st->off_n;
  struct ft_off_slot* s = &st->off[n & (FT_OFF_HIST - 1)];
  s->start = start;
  s->end = end;
  s->wake = st->wake;
  s->syscall = st->off_syscall;
  s->kind = (__u8)st->off_kind;
  s->wait_on = (__u8)st->off_wait_on;
  s->cpu_out = (__u16)st->off_cpu;
  s->cpu_in = (__u16)cpu;
  __builtin_memset(s->run, 0, sizeof(s->run));
  /* Runnable from switch-out when preempted, else from its wakeup. */
  const __u64 ready = st->off_kind == FT_OFF_PREEMPTED ? start : st->wake;
  if (ready && ready < end) ft_runners(rl, ready, end, s->run);
  st->off_n = n + 1;

  if (end - start < min_ns) return;
  struct ft_offcpu* r = ft_reserve(sizeof(*r), FT_EV_OFFCPU, end, tgid, tid);
  if (!r) return;
  r->h.cpu = cpu;
  r->start = start;
  r->wake = st->wake;
  r->syscall = st->off_syscall;
  r->prev_state = st->off_state;
  r->cpu_out = st->off_cpu;
  r->off_kind = (__u8)st->off_kind;
  r->wait_on = (__u8)st->off_wait_on;
  r->pad[0] = r->pad[1] = 0;
  r->out_pid = st->out_pid;
  r->in_pid = in_pid;
  __builtin_memcpy(r->out_comm, st->out_comm, FT_COMM_LEN);
  r->in_comm[0] = 0;
  if (in_comm) bpf_probe_read_kernel_str(r->in_comm, sizeof(r->in_comm), in_comm);
  r->ran_pid = s->run[0].pid;
  r->ran_ns = s->run[0].ns;
  __builtin_memcpy(r->ran_comm, s->run[0].comm, FT_COMM_LEN);
  ft_submit(r);
}

/* The thread is running on this CPU now; if its last off-CPU interval is still
 * open, the kernel let it run without a sched_switch naming it: it has been
 * running since this CPU's last switch, which closes the interval. */
static __always_inline void ft_repair_unseen_in(struct ft_thread_state* st, __u32 tgid, __u32 tid,
                                                __u64 min_ns) {
  if (!st->off_start) return;
  struct ft_run_log* rl = ft_run_log_here();
  const __u64 end = rl && rl->last_switch > st->off_start ? rl->last_switch : st->off_start;
  ft_count(FT_CNT_IN_UNSEEN);
  ft_close_off(st, tgid, tid, end, bpf_get_smp_processor_id(), 0, 0, rl, min_ns);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#endif /* FABTRACE_COMMON_BPF_H */
