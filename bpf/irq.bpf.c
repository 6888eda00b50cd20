// SPDX-License-Identifier: (BSD-3-Clause OR GPL-2.0-only)
/* Interrupts: hard IRQs and softirqs handled on a CPU while a traced thread was
 * the one running there: time taken from that thread, by IRQ name (cxi's
 * completion and error vectors are told apart by the collector from the name). */
#include "fabtrace_common.bpf.h"

/* Set by the collector before load: softirqs shorter than this are summed in
 * softirq_sums (struct ft_softirq_key) instead of sent (0: every one is sent). */
const volatile __u64 ft_min_softirq_ns = 0;

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, FT_SOFTIRQ_SUMS);
  __type(key, struct ft_softirq_key);
  __type(value, struct ft_softirq_sum);
} softirq_sums SEC(".maps");

/* A short softirq of thread (tgid, tid) on this CPU, summed; false when its key
 * finds no room (it is then sent as any other). A key's CPU is this one, so
 * only this CPU adds to it: no two programs race on one sum. */
static __always_inline bool sum_short(__u32 tgid, __u32 tid, __u32 vec, __u64 ns) {
  struct ft_softirq_key k = {
      .tgid = tgid, .tid = tid, .cpu = bpf_get_smp_processor_id(), .vec = vec};
  struct ft_softirq_sum* s = bpf_map_lookup_elem(&softirq_sums, &k);
  if (s) {
    s->count += 1;
    s->ns += ns;
    return true;
  }
  struct ft_softirq_sum first = {.count = 1, .ns = ns};
  return bpf_map_update_elem(&softirq_sums, &k, &first, BPF_NOEXIST) == 0;
}

/* Per CPU: the handler running now (hard IRQs do not nest on Linux; a softirq may
 * be interrupted by a hard IRQ, hence two slots). */
struct irq_open {
  __u64 start;
  __u32 tgid, tid;
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 2); /* 0: hard IRQ, 1: softirq */
  __type(key, __u32);
  __type(value, struct irq_open);
} irq_open SEC(".maps");

static __always_inline void enter(__u32 slot) {
  const __u32 tgid = ft_cur_tgid();
  struct irq_open* o = bpf_map_lookup_elem(&irq_open, &slot);
  if (!o) return;
  if (!ft_is_traced(tgid)) {
    o->start = 0;
    return;
  }
  o->start = bpf_ktime_get_ns();
  o->tgid = tgid;
  o->tid = ft_cur_tid();
}

static __always_inline void leave(__u32 slot, __u32 irq, __s32 ret, struct irqaction* action) {
  struct irq_open* o = bpf_map_lookup_elem(&irq_open, &slot);
  if (!o || !o->start) return;
  const __u64 now = bpf_ktime_get_ns();
  const __u64 start = o->start;
  o->start = 0;
  struct ft_thread_state* st = ft_thread_get(o->tgid, o->tid, now);
  if (st) {
    __u64 n = st->irq_n;
    struct ft_irq_slot* s = &st->irq[n & (FT_IRQ_HIST - 1)];
    s->start = start;
    s->end = now;
    s->soft = (__u8)slot;
    st->irq_n = n + 1;
  }
  if (slot && now - start < ft_min_softirq_ns && sum_short(o->tgid, o->tid, irq, now - start))
    return;
  struct ft_irq* r = ft_reserve(sizeof(*r), slot ? FT_EV_SOFTIRQ : FT_EV_IRQ, now, o->tgid, o->tid);
  if (!r) return;
  r->start = start;
  r->irq = irq;
  r->ret = ret;
  r->name[0] = 0;
  if (action) bpf_probe_read_kernel_str(r->name, sizeof(r->name), BPF_CORE_READ(action, name));
  ft_submit(r);
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(ft_irq_entry, int irq, struct irqaction* action) {
  enter(0);
  return 0;
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(ft_irq_exit, int irq, struct irqaction* action, int ret) {
  leave(0, (__u32)irq, ret, action);
  return 0;
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(ft_softirq_entry, unsigned int vec) {
  enter(1);
  return 0;
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(ft_softirq_exit, unsigned int vec) {
  leave(1, vec, 0, 0);
  return 0;
}
