// SPDX-License-Identifier: (BSD-3-Clause OR GPL-2.0-only)
/* Scheduler: every off-CPU interval of a traced thread, with how it began
 * (preempted while runnable, asleep and in which syscall, in uninterruptible
 * sleep, stopped), who took the CPU, when it was woken, who gave the CPU back and
 * on which CPU it came back. The same intervals go into the thread's history for
 * the stall/slow-op breakdowns (probes.bpf.c). */
#include "fabtrace_common.bpf.h"

/* Task states (include/linux/sched.h); stable ABI of the sched_switch tracepoint. */
#define FT_TASK_RUNNING 0x0000
#define FT_TASK_INTERRUPTIBLE 0x0001
#define FT_TASK_UNINTERRUPTIBLE 0x0002
#define FT_TASK_STOPPED 0x0004
#define FT_TASK_TRACED 0x0008

const volatile __u64 ft_min_offcpu_ns = 0; /* shorter intervals go to the history only */

/* Logs the switch in this CPU's run log; returns the time of the CPU's previous
 * switch (when `prev` got the CPU). */
static __always_inline __u64 log_switch(struct ft_run_log* rl, struct task_struct* prev,
                                        __u64 now) {
  if (!rl) return 0;
  const __u64 since = rl->last_switch;
  if (since) {
    struct ft_run_entry* e = &rl->e[rl->n & (FT_RUN_LOG - 1)];
    e->start = since;
    e->end = now;
    e->pid = BPF_CORE_READ(prev, pid);
    bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), prev->comm);
    rl->n++;
  }
  rl->last_switch = now;
  return since;
}

static __always_inline __s32 blocked_syscall(struct task_struct* t) {
  struct pt_regs* regs = (struct pt_regs*)bpf_task_pt_regs(t);
  if (!regs) return -1;
#if defined(__TARGET_ARCH_x86)
  return (__s32)BPF_CORE_READ(regs, orig_ax);
#elif defined(__TARGET_ARCH_arm64)
  return (__s32)BPF_CORE_READ(regs, syscallno);
#else
  return -1;
#endif
}

/* File types (include/uapi/linux/stat.h). */
#define FT_S_IFMT 0170000
#define FT_S_IFSOCK 0140000
#define FT_S_IFREG 0100000
#define FT_S_IFCHR 0020000
#define FT_S_IFIFO 0010000

/* What a thread asleep in syscall `sc` waited on, where the syscall's first
 * argument is the file descriptor it blocks on (read, write, their vector and
 * positioned forms, the socket calls): the type of that file in the task's
 * file table. A few reads of kernel memory, at a sleeping switch-out only. */
static __always_inline __u32 wait_on(struct task_struct* t, __s32 sc) {
#if defined(__TARGET_ARCH_x86)
  switch (sc) {
    case 0:   /* read */
    case 1:   /* write */
    case 17:  /* pread64 */
    case 18:  /* pwrite64 */
    case 19:  /* readv */
    case 20:  /* writev */
    case 42:  /* connect */
    case 43:  /* accept */
    case 44:  /* sendto */
    case 45:  /* recvfrom */
    case 46:  /* sendmsg */
    case 47:  /* recvmsg */
    case 288: /* accept4 */
    case 295: /* preadv */
    case 296: /* pwritev */
    case 299: /* recvmmsg */
    case 307: /* sendmmsg */
      break;
    default:
      return FT_ON_NONE;
  }
  struct pt_regs* regs = (struct pt_regs*)bpf_task_pt_regs(t);
  if (!regs) return FT_ON_NONE;
  const __u64 fd = BPF_CORE_READ(regs, di);
  struct fdtable* fdt = BPF_CORE_READ(t, files, fdt);
  if (!fdt || fd >= BPF_CORE_READ(fdt, max_fds)) return FT_ON_NONE;
  struct file** fds = BPF_CORE_READ(fdt, fd);
  struct file* f = 0;
  if (!fds || bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]) != 0 || !f) return FT_ON_NONE;
  switch (BPF_CORE_READ(f, f_inode, i_mode) & FT_S_IFMT) {
    case FT_S_IFIFO:
      return FT_ON_PIPE;
    case FT_S_IFSOCK:
      return FT_ON_SOCKET;
    case FT_S_IFREG:
      return FT_ON_FILE;
    case FT_S_IFCHR:
      return FT_ON_CHAR;
    default:
      return FT_ON_OTHER;
  }
#else
  return FT_ON_NONE;
#endif
}

static __always_inline __u32 off_kind_of(bool preempt, unsigned int state) {
  if (preempt || state == FT_TASK_RUNNING) return FT_OFF_PREEMPTED;
  if (state & (FT_TASK_STOPPED | FT_TASK_TRACED)) return FT_OFF_STOPPED;
  if (state & FT_TASK_UNINTERRUPTIBLE) return FT_OFF_DISK;
  if (state & FT_TASK_INTERRUPTIBLE) return FT_OFF_SLEEP;
  return FT_OFF_OTHER;
}

static __always_inline void switch_out(struct task_struct* prev, struct task_struct* next,
                                       bool preempt, unsigned int state, __u64 now,
                                       struct ft_run_log* rl, __u64 prev_since) {
  const __u32 tgid = BPF_CORE_READ(prev, tgid);
  if (!ft_is_traced(tgid)) return;
  const __u32 tid = BPF_CORE_READ(prev, pid);
  struct ft_thread_state* st = ft_thread_get(tgid, tid, now);
  if (!st) return;
  if (st->off_start) {
    /* Leaving a CPU it was never seen getting: it got it at this CPU's previous
     * switch (see ft_repair_unseen_in). */
    ft_count(FT_CNT_IN_UNSEEN);
    ft_close_off(st, tgid, tid, prev_since > st->off_start ? prev_since : st->off_start,
                 bpf_get_smp_processor_id(), 0, 0, rl, ft_min_offcpu_ns);
  }
  st->off_start = now;
  st->wake = 0;
  st->off_kind = off_kind_of(preempt, state);
  st->off_state = state;
  st->off_syscall = st->off_kind == FT_OFF_PREEMPTED ? -1 : blocked_syscall(prev);
  st->off_wait_on = st->off_kind == FT_OFF_SLEEP ? wait_on(prev, st->off_syscall) : FT_ON_NONE;
  st->off_cpu = bpf_get_smp_processor_id();
  st->out_pid = BPF_CORE_READ(next, pid);
  bpf_probe_read_kernel_str(st->out_comm, sizeof(st->out_comm), next->comm);
  ft_flush_faults(st, tgid, tid);
}

static __always_inline void switch_in(struct task_struct* prev, struct task_struct* next, __u64 now,
                                      struct ft_run_log* rl) {
  const __u32 tgid = BPF_CORE_READ(next, tgid);
  if (!ft_is_traced(tgid)) return;
  const __u32 tid = BPF_CORE_READ(next, pid);
  struct ft_thread_state* st = ft_thread_get(tgid, tid, now);
  if (!st) return;
  const __u32 cpu = bpf_get_smp_processor_id();
  const bool new_thread = st->first_seen == now;
  if (!new_thread && st->last_cpu != cpu) st->migrations++;
  st->last_cpu = cpu;
  if (!st->off_start) {
    if (!new_thread) {
      ft_count(FT_CNT_IN_WITHOUT_OUT);
      return;
    }
    /* First seen coming back: it was off CPU since it became traced at the
     * latest, for a reason nobody saw. The history says so ("other"), so that a
     * breakdown does not count that time as on CPU. */
    struct ft_proc* p = ft_proc_of(tgid);
    if (!p || !p->since || p->since >= now) return;
    st->off_start = p->since;
    st->wake = 0;
    st->off_kind = FT_OFF_OTHER;
    st->off_syscall = -1;
    st->off_wait_on = FT_ON_NONE;
    st->off_state = 0;
    st->off_cpu = cpu;
    st->out_pid = 0;
    st->out_comm[0] = 0;
  }
  ft_close_off(st, tgid, tid, now, cpu, BPF_CORE_READ(prev, pid), prev->comm, rl, ft_min_offcpu_ns);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(ft_sched_switch, bool preempt, struct task_struct* prev, struct task_struct* next,
             unsigned int prev_state) {
  const __u64 now = bpf_ktime_get_ns();
  struct ft_run_log* rl = ft_run_log_here();
  const __u64 prev_since = log_switch(rl, prev, now);
  switch_out(prev, next, preempt, prev_state, now, rl, prev_since);
  switch_in(prev, next, now, rl);
  return 0;
}

static __always_inline void woken(struct task_struct* p) {
  if (!ft_is_traced(BPF_CORE_READ(p, tgid))) return;
  struct ft_thread_state* st = ft_thread(BPF_CORE_READ(p, pid));
  if (st && st->off_start && !st->wake) st->wake = bpf_ktime_get_ns();
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(ft_sched_wakeup, struct task_struct* p) {
  woken(p);
  return 0;
}

/* Processes that began (a fork that is not a thread), exec'ed, mapped a file
 * executable or ended since the collector last looked: its /proc scan looks at
 * these only, instead of listing /proc and reading every process's stat twice a
 * second, and inspects again those that map neither library when they load one
 * (proc_watch.h).
 * Taken and deleted by the collector; one that does not fit is counted, and the
 * collector then checks every process. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, FT_MAX_PROCS);
  __type(key, __u32);
  __type(value, __u8);
} proc_changes SEC(".maps");

__u64 proc_changes_lost = 0;

static __always_inline void proc_changed(__u32 tgid) {
  const __u8 one = 1;
  if (bpf_map_update_elem(&proc_changes, &tgid, &one, BPF_ANY) != 0)
    __sync_fetch_and_add(&proc_changes_lost, 1);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(ft_sched_fork, struct task_struct* parent, struct task_struct* child) {
  const __u32 pid = BPF_CORE_READ(child, pid), tgid = BPF_CORE_READ(child, tgid);
  // A thread is not a process, but for the collector's own: it leaves its own
  // threads out of the summaries, and looks for them when told.
  if (pid == tgid || tgid == ft_self_tgid) proc_changed(tgid);
  return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(ft_sched_exec, struct task_struct* p) {
  proc_changed(BPF_CORE_READ(p, tgid));
  return 0;
}

/* A file mapped executable: a library loaded, by the loader after an exec or
 * by dlopen (MPI loads libfabric long after its exec). The scan inspects the
 * process again instead of rechecking every process that maps neither library.
 * At the mmap's return: the mapping is in the process's maps by then. */
#define FT_PROT_EXEC 0x4
SEC("tracepoint/syscalls/sys_exit_mmap")
int ft_mmap_exit(struct trace_event_raw_sys_exit* ctx) {
  if (ctx->ret < 0 && ctx->ret >= -4095) return 0;  // failed
  struct pt_regs* regs = (struct pt_regs*)bpf_task_pt_regs(bpf_get_current_task_btf());
  if (!regs) return 0;
  const unsigned long prot = PT_REGS_PARM3_CORE_SYSCALL(regs);
  const int fd = (int)PT_REGS_PARM5_CORE_SYSCALL(regs);
  if ((prot & FT_PROT_EXEC) && fd >= 0) proc_changed(bpf_get_current_pid_tgid() >> 32);
  return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(ft_sched_exit, struct task_struct* p, bool group_dead) {
  const __u32 tgid = BPF_CORE_READ(p, tgid);
  if (group_dead) proc_changed(tgid);  // the scan forgets it
  if (!ft_is_traced(tgid)) return 0;
  const __u32 tid = BPF_CORE_READ(p, pid);
  const __u64 now = bpf_ktime_get_ns();
  struct ft_thread_state* st = ft_thread(tid);
  __u64 faults = 0;
  if (st) {
    ft_flush_faults(st, tgid, tid);
    faults = st->flt_total;
  }
  struct ft_exit* r = ft_reserve(sizeof(*r), FT_EV_EXIT, now, tgid, tid);
  if (r) {
    bpf_probe_read_kernel_str(r->comm, sizeof(r->comm), p->comm);
    r->faults_total = faults;
    ft_submit(r);
  }
  ft_thread_exit(tgid, tid);
  if (group_dead) bpf_map_delete_elem(&traced, &tgid);
  return 0;
}
