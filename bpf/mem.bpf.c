/* Memory: user page faults of traced threads. Every fault is counted in the
 * thread's state and in its fault buckets (for the breakdowns); the log gets one
 * summary record per burst (emitted when the thread leaves the CPU, exits, or
 * after FT_FAULTS_PER_SUMMARY faults), not one record per fault: touching a
 * gigabyte of fresh memory is a quarter of a million faults. */
#include "fabtrace_common.bpf.h"

SEC("tp_btf/page_fault_user")
int BPF_PROG(ft_page_fault_user, unsigned long address, struct pt_regs* regs,
             unsigned long error_code) {
  const __u32 tgid = ft_cur_tgid();
  if (!ft_is_traced(tgid)) return 0;
  const __u32 tid = ft_cur_tid();
  const __u64 now = bpf_ktime_get_ns();
  struct ft_thread_state* st = ft_thread_get(tid, now);
  if (!st) return 0;
  if (!st->flt_count) st->flt_first = now;
  st->flt_count++;
  st->flt_total++;
  st->flt_last = now;
  st->flt_addr = address;

  /* Buckets: a fault within FT_FAULT_BUCKET_NS of the current bucket's start
   * and FT_FAULT_BURST_GAP_NS of its latest fault joins it, else it opens the
   * next one; so a burst (touching fresh memory) starts a bucket of its own and
   * a window edge rarely falls inside one (the breakdown prorates those). */
  __u64 n = st->flt_n;
  if (n) {
    struct ft_fault_slot* cur = &st->flt[(n - 1) & (FT_FAULT_HIST - 1)];
    if (now - cur->start < FT_FAULT_BUCKET_NS && now - cur->last < FT_FAULT_BURST_GAP_NS) {
      cur->last = now;
      cur->count++;
      goto summary;
    }
  }
  struct ft_fault_slot* s = &st->flt[n & (FT_FAULT_HIST - 1)];
  s->start = now;
  s->last = now;
  s->count = 1;
  st->flt_n = n + 1;
summary:
  if (st->flt_count >= FT_FAULTS_PER_SUMMARY) ft_flush_faults(st, tgid, tid);
  return 0;
}
