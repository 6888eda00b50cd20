// SPDX-License-Identifier: (BSD-3-Clause OR GPL-2.0-only)
/* The uprobe mode's state: its settings, its maps, the per-process quotas, and
 * reading a probed function's arguments.
 * A part of uprobe_ops.bpf.c, which includes it once: the parts are one BPF
 * object, so that they share its maps. */
#ifndef FABTRACE_UPROBE_STATE_BPF_H
#define FABTRACE_UPROBE_STATE_BPF_H

const volatile __u32 ft_self_tgid = 0; /* the collector: never counted */
/* Learning CQs and endpoints opened before the session (struct ft_up_layout):
 * the providers' layouts, each site's (its index in ft_layouts + 1; 0: none),
 * and each CQ read site's probed file offset (its distance to the format
 * functions). */
const volatile struct ft_up_layout ft_layouts[FT_UP_MAX_LAYOUTS] = {};
const volatile __u8 ft_site_layout[FT_UP_MAX_SITES] = {};
/* Each op site's arguments where its probe is not the function's entry. */
const volatile struct ft_up_args ft_site_args[FT_UP_MAX_SITES] = {};
const volatile __u64 ft_site_off[FT_UP_MAX_SITES] = {};
/* An AV insert site's address stride: the provider's address length (0: its
 * addresses are NUL-terminated strings, FI_ADDR_STR, each as long as it is).
 * A connect site's: the length of the endpoint's name its connect's socket
 * gives (0: the socket is not the endpoint's name; the helper tells). */
const volatile __u32 ft_site_addrlen[FT_UP_MAX_SITES] = {};
/* A connect site's address format (the helper's info's, enum fi_addr_format):
 * for an endpoint opened before the session, whose own info was not seen. */
const volatile __u32 ft_site_addr_format[FT_UP_MAX_SITES] = {};
/* The statistics rows one process may hold (struct ft_up_quota; 0: no bound). */
const volatile __u32 ft_up_rows_per_proc = 0;

#if defined(__TARGET_ARCH_arm64)
#define FT_ARG(regs, n) ((regs)->regs[(n)-1])
#define FT_SP(regs) ((regs)->sp)
#define FT_RET(regs) ((regs)->regs[0])
#else
#define FT_ARG1(regs) ((regs)->di)
#define FT_ARG2(regs) ((regs)->si)
#define FT_ARG3(regs) ((regs)->dx)
#define FT_ARG4(regs) ((regs)->cx)
#define FT_ARG5(regs) ((regs)->r8)
#define FT_ARG6(regs) ((regs)->r9)
#define FT_SP(regs) ((regs)->sp)
#define FT_RET(regs) ((regs)->ax)
#endif

/* One map of this program (the libbpf BTF-defined form, on one line each);
 * grown: its memory taken as entries come (BPF_F_NO_PREALLOC), for large or
 * rarely filled values. */
#define FT_UP_MAP_FLAGS(name, map_type, flags, max, key_type, value_type) \
  struct {                                                                \
    __uint(type, map_type);                                               \
    __uint(map_flags, flags);                                             \
    __uint(max_entries, max);                                             \
    __type(key, key_type);                                                \
    __type(value, value_type);                                            \
  } name SEC(".maps")
#define FT_UP_MAP(name, map_type, max, key_type, value_type) \
  FT_UP_MAP_FLAGS(name, map_type, 0, max, key_type, value_type)
#define FT_UP_MAP_GROWN(name, map_type, max, key_type, value_type) \
  FT_UP_MAP_FLAGS(name, map_type, BPF_F_NO_PREALLOC, max, key_type, value_type)

/* Ops waiting for their completion, by context (the oldest with each; the
 * later ones of a context reused while outstanding in up_dup) and, NULL
 * contexts, by order. */
FT_UP_MAP(up_pending, BPF_MAP_TYPE_LRU_HASH, FT_UP_MAX_PENDING, struct ft_up_key,
          struct ft_up_pending);
FT_UP_MAP(up_dup, BPF_MAP_TYPE_LRU_HASH, FT_UP_MAX_PENDING, struct ft_up_dup_key,
          struct ft_up_pending);
FT_UP_MAP(up_seq_pending, BPF_MAP_TYPE_LRU_HASH, FT_UP_MAX_PENDING, struct ft_up_seq_key,
          struct ft_up_pending);
FT_UP_MAP(up_fifo, BPF_MAP_TYPE_HASH, FT_UP_MAX_CQS, struct ft_up_fifo_key, struct ft_up_fifo);
/* The applications' CQs and endpoints. */
FT_UP_MAP(up_cqs, BPF_MAP_TYPE_HASH, FT_UP_MAX_CQS, struct ft_up_key, struct ft_up_cq);
FT_UP_MAP(up_eps, BPF_MAP_TYPE_HASH, FT_UP_MAX_CQS, struct ft_up_key, struct ft_up_ep);
/* Calls in flight, by thread: cq_open, CQ reads, ops. */
FT_UP_MAP(up_open, BPF_MAP_TYPE_HASH, 4096, __u32, struct ft_up_open);
FT_UP_MAP(up_poll, BPF_MAP_TYPE_HASH, 16384, __u32, struct ft_up_poll);
FT_UP_MAP(up_call, BPF_MAP_TYPE_HASH, 16384, __u32, struct ft_up_call);
/* The statistics (their memory taken as rows appear: a per-CPU row is large);
 * hits per attach site (its index in the collector's list); an all-zero row to
 * start a statistics row from (never written); what could not be kept. */
FT_UP_MAP_GROWN(up_stats, BPF_MAP_TYPE_PERCPU_HASH, FT_UP_MAX_STATS, struct ft_up_stat_key,
                struct ft_up_stats);
FT_UP_MAP(up_lost, BPF_MAP_TYPE_PERCPU_ARRAY, FT_UP_LOST_KINDS, __u32, __u64);
FT_UP_MAP(up_quota, BPF_MAP_TYPE_LRU_HASH, FT_UP_MAX_PROCS, __u32, struct ft_up_quota);
/* What the endpoints and peers are: AV entries, endpoint names (their memory
 * taken as they come: they are written at set-up only), the AV each endpoint
 * is bound to; AV inserts and getnames in flight (by thread). */
FT_UP_MAP_GROWN(up_av_addrs, BPF_MAP_TYPE_HASH, FT_UP_MAX_ADDRS, struct ft_up_av_key,
                struct ft_up_addr);
FT_UP_MAP_GROWN(up_ep_names, BPF_MAP_TYPE_HASH, FT_UP_MAX_ADDRS, struct ft_up_key,
                struct ft_up_addr);
FT_UP_MAP(up_ep_av, BPF_MAP_TYPE_HASH, FT_UP_MAX_CQS, struct ft_up_key, __u64);
FT_UP_MAP(up_name_call, BPF_MAP_TYPE_HASH, 4096, __u32, struct ft_up_name_call);
FT_UP_MAP(up_hits, BPF_MAP_TYPE_PERCPU_ARRAY, FT_UP_MAX_SITES, __u32, __u64);
/* The ops probed at the entry of the function they forward to (struct
 * ft_up_caller_key): their sites' cookies, filled before the probes start. */
FT_UP_MAP(up_callers, BPF_MAP_TYPE_HASH, FT_UP_MAX_SITES, struct ft_up_caller_key, __u64);
FT_UP_MAP(up_zero, BPF_MAP_TYPE_PERCPU_ARRAY, 1, __u32, struct ft_up_stats);

/* Set by the collector once every probe is attached (bpf_session.cpp): the
 * probes are attached one by one, and until the last one is, a CQ read probed
 * before the ops it completes would find none of them (or an op probed before
 * the read that completes it would wait forever). Armed, they all start at
 * once: only the ops in flight at that moment complete unseen. */
__u32 ft_up_armed = 0;

/* An entry probe's process, its site's hit counted; 0 for the collector itself
 * or before the probes are armed. */
static __always_inline __u32 hit_of(__u64 cookie) {
  if (!ft_up_armed) return 0;
  const __u32 tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);
  if (tgid == ft_self_tgid) return 0;
  const __u32 site = FT_UP_SITE(cookie);
  __u64* n = bpf_map_lookup_elem(&up_hits, &site);
  if (n) *n += 1;
  return tgid;
}
static __always_inline __u32 hit(struct pt_regs* regs) {
  return hit_of(bpf_get_attach_cookie(regs));
}

/* The value of `key` in `map`, created all-zero when absent (up_zero's row is
 * larger than any value of these maps). NULL when the map is full. */
static __always_inline void* lookup_or_zero(void* map, const void* key) {
  void* v = bpf_map_lookup_elem(map, key);
  if (v) return v;
  const __u32 z = 0;
  const void* zero = bpf_map_lookup_elem(&up_zero, &z);
  if (!zero) return 0;
  bpf_map_update_elem(map, key, zero, BPF_NOEXIST);
  return bpf_map_lookup_elem(map, key);
}

static __always_inline void lost(__u32 what) {
  __u64* n = bpf_map_lookup_elem(&up_lost, &what);
  if (n) *n += 1;
}

/* The row of (process, op, endpoint, peer); NULL, counted lost, when the map
 * is full or the process holds its quota of rows (counted for it too). */
static __always_inline struct ft_up_stats* stats_of(__u32 tgid, __u32 op, __u64 ep, __u64 peer,
                                                    __u64 bytes, __u32 posted) {
  struct ft_up_stat_key k = {.tgid = tgid,
                             .op = op,
                             .ep = ep,
                             .peer = peer,
                             .size_class = ft_up_size_class(bytes),
                             .posted = posted};
  struct ft_up_stats* s = bpf_map_lookup_elem(&up_stats, &k);
  if (s) return s;
  struct ft_up_quota* q = lookup_or_zero(&up_quota, &tgid);
  if (q && ft_up_rows_per_proc && q->rows >= ft_up_rows_per_proc) {
    __sync_fetch_and_add(&q->over, 1);
    lost(FT_UP_LOST_QUOTA);
    return 0;
  }
  s = lookup_or_zero(&up_stats, &k);
  if (!s) {
    lost(FT_UP_LOST_STATS);
    return 0;
  }
  if (q) __sync_fetch_and_add(&q->rows, 1);
  return s;
}

/* May process `tgid` have `key` in set-up map `map` (an address map when
 * `addr`)? Yes when it is there already, or when the process holds less than
 * its share (the new entry charged to it, even if the map then proves full).
 * No, counted for the process and as lost, when it holds its share: one
 * process cannot take the CQs, endpoints or addresses of all. */
static __always_inline bool may_add(void* map, const void* key, __u32 tgid, bool addr) {
  if (bpf_map_lookup_elem(map, key)) return true;
  struct ft_up_quota* q = lookup_or_zero(&up_quota, &tgid);
  if (!q) return true;
  __u64* held = addr ? &q->addrs : &q->objs;
  if (*held >= (addr ? FT_UP_ADDRS_PER_PROC : FT_UP_OBJS_PER_PROC)) {
    __sync_fetch_and_add(&q->objs_over, 1);
    lost(FT_UP_LOST_OBJ_QUOTA);
    return false;
  }
  __sync_fetch_and_add(held, 1);
  return true;
}

/* May process `tgid` put one more op in flight? Yes, charged to it, when it
 * holds less than its share; no, counted for it and as lost, when it holds it. */
static __always_inline bool inflight_take(__u32 tgid) {
  struct ft_up_quota* q = lookup_or_zero(&up_quota, &tgid);
  if (!q) return true;
  if (q->inflight >= FT_UP_INFLIGHT_PER_PROC) {
    __sync_fetch_and_add(&q->inflight_over, 1);
    lost(FT_UP_LOST_INFLIGHT_QUOTA);
    return false;
  }
  __sync_fetch_and_add(&q->inflight, 1);
  return true;
}

/* Deletes `key` from in-flight map `map` and, when it was there, gives its
 * place back to process `tgid`'s share. */
static __always_inline void inflight_delete(void* map, const void* key, __u32 tgid) {
  if (bpf_map_delete_elem(map, key) != 0) return;
  struct ft_up_quota* q = bpf_map_lookup_elem(&up_quota, &tgid);
  if (q && q->inflight) __sync_fetch_and_add(&q->inflight, (__u64)-1);
}

/* Takes (copies out of `map` and deletes) this thread's call in flight (struct
 * ft_up_call, ft_up_poll, ft_up_open: the entry's stack pointer first) when
 * this return is its own, not a nested call's: the return address was popped.
 * False when it is not. */
static __always_inline bool take_call(void* map, struct pt_regs* regs, void* out, __u32 size) {
  const __u32 tid = (__u32)bpf_get_current_pid_tgid();
  const __u64* sp = bpf_map_lookup_elem(map, &tid);
  if (!sp || FT_SP(regs) != *sp + 8) return false;
  if (bpf_probe_read_kernel(out, size, sp) != 0) return false;
  bpf_map_delete_elem(map, &tid);
  return true;
}

static __always_inline __u64 read_u64(__u64 addr) {
  __u64 v = 0;
  bpf_probe_read_user(&v, sizeof(v), (const void*)addr);
  return v;
}

#if !defined(__TARGET_ARCH_arm64)
/* Argument n >= 7 of a function at its first instruction: on the stack above the
 * return address. */
static __always_inline __u64 stack_arg(struct pt_regs* regs, int n) {
  return read_u64(FT_SP(regs) + 8 * (__u64)(n - 6));
}
#endif

static __always_inline __u64 arg_n(struct pt_regs* regs, int n) {
#if defined(__TARGET_ARCH_arm64)
  return FT_ARG(regs, n);
#else
  switch (n) {
    case 1:
      return FT_ARG1(regs);
    case 2:
      return FT_ARG2(regs);
    case 3:
      return FT_ARG3(regs);
    case 4:
      return FT_ARG4(regs);
    case 6:
      return FT_ARG6(regs);
    case 5:
      return FT_ARG5(regs);
    default:
      return n >= 7 && n <= 16 ? stack_arg(regs, n) : 0;
  }
#endif
}

/* Register number r (x86 encoding) of the probed thread. Read through
 * bpf_probe_read_kernel at the field's offset: the compiler folds a switch
 * of field loads into one load at a computed offset, which the verifier
 * refuses on the context pointer. */
#if !defined(__TARGET_ARCH_arm64)
static __always_inline __u64 reg_value(struct pt_regs* regs, __u32 r) {
  __u64 off;
  switch (r) {
    case 0:
      off = __builtin_offsetof(struct pt_regs, ax);
      break;
    case 1:
      off = __builtin_offsetof(struct pt_regs, cx);
      break;
    case 2:
      off = __builtin_offsetof(struct pt_regs, dx);
      break;
    case 3:
      off = __builtin_offsetof(struct pt_regs, bx);
      break;
    case 5:
      off = __builtin_offsetof(struct pt_regs, bp);
      break;
    case 6:
      off = __builtin_offsetof(struct pt_regs, si);
      break;
    case 7:
      off = __builtin_offsetof(struct pt_regs, di);
      break;
    case 8:
      off = __builtin_offsetof(struct pt_regs, r8);
      break;
    case 9:
      off = __builtin_offsetof(struct pt_regs, r9);
      break;
    case 10:
      off = __builtin_offsetof(struct pt_regs, r10);
      break;
    case 11:
      off = __builtin_offsetof(struct pt_regs, r11);
      break;
    case 12:
      off = __builtin_offsetof(struct pt_regs, r12);
      break;
    case 13:
      off = __builtin_offsetof(struct pt_regs, r13);
      break;
    case 14:
      off = __builtin_offsetof(struct pt_regs, r14);
      break;
    case 15:
      off = __builtin_offsetof(struct pt_regs, r15);
      break;
    default:
      return 0;
  }
  __u64 v = 0;
  bpf_probe_read_kernel(&v, sizeof(v), (const char*)regs + off);
  return v;
}
#endif

/* Argument n of the op probed at site `site`: where its probe is
 * (ft_site_args), or as at a function's first instruction. */
static __always_inline __u64 op_arg(struct pt_regs* regs, __u32 site, int n) {
#if !defined(__TARGET_ARCH_arm64)
  const volatile struct ft_up_args* a = &ft_site_args[site & (FT_UP_MAX_SITES - 1)];
  if (a->moved && n >= 1 && n <= FT_UP_ARGS) {
    const __u8 r = a->reg[n];
    if (r) return reg_value(regs, r - 1u);
    return read_u64(FT_SP(regs) + (__s64)a->off[n]);
  }
#endif
  return arg_n(regs, n);
}

/* The stack pointer an op's return will have (+ 8) at its entry probe. */
static __always_inline __u64 op_sp(struct pt_regs* regs, __u32 site) {
#if !defined(__TARGET_ARCH_arm64)
  return FT_SP(regs) + (__s64)ft_site_args[site & (FT_UP_MAX_SITES - 1)].ret_sp;
#else
  return FT_SP(regs);
#endif
}

#endif
