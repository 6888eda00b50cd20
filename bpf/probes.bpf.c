// SPDX-License-Identifier: (BSD-3-Clause OR GPL-2.0-only)
/* The preload's USDT probes (preload/probes.h): a thread's first fabric activity
 * registers its process as traced; a CQ poll gap or an op above its threshold
 * gets, in the kernel and at the moment it is reported, the breakdown of what
 * the reporting thread went through inside that window (from the history the
 * scheduler, IRQ and fault programs keep per thread); an op completed in error
 * gets the same. Opt-in (--polls): every poll, in runs handed over in batches.
 *
 * Attached per library file (all processes that map libfabtrace.so), so
 * processes started after the session are covered without a scan. */
#include "fabtrace_common.bpf.h"

#include <bpf/usdt.bpf.h>

/* x86_64 and arm64 syscall numbers the breakdown names. */
#if defined(__TARGET_ARCH_arm64)
#define FT_NR_FUTEX 98
#define FT_NR_FUTEX_WAITV 449
#define FT_NR_NANOSLEEP 101
#define FT_NR_CLOCK_NANOSLEEP 115
#else
#define FT_NR_FUTEX 202
#define FT_NR_FUTEX_WAITV 449
#define FT_NR_NANOSLEEP 35
#define FT_NR_CLOCK_NANOSLEEP 230
#endif

/* Set by the collector before load: the session's start (CLOCK_MONOTONIC ns;
 * a window reaching before it is malformed), and the records each process may
 * emit per second (0: no bound), poll records apart. */
const volatile __u64 ft_session_start_ns = 0;
const volatile __u32 ft_usdt_rate = 0;
const volatile __u32 ft_poll_rate = 0;

/* Each process's budget and drops (struct ft_usdt_budget); LRU: a process
 * evicted by many others starts a fresh second. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, FT_MAX_PROCS);
  __type(key, __u32);
  __type(value, struct ft_usdt_budget);
} usdt_budget SEC(".maps");

static __always_inline struct ft_usdt_budget* budget_of(__u32 tgid) {
  struct ft_usdt_budget* b = bpf_map_lookup_elem(&usdt_budget, &tgid);
  if (b) return b;
  struct ft_usdt_budget fresh = {};
  bpf_map_update_elem(&usdt_budget, &tgid, &fresh, BPF_NOEXIST);
  return bpf_map_lookup_elem(&usdt_budget, &tgid);
}

/* One record of process `tgid` may be emitted now (a poll record: `poll`);
 * else it is counted over budget. Per-CPU races may let a few more through. */
static __always_inline bool admit(__u32 tgid, bool poll) {
  const __u32 rate = poll ? ft_poll_rate : ft_usdt_rate;
  if (!rate) return true;
  struct ft_usdt_budget* b = budget_of(tgid);
  if (!b) return true; /* the map is full of others: the ring buffer still bounds */
  const __u64 now = bpf_ktime_get_ns();
  if (now - b->window >= 1000000000ULL) {
    b->window = now;
    b->used = 0;
    b->polls_used = 0;
  }
  __u32* used = poll ? &b->polls_used : &b->used;
  if (*used >= rate) {
    __sync_fetch_and_add(&b->over_budget, 1);
    ft_count(FT_CNT_USDT_OVER_BUDGET);
    return false;
  }
  *used += 1;
  return true;
}

/* A probe's arguments out of range: counted for its process, never recorded. */
static __always_inline void malformed(__u32 tgid) {
  struct ft_usdt_budget* b = budget_of(tgid);
  if (b) __sync_fetch_and_add(&b->malformed, 1);
  ft_count(FT_CNT_USDT_MALFORMED);
}

/* A window the preload could have measured in this session: not reversed, not
 * ending in the future, not reaching before the session's start. */
static __always_inline bool window_ok(__u64 start, __u64 end) {
  return start <= end && start >= ft_session_start_ns &&
         end <= bpf_ktime_get_ns() + FT_WINDOW_SLACK_NS;
}

/* Scratch records (too large for the BPF stack), one per CPU. */
union scratch {
  struct ft_stall stall;
  struct ft_op op;
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, union scratch);
} scratch SEC(".maps");

/* Stall and slow-op records once more, for the live view alone (fabtrace top):
 * a small ring of their own that wakes the collector, which drains it first
 * and between the batches of a long pass, so that a flood in `events` does not
 * hold them back on a busy node (the log takes them from `events`, in order).
 * They are few (the processes' record budget bounds them), so their wakeups
 * cost nothing that counts. Full: the view misses one; the log does not. */
struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 256 << 10);
} live_events SEC(".maps");

static __always_inline __u64 overlap(__u64 a, __u64 b, __u64 s, __u64 e) {
  if (a < s) a = s;
  if (b > e) b = e;
  return b > a ? b - a : 0;
}

static __always_inline void top_add(struct ft_breakdown* w, __u32 pid, const char* comm, __u64 ns) {
  if (!ns || !pid) return;
  int free = -1, least = 0;
  for (int i = 0; i < FT_TOP_TASKS; i++) {
    if (w->top[i].pid == pid) {
      w->top[i].ns += ns;
      return;
    }
    if (!w->top[i].pid && free < 0) free = i;
    if (w->top[i].ns < w->top[least].ns) least = i;
  }
  int slot = free >= 0 ? free : least;
  if (free < 0 && w->top[least].ns >= ns) return; /* keeps the longest three */
  if (slot < 0 || slot >= FT_TOP_TASKS) return;
  w->top[slot].pid = pid;
  w->top[slot].ns = ns;
  __builtin_memcpy(w->top[slot].comm, comm, FT_COMM_LEN);
}

static __always_inline void top_sort(struct ft_breakdown* w) {
  for (int i = 0; i < FT_TOP_TASKS - 1; i++)
    for (int j = 0; j < FT_TOP_TASKS - 1 - i; j++)
      if (w->top[j].ns < w->top[j + 1].ns) {
        struct ft_task_time t = w->top[j];
        w->top[j] = w->top[j + 1];
        w->top[j + 1] = t;
      }
}

/* Blocked-sleep time of syscall `sc` (on `on`): kept for the two that took
 * the most (a third replaces the lesser when it took more). Fields, not an
 * index: a computed index would be a value the verifier tracks per path, in
 * a loop over the thread's 64 off-CPU intervals. */
static __always_inline void sleep_add(struct ft_breakdown* w, __s32 sc, __u32 on, __u64 ns) {
  struct ft_sleep_call* a = &w->sleep_calls[0];
  struct ft_sleep_call* b = &w->sleep_calls[1];
  if (sc < 0 || !ns) return;
  if (a->ns && a->syscall == sc && a->wait_on == on) {
    a->ns += ns;
  } else if (b->ns && b->syscall == sc && b->wait_on == on) {
    b->ns += ns;
  } else if (!a->ns || (b->ns && a->ns < ns && a->ns <= b->ns)) {
    a->ns = ns;
    a->syscall = sc;
    a->wait_on = on;
  } else if (b->ns < ns) {
    b->ns = ns;
    b->syscall = sc;
    b->wait_on = on;
  }
}

static __always_inline void blocked_add(struct ft_breakdown* w, __u8 kind, __s32 sc, __u8 on,
                                        __u64 ns) {
  switch (kind) {
    case FT_OFF_STOPPED:
      w->stopped_ns += ns;
      break;
    case FT_OFF_DISK:
      w->disk_ns += ns;
      break;
    case FT_OFF_SLEEP:
      if (sc == FT_NR_FUTEX || sc == FT_NR_FUTEX_WAITV)
        w->futex_ns += ns;
      else if (sc == FT_NR_NANOSLEEP || sc == FT_NR_CLOCK_NANOSLEEP)
        w->nanosleep_ns += ns;
      else {
        w->sleep_ns += ns;
        sleep_add(w, sc, on, ns);
      }
      break;
    default:
      w->other_ns += ns;
  }
}

/* A fault bucket that reaches past an edge of the window: the part of it
 * inside, its faults and its time on a CPU, for the proration. */
struct edge_bucket {
  __u64 from, to; /* the bucket's span inside the window */
  __u64 span, on_cpu, count;
  __u64 off;    /* off-CPU time in [from, to] */
  __u32 walked; /* the off-CPU history reached back to from */
};

/* The walks of a thread's IRQ and fault histories back from their newest
 * entries over a window: bpf_loop steps, checked once by the verifier (the
 * unrolled walks, with the off-CPU one, took 797k of its 1M instructions in
 * each of the three programs that break a window down). */
struct hist_walk {
  struct ft_breakdown* w;
  struct ft_thread_state* st;
  __u64 s, e, n;
  __u64 est, sure; /* faults: estimated (prorated), held for certain */
  __u32 reached, prorated;
  /* Buckets do not overlap in time, so at most two cross an edge: the one
   * holding the window's start and the one holding its end (or one, both). */
  __u32 edges;
  struct edge_bucket edge[2];
};

static long irq_step(__u64 i, void* arg) {
  struct hist_walk* c = arg;
  if (i >= c->n) {
    c->reached = 1;
    return 1;
  }
  struct ft_irq_slot* q = &c->st->irq[(c->n - 1 - i) & (FT_IRQ_HIST - 1)];
  if (q->end <= c->s) {
    c->reached = 1;
    return 1;
  }
  const __u64 t = overlap(q->start, q->end, c->s, c->e);
  if (q->soft)
    c->w->softirq_ns += t;
  else
    c->w->irq_ns += t;
  return 0;
}

static long fault_step(__u64 i, void* arg) {
  struct hist_walk* c = arg;
  const __u64 s = c->s, e = c->e;
  if (i >= c->n) {
    c->reached = 1;
    return 1;
  }
  struct ft_fault_slot* f = &c->st->flt[(c->n - 1 - i) & (FT_FAULT_HIST - 1)];
  if (f->last < s) {
    c->reached = 1;
    return 1;
  }
  if (f->start > e) return 0;
  const __u64 span = f->last - f->start;
  const __u64 in = overlap(f->start, f->last, s, e);
  if (span && in < span) {
    /* A bucket reaching past an edge of the window counts in proportion to
     * its time on a CPU inside (a burst's faults spread evenly over the time
     * the thread ran; time it spent preempted holds none): an estimate,
     * finished by prorate_edges. For certain only its first fault (past the
     * end) or its last (before the start) when that one is inside. */
    const __u32 k = c->edges;
    if (k < 2) { /* always (see hist_walk); the bound is the verifier's */
      struct edge_bucket* b = &c->edge[k];
      b->from = f->start > s ? f->start : s;
      b->to = f->last < e ? f->last : e;
      b->span = span;
      b->on_cpu = f->on_cpu;
      b->count = f->count;
      c->edges = k + 1;
    }
    c->prorated = 1;
    if ((f->start >= s && f->start <= e) || (f->last >= s && f->last <= e)) c->sure += 1;
  } else {
    c->est += f->count;
    c->sure += f->count;
  }
  return 0;
}

/* The thread's off-CPU time inside each edge bucket's part of the window. */
static long edge_off_step(__u64 i, void* arg) {
  struct hist_walk* c = arg;
  const __u64 n = c->st->off_n;
  if (i >= n) {
    c->edge[0].walked = c->edge[1].walked = 1;
    return 1;
  }
  const struct ft_off_slot* o = &c->st->off[(n - 1 - i) & (FT_OFF_HIST - 1)];
  bool older = true;
  for (int k = 0; k < 2; k++) {
    struct edge_bucket* b = &c->edge[k];
    if ((__u32)k >= c->edges || o->end <= b->from) {
      b->walked = 1;
      continue;
    }
    older = false;
    b->off += overlap(o->start, o->end, b->from, b->to);
  }
  return older ? 1 : 0;
}

/* Each edge bucket's faults inside the window: its count times the share of its
 * time on a CPU that falls inside. A bucket's span holds only preemptions (a
 * sleep or a block ends a burst), and on a loaded node they can be most of it:
 * prorating by wall time counted about 15,700 of the 18,400 faults of a 64 MiB
 * touch under ASan on a loaded node (a bucket begun before a preemption). By
 * wall time where the off-CPU history does not reach back. */
static __always_inline void prorate_edges(struct hist_walk* c) {
  if (!c->edges) return;
  bpf_loop(FT_OFF_HIST, edge_off_step, c, 0);
  for (int k = 0; k < 2; k++) {
    const struct edge_bucket* b = &c->edge[k];
    if ((__u32)k >= c->edges) break;
    const __u64 in = b->to > b->from ? b->to - b->from : 0;
    const __u64 on_in = in > b->off ? in - b->off : 0;
    if (b->walked && b->on_cpu)
      c->est += b->count * (on_in < b->on_cpu ? on_in : b->on_cpu) / b->on_cpu;
    else
      c->est += b->count * in / b->span;
  }
}

/* What thread `tid` of process `tgid` went through inside [w->start, w->end]. */
static __always_inline void analyze(struct ft_breakdown* w, __u32 tgid, __u32 tid) {
  const __u64 s = w->start, e = w->end;
  struct ft_proc* p = ft_proc_of(tgid);
  if (!p || p->since > s)
    w->flags |= FT_WIN_PARTIAL_OFF | FT_WIN_PARTIAL_IRQ | FT_WIN_PARTIAL_FAULT;
  struct ft_thread_state* st = ft_thread(tid);
  if (!st) {
    /* No event since the process became traced: it ran all along. Unless its
     * process had threads refused a place in the table (its share held, or the
     * table full): then this may be one of them, and nothing is known. */
    const struct ft_thread_share* share = bpf_map_lookup_elem(&thread_share, &tgid);
    if (!p || (share && share->over)) w->flags |= FT_WIN_UNKNOWN_THREAD;
    w->on_cpu_ns = e > s ? e - s : 0;
    return;
  }

  /* Running now: an interval still open ended unseen (see ft_repair_unseen_in). */
  ft_repair_unseen_in(st, tgid, tid, 0);

  const __u64 n = st->off_n;
  __u64 off = 0;
  bool reached = false;
  for (int i = 0; i < FT_OFF_HIST; i++) {
    if ((__u64)i >= n) {
      reached = true;
      break;
    }
    struct ft_off_slot* o = &st->off[(n - 1 - i) & (FT_OFF_HIST - 1)];
    if (o->end <= s) {
      reached = true;
      break;
    }
    if (o->start >= e) continue;
    w->offcpu_count++;
    if (o->cpu_out != o->cpu_in) w->migrations++;
    const bool woke = o->kind != FT_OFF_PREEMPTED && o->wake && o->wake < o->end;
    if (o->kind != FT_OFF_PREEMPTED) {
      const __u64 b = overlap(o->start, woke ? o->wake : o->end, s, e);
      blocked_add(w, o->kind, o->syscall, o->wait_on, b);
      off += b;
    }
    if (o->kind == FT_OFF_PREEMPTED || woke) {
      const __u64 ready = o->kind == FT_OFF_PREEMPTED ? o->start : o->wake;
      const __u64 r = overlap(ready, o->end, s, e);
      w->runnable_ns += r;
      off += r;
      /* The runners' time, scaled to the part inside the window. */
      const __u64 whole = o->end - ready;
      for (int k = 0; k < FT_RUNNERS; k++) {
        const __u64 ns = whole && r < whole ? o->run[k].ns * r / whole : o->run[k].ns;
        top_add(w, o->run[k].pid, o->run[k].comm, ns);
      }
    }
  }
  if (!reached) w->flags |= FT_WIN_PARTIAL_OFF;
  const __u64 len = e > s ? e - s : 0;
  w->on_cpu_ns = len > off ? len - off : 0;
  top_sort(w);

  /* One walk state for both histories: the BPF stack is 512 bytes. */
  struct hist_walk f = {.w = w, .st = st, .s = s, .e = e, .n = st->irq_n};
  bpf_loop(FT_IRQ_HIST, irq_step, &f, 0);
  if (!f.reached) w->flags |= FT_WIN_PARTIAL_IRQ;

  f = (struct hist_walk){.w = w, .st = st, .s = s, .e = e, .n = st->flt_n};
  bpf_loop(FT_FAULT_HIST, fault_step, &f, 0);
  prorate_edges(&f);
  /* History short of the window's start: only the faults held for certain (a
   * lower bound); else the count, exact unless a bucket was prorated. */
  if (!f.reached || (w->flags & FT_WIN_PARTIAL_FAULT)) {
    /* (the process traced only since after the start: the same) */
    w->flags |= FT_WIN_PARTIAL_FAULT;
    w->faults = (__u32)f.sure;
  } else {
    w->faults = (__u32)f.est;
    if (f.prorated) w->flags |= FT_WIN_FAULTS_PRORATED;
  }
}

static __always_inline union scratch* scratch_get(void) {
  __u32 zero = 0;
  return bpf_map_lookup_elem(&scratch, &zero);
}

SEC("usdt")
int BPF_USDT(ft_thread_start, const char* rank) {
  const __u32 tgid = ft_cur_tgid(), tid = ft_cur_tid();
  if (!tgid || tgid == ft_self_tgid) return 0;
  const __u64 now = bpf_ktime_get_ns();
  struct ft_proc* p = bpf_map_lookup_elem(&traced, &tgid);
  if (p) {
    p->flags |= FT_PROC_PRELOAD;
  } else {
    struct ft_proc np = {.flags = FT_PROC_PRELOAD, .since = now};
    bpf_map_update_elem(&traced, &tgid, &np, BPF_NOEXIST);
  }
  if (!admit(tgid, false)) return 0;
  struct ft_thread* r = ft_reserve(sizeof(*r), FT_EV_THREAD, now, tgid, tid);
  if (!r) return 0;
  bpf_get_current_comm(r->comm, sizeof(r->comm));
  r->rank[0] = 0;
  if (rank) bpf_probe_read_user_str(r->rank, sizeof(r->rank), rank);
  ft_submit(r);
  return 0;
}

SEC("usdt")
int BPF_USDT(ft_cq_stall, __u64 cq, __u64 start_ns, __u64 end_ns) {
  const __u32 tgid = ft_cur_tgid(), tid = ft_cur_tid();
  if (!ft_is_traced(tgid)) return 0;
  if (!admit(tgid, false)) return 0;
  union scratch* sc = scratch_get();
  if (!sc) return 0;
  struct ft_stall* t = &sc->stall;
  __builtin_memset(t, 0, sizeof(*t));
  t->cq = cq;
  t->w.start = start_ns;
  t->w.end = end_ns;
  analyze(&t->w, tgid, tid);
  /* Checked after the breakdown: bounds known on the window before it make
   * the verifier walk its loops once per bound (too complex to load). */
  if (!window_ok(start_ns, end_ns)) {
    malformed(tgid);
    return 0;
  }
  ft_hdr_fill(&t->h, sizeof(*t), FT_EV_STALL, bpf_ktime_get_ns(), tgid, tid);
  ft_output(t, sizeof(*t), FT_EV_STALL);
  bpf_ringbuf_output(&live_events, t, sizeof(*t), BPF_RB_FORCE_WAKEUP);
  return 0;
}

static __always_inline int op_event(__u16 kind, __u32 op, __u64 bytes, __u64 start_ns, __u64 end_ns,
                                    __s32 err, const char* local, const char* remote) {
  const __u32 tgid = ft_cur_tgid(), tid = ft_cur_tid();
  if (!ft_is_traced(tgid)) return 0;
  if (op >= 64 || (kind == FT_EV_OP_ERROR && (err <= 0 || err > FT_MAX_ERR))) {
    malformed(tgid);
    return 0;
  }
  if (!admit(tgid, false)) return 0;
  union scratch* sc = scratch_get();
  if (!sc) return 0;
  struct ft_op* t = &sc->op;
  __builtin_memset(t, 0, sizeof(*t));
  t->op = op;
  t->bytes = bytes;
  t->err = err;
  if (local) bpf_probe_read_user_str(t->local, sizeof(t->local), local);
  if (remote) bpf_probe_read_user_str(t->remote, sizeof(t->remote), remote);
  t->w.start = start_ns;
  t->w.end = end_ns;
  analyze(&t->w, tgid, tid);
  if (!window_ok(start_ns, end_ns)) { /* after the breakdown: see ft_cq_stall */
    malformed(tgid);
    return 0;
  }
  ft_hdr_fill(&t->h, sizeof(*t), kind, bpf_ktime_get_ns(), tgid, tid);
  ft_output(t, sizeof(*t), kind);
  if (kind == FT_EV_SLOW_OP) bpf_ringbuf_output(&live_events, t, sizeof(*t), BPF_RB_FORCE_WAKEUP);
  return 0;
}

SEC("usdt")
int BPF_USDT(ft_slow_op, __u32 op, __u64 bytes, __u64 start_ns, __u64 end_ns, const char* local,
             const char* remote) {
  return op_event(FT_EV_SLOW_OP, op, bytes, start_ns, end_ns, 0, local, remote);
}

SEC("usdt")
int BPF_USDT(ft_op_error, __u32 op, __u64 bytes, __u64 start_ns, __u64 end_ns, __s32 err,
             const char* local, const char* remote) {
  return op_event(FT_EV_OP_ERROR, op, bytes, start_ns, end_ns, err, local, remote);
}

/* --polls: runs of a thread's polls (struct ft_poll_run), up to FT_POLL_BATCH
 * a hit, read from the process's memory. Their times are the process's own
 * word, as a stall's window is: a run ending in the future, reversed, busier
 * than its span or of no poll is malformed, and one begun before the session
 * is bounded to it, so a made-up run moves only that thread's poll records.
 * An unreadable batch, or one of no run or too many, is malformed whole. */
SEC("usdt")
int BPF_USDT(ft_poll, __u64 runs, __u64 n) {
  const __u32 tgid = ft_cur_tgid(), tid = ft_cur_tid();
  if (n == 0 || n > FT_POLL_BATCH) {
    malformed(tgid);
    return 0;
  }
  const __u64 now = bpf_ktime_get_ns();
  for (__u32 i = 0; i < FT_POLL_BATCH; ++i) {
    if (i >= n) break;
    struct ft_poll_run run;
    if (bpf_probe_read_user(&run, sizeof(run), (const void*)(runs + i * sizeof(run)))) {
      malformed(tgid);
      return 0;
    }
    if (run.end > now || run.start > run.end || run.busy_ns > run.end - run.start ||
        run.polls == 0) {
      malformed(tgid);
      continue;
    }
    if (run.end < ft_session_start_ns) continue; /* polled before the session */
    if (run.start < ft_session_start_ns) run.start = ft_session_start_ns;
    if (!admit(tgid, true)) return 0;
    struct ft_poll* r = ft_reserve(sizeof(*r), FT_EV_POLL, run.end, tgid, tid);
    if (!r) return 0;
    r->enter = run.start;
    r->cq = run.cq;
    r->polls = run.polls;
    r->ret = run.ret;
    r->busy_ns = run.busy_ns;
    ft_submit(r);
  }
  return 0;
}

/* The application's marks: one record per call, on the calling thread. */
static __always_inline int mark_event(__u32 type, const char* name) {
  const __u32 tgid = ft_cur_tgid(), tid = ft_cur_tid();
  if (!ft_is_traced(tgid)) return 0;
  if (!admit(tgid, false)) return 0;
  struct ft_mark* r = ft_reserve(sizeof(*r), FT_EV_MARK, bpf_ktime_get_ns(), tgid, tid);
  if (!r) return 0;
  r->type = type;
  r->pad = 0;
  __builtin_memset(r->name, 0, sizeof(r->name)); /* ring memory is not cleared */
  if (name) bpf_probe_read_user_str(r->name, sizeof(r->name), name);
  ft_submit(r);
  return 0;
}

SEC("usdt")
int BPF_USDT(ft_mark, const char* name) { return mark_event(FT_MARK_INSTANT, name); }

SEC("usdt")
int BPF_USDT(ft_phase_begin, const char* name) { return mark_event(FT_MARK_BEGIN, name); }

SEC("usdt")
int BPF_USDT(ft_phase_end) { return mark_event(FT_MARK_END, 0); }
