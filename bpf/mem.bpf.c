// SPDX-License-Identifier: (BSD-3-Clause OR GPL-2.0-only)
/* Memory: user page faults of traced threads. Every fault is counted in the
 * thread's state and in its fault buckets (for the breakdowns); the log gets one
 * summary record per burst (emitted when the thread leaves the CPU, exits, or
 * after FT_FAULTS_PER_SUMMARY faults), not one record per fault: touching a
 * gigabyte of fresh memory is a quarter of a million faults. */
#include "fabtrace_common.bpf.h"

/* Whether this fault goes on with the bucket's burst rather than starting a new
 * one: the time the thread spent on its CPU since the bucket's latest fault is
 * below FT_FAULT_BURST_GAP_NS, or below FT_FAULT_BURST_HOLD_NS in a burst (at
 * least FT_FAULT_BURST_MIN faults, at a pace under FT_FAULT_BURST_PACE_NS).
 * Time it spent preempted does not count (the scheduler paused the burst, not
 * the program: on a loaded machine a thread touching fresh memory is preempted
 * every few ms); a sleep or a block in between (futex, I/O, a stop) ends the
 * burst, and so do more off-CPU intervals than FT_FAULT_OFF_SCAN. */
static __always_inline bool same_burst(const struct ft_thread_state* st,
                                       const struct ft_fault_slot* cur, __u64 now,
                                       __u64* on_cpu_since) {
  const __u32 since = (__u32)st->off_n - cur->off_seq; /* off-CPU intervals closed since */
  if (since > FT_FAULT_OFF_SCAN) return false;
  __u64 off = 0;
  for (int i = 0; i < FT_FAULT_OFF_SCAN; i++) {
    if ((__u32)i >= since) break;
    const struct ft_off_slot* o = &st->off[(st->off_n - 1 - i) & (FT_OFF_HIST - 1)];
    if (o->kind != FT_OFF_PREEMPTED) return false;
    const __u64 from = o->start > cur->last ? o->start : cur->last;
    if (o->end > from) off += o->end - from;
  }
  const __u64 gap = now - cur->last;
  const __u64 on_cpu = gap > off ? gap - off : 0;
  *on_cpu_since = on_cpu;
  if (on_cpu < FT_FAULT_BURST_GAP_NS) return true;
  return cur->count >= FT_FAULT_BURST_MIN && st->flt_pace < FT_FAULT_BURST_PACE_NS &&
         on_cpu < FT_FAULT_BURST_HOLD_NS;
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(ft_page_fault_user, unsigned long address, struct pt_regs* regs,
             unsigned long error_code) {
  const __u32 tgid = ft_cur_tgid();
  if (!ft_is_traced(tgid)) return 0;
  const __u32 tid = ft_cur_tid();
  const __u64 now = bpf_ktime_get_ns();
  struct ft_thread_state* st = ft_thread_get(tgid, tid, now);
  if (!st) return 0;
  if (!st->flt_count) st->flt_first = now;
  st->flt_count++;
  st->flt_total++;
  st->flt_last = now;
  st->flt_addr = address;

  /* Buckets: a fault joins the current bucket unless the bucket is full (count
   * or time) or the burst ended (see same_burst); so a burst (touching fresh memory) starts a
   * bucket of its own and a window edge rarely falls inside one (the breakdown prorates those). */
  __u64 n = st->flt_n;
  if (n) {
    struct ft_fault_slot* cur = &st->flt[(n - 1) & (FT_FAULT_HIST - 1)];
    __u64 on_cpu = 0;
    if (cur->count < FT_FAULT_BUCKET_MAX && now - cur->start < FT_FAULT_BUCKET_NS &&
        same_burst(st, cur, now, &on_cpu)) {
      cur->last = now;
      cur->on_cpu += on_cpu;
      st->flt_pace = st->flt_pace - st->flt_pace / 8 + on_cpu / 8;
      cur->count++;
      cur->off_seq = (__u32)st->off_n;
      goto summary;
    }
  }
  struct ft_fault_slot* s = &st->flt[n & (FT_FAULT_HIST - 1)];
  s->start = now;
  s->last = now;
  s->on_cpu = 0;
  s->count = 1;
  s->off_seq = (__u32)st->off_n;
  st->flt_n = n + 1;
  st->flt_pace = FT_FAULT_BURST_GAP_NS; /* not a burst until its faults say so */
summary:
  if (st->flt_count >= FT_FAULTS_PER_SUMMARY) ft_flush_faults(st, tgid, tid);
  return 0;
}
