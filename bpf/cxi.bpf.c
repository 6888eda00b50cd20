// SPDX-License-Identifier: (BSD-3-Clause OR GPL-2.0-only)
/* The cxi driver (Cassini NICs): the driver's own tracepoint cass:cass_err, and
 * its work items (error handler, page-request and pause-timeout workers) from
 * the workqueue tracepoints, filtered to the driver's work functions, whose
 * addresses the collector resolves through /proc/kallsyms when the module is
 * loaded. The cxi data path itself never enters the kernel; these are the
 * driver's answers to "did the NIC report trouble at that moment".
 *
 * cass_err is a module tracepoint: attached as a raw tracepoint (arguments by
 * position, as in the driver's TP_PROTO: csr_flag, bit, seconds, nanoseconds,
 * ...), so it needs no module BTF. */
#include "fabtrace_common.bpf.h"

/* Work functions to record: address -> class (the collector's classification). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 256);
  __type(key, __u64);
  __type(value, __u32);
} cxi_work_funcs SEC(".maps");

/* Per CPU: the start of the recorded work item running now. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} work_start SEC(".maps");

SEC("raw_tp/cass_err")
int ft_cass_err(struct bpf_raw_tracepoint_args* ctx) {
  struct ft_cxi_err* r = ft_reserve(sizeof(*r), FT_EV_CXI_ERR, bpf_ktime_get_ns(), 0, 0);
  if (!r) return 0;
  r->csr_flag = (__u32)ctx->args[0];
  r->bit = (__u32)ctx->args[1];
  r->sec = ctx->args[2];
  r->nsec = ctx->args[3];
  ft_submit(r);
  return 0;
}

SEC("tp_btf/workqueue_execute_start")
int BPF_PROG(ft_work_start, struct work_struct* work) {
  __u64 func = (__u64)BPF_CORE_READ(work, func);
  if (!bpf_map_lookup_elem(&cxi_work_funcs, &func)) return 0;
  __u32 zero = 0;
  __u64* s = bpf_map_lookup_elem(&work_start, &zero);
  if (s) *s = bpf_ktime_get_ns();
  return 0;
}

/* A raw tracepoint: BTF-typed programs may not read a function-pointer argument,
 * and the work item may be freed by now, so the function comes from args[1]. */
SEC("raw_tp/workqueue_execute_end")
int ft_work_end(struct bpf_raw_tracepoint_args* ctx) {
  __u64 func = ctx->args[1];
  if (!bpf_map_lookup_elem(&cxi_work_funcs, &func)) return 0;
  __u32 zero = 0;
  __u64* s = bpf_map_lookup_elem(&work_start, &zero);
  if (!s || !*s) return 0;
  const __u64 start = *s;
  *s = 0;
  struct ft_work* r = ft_reserve(sizeof(*r), FT_EV_WORK, bpf_ktime_get_ns(), 0, 0);
  if (!r) return 0;
  r->start = start;
  r->func = func;
  ft_submit(r);
  return 0;
}
