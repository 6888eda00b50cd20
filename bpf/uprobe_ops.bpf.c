// SPDX-License-Identifier: (BSD-3-Clause OR GPL-2.0-only)
/* The uprobe-assisted mode (`fabtrace record --uprobes`): op/completion pairing
 * in the kernel for processes that run without the preload.
 *
 * - Entry + return probes on the provider's data-path ops (ep->msg->send, ...,
 *   the injects too): an op the provider accepted (returned 0) that gets a
 *   completion is remembered by (process, context pointer): when, how many
 *   bytes, which op (a context reused while its earlier op is outstanding
 *   queues behind it: struct ft_up_pending). An op with a NULL context is
 *   queued on its endpoint side's CQ instead (struct ft_up_fifo_key). An op
 *   that by design gets none (an inject, FI_SELECTIVE_COMPLETION without
 *   FI_COMPLETION, ...: op_completes) is counted untimed once accepted;
 *   refusals are counted apart (-FI_EAGAIN and other errors).
 * - An entry + return probe on the provider's cq_open learns the application's
 *   CQs and their entry format (a utility provider's inner CQs are opened by
 *   another provider's cq_open, which is not probed, so they are never known);
 *   an entry probe on the endpoint's bind learns which CQ each side uses.
 * - An entry + return probe on the CQ read (cq->ops->read / readfrom): the
 *   outermost read of a known CQ in a thread is an application poll (utility
 *   providers call their readfrom, and their core's read, from inside it),
 *   counted per CQ with the gap since the CQ's previous poll (struct
 *   ft_up_cq); at its return the returned entries are walked, each entry's
 *   first field (op_context) looked up and paired with its op.
 * - Per link, as the preload reports: each op's endpoint (its first argument)
 *   and peer (its fi_addr_t) key its row. What they are comes from an entry +
 *   return probe on the AV's insert (fi_addr_t -> the address inserted) and on
 *   the endpoint's getname (endpoint -> its own address); the endpoint's bind
 *   to an AV says which AV its fi_addr_t values index. A connected (MSG)
 *   endpoint has no AV: its one peer comes from the endpoint open's info and
 *   the connect's address (entry + return probes on both). The collector
 *   formats the addresses.
 * Everything is folded into per-CPU statistics per (process, op kind,
 * endpoint, peer), with a log2 latency histogram; polls are counted, never
 * recorded one by one. The collector reads the maps when it stops (nothing
 * goes through the ring buffer).
 *
 * Attached per library file with no pid filter (every process mapping it, from
 * its start), by file offset: the library is stripped (userspace/record/
 * optable_probe.* finds the offsets). User memory is read only with
 * bpf_probe_read_user; nothing is written to the process. */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "uprobe_ops.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u32 ft_self_tgid = 0; /* the collector: never counted */
/* Learning CQs and endpoints opened before the session (struct ft_up_layout):
 * the providers' layouts, each site's (its index in ft_layouts + 1; 0: none),
 * and each CQ read site's probed file offset (its distance to the format
 * functions). */
const volatile struct ft_up_layout ft_layouts[FT_UP_MAX_LAYOUTS] = {};
const volatile __u8 ft_site_layout[FT_UP_MAX_SITES] = {};
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
FT_UP_MAP(up_zero, BPF_MAP_TYPE_PERCPU_ARRAY, 1, __u32, struct ft_up_stats);

/* Set by the collector once every probe is attached (bpf_session.cpp): the
 * probes are attached one by one, and until the last one is, a CQ read probed
 * before the ops it completes would find none of them (or an op probed before
 * the read that completes it would wait forever). Armed, they all start at
 * once: only the ops in flight at that moment complete unseen. */
__u32 ft_up_armed = 0;

/* An entry probe's process, its site's hit counted; 0 for the collector itself
 * or before the probes are armed. */
static __always_inline __u32 hit(struct pt_regs* regs) {
  if (!ft_up_armed) return 0;
  const __u32 tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);
  if (tgid == ft_self_tgid) return 0;
  const __u32 site = FT_UP_SITE(bpf_get_attach_cookie(regs));
  __u64* n = bpf_map_lookup_elem(&up_hits, &site);
  if (n) *n += 1;
  return tgid;
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

/* Sum of up to FT_UP_MAX_IOV iovec lengths. */
static __always_inline __u64 iov_bytes(__u64 iov, __u64 count) {
  __u64 total = 0;
#pragma unroll
  for (int i = 0; i < FT_UP_MAX_IOV; ++i) {
    if ((__u64)i < count) total += read_u64(iov + 16 * (__u64)i + 8);
  }
  return total;
}

/* Where a message struct (struct fi_msg, fi_msg_tagged, fi_msg_rma,
 * fi_msg_atomic) keeps its context, by enum ft_up_ctx; 0 for another place. */
static __always_inline __u64 msg_ctx_off(__u32 ctxloc) {
  switch (ctxloc) {
    case FT_UP_CTX_MSG:
      return FT_UP_MSG_CTX_OFF;
    case FT_UP_CTX_TMSG:
      return FT_UP_TMSG_CTX_OFF;
    case FT_UP_CTX_RMSG:
      return FT_UP_RMSG_CTX_OFF;
    case FT_UP_CTX_AMSG:
    case FT_UP_CTX_AMSG_FLAGS6:
    case FT_UP_CTX_AMSG_FLAGS9:
      return FT_UP_AMSG_CTX_OFF;
    default:
      return 0;
  }
}

/* The op's peer, from where its fi_addr_t is (FT_UP_PEER_*); 0 for none. */
static __always_inline __u64 op_peer(struct pt_regs* regs, __u32 peerloc) {
  if (peerloc == FT_UP_PEER_MSG) return read_u64(arg_n(regs, 2) + FT_UP_MSG_ADDR_OFF);
  if (peerloc >= 2 && peerloc <= 16) return arg_n(regs, (int)peerloc);
  return 0;
}

/* The bytes an op moves, from where its length is (enum ft_up_len): an atomic's
 * elements times its datatype's size (an unknown datatype counts 0 bytes). */
static __always_inline __u64 op_bytes(struct pt_regs* regs, __u32 lenloc) {
  const __u32 kind = FT_UP_LEN_KIND(lenloc);
  __u64 n = 0;
  switch (kind) {
    case FT_UP_LEN_ARG3:
    case FT_UP_LEN_ACOUNT:
      n = arg_n(regs, 3);
      break;
    case FT_UP_LEN_IOV:
    case FT_UP_LEN_AIOC:
      n = iov_bytes(arg_n(regs, 2), arg_n(regs, 4));
      break;
    case FT_UP_LEN_MSG:
    case FT_UP_LEN_AMSG: {
      /* fi_msg, fi_msg_tagged, fi_msg_rma, fi_msg_atomic: the same two fields */
      const __u64 msg = arg_n(regs, 2);
      n = iov_bytes(read_u64(msg + FT_UP_MSG_IOV_OFF), read_u64(msg + FT_UP_MSG_COUNT_OFF));
      break;
    }
    default:
      return 0;
  }
  if (kind < FT_UP_LEN_ACOUNT) return n;
  __u32 dt = 0;
  if (kind == FT_UP_LEN_AMSG)
    bpf_probe_read_user(&dt, sizeof(dt), (const void*)(arg_n(regs, 2) + FT_UP_AMSG_DT_OFF));
  else
    dt = (__u32)arg_n(regs, (int)FT_UP_LEN_DT_ARG(lenloc));
  return n * ft_up_datatype_size(dt);
}

/* Whether an op will get a completion, as the preload decides it
 * (preload/issue.h): an inject never; an op with a flags argument (the *msg
 * calls) not when the provider keeps its context (FT_UP_KEEP_CONTEXT_FLAGS),
 * not with FI_INJECT unless FI_COMPLETION, not without FI_COMPLETION on a side
 * bound with FI_SELECTIVE_COMPLETION; any other op not without FI_COMPLETION
 * in the endpoint's op flags there, nor with FI_MULTI_RECV in them. An op of
 * an endpoint whose open and binds were not seen (opened before the session)
 * is taken to complete; one of a side seen bound to no CQ does not. */
static __always_inline bool op_completes(__u32 tgid, __u64 ep_ptr, __u32 cls, __u32 ctxloc,
                                         struct pt_regs* regs) {
  if (ctxloc == FT_UP_CTX_NONE) return false;
  const __u32 side = cls & 1;
  struct ft_up_key ek = {.tgid = tgid, .ptr = ep_ptr};
  const struct ft_up_ep* ep = bpf_map_lookup_elem(&up_eps, &ek);
  const bool bound = ep && (ep->bound & (1u << side));
  const bool known = ep && (bound || ep->opened);
  const bool selective = ep && (ep->selective & (1u << side));
  if (msg_ctx_off(ctxloc)) {
    /* (ep, msg, flags), but for two atomic msg ops (FT_UP_CTX_AMSG_FLAGS*). */
    const __u64 flags = arg_n(regs, ctxloc == FT_UP_CTX_AMSG_FLAGS6   ? 6
                                    : ctxloc == FT_UP_CTX_AMSG_FLAGS9 ? 9
                                                                      : 3);
    if (flags & FT_UP_KEEP_CONTEXT_FLAGS) return false;
    if (!known) return true;
    if (!bound) return false;
    if (flags & FT_UP_FI_INJECT) return (flags & FT_UP_FI_COMPLETION) != 0;
    return !selective || (flags & FT_UP_FI_COMPLETION);
  }
  if (!known) return true;
  const __u64 of = ep->op_flags[side];
  return bound && (!selective || (of & FT_UP_FI_COMPLETION)) && !(of & FT_UP_FI_MULTI_RECV);
}

/* Parks an op that waits for its completion under its context: the oldest
 * op with a context is up_pending's, a later one (its context reused while
 * the earlier op is outstanding) queues behind it in up_dup. Returns its slot
 * (struct ft_up_call). */
static __always_inline __u32 park(__u32 tgid, const struct ft_up_call* c) {
  struct ft_up_key k = {.tgid = tgid, .ptr = c->ctx};
  struct ft_up_pending p = {.start = c->start,
                            .bytes = c->bytes,
                            .ep = c->ep,
                            .peer = c->peer,
                            .op = c->op,
                            .site = c->site,
                            .rx = c->cls == FT_UP_RX};
  struct ft_up_pending* head = bpf_map_lookup_elem(&up_pending, &k);
  /* Over its process's share the op is not parked, so not timed: its
   * completion finds nothing (unmatched), or, queued behind an older op with
   * its context, a hole that ends that queue; never another op. */
  const bool room = inflight_take(tgid);
  if (!head) {
    if (room) bpf_map_update_elem(&up_pending, &k, &p, BPF_ANY);
    return 0;
  }
  /* Not atomic: two threads issuing ops with one context at once are not
   * told apart anyway. */
  const __u32 seq = head->dup_tail;
  head->dup_tail = seq + 1;
  if (!room) return 0;
  struct ft_up_dup_key dk = {.tgid = tgid, .seq = seq, .ptr = c->ctx};
  bpf_map_update_elem(&up_dup, &dk, &p, BPF_ANY);
  return seq + 1;
}

/* The op with context `k` whose completion came (or that was refused) leaves:
 * the next op queued with that context takes its place, or the context is
 * free. A hole there (a queued op refused while an older one waited, which
 * needs two threads issuing with one context) ends the queue: the ops behind
 * it stay pending. */
static __always_inline void next_pending(const struct ft_up_key* k, struct ft_up_pending* head) {
  if (head->dup_head < head->dup_tail) {
    struct ft_up_dup_key dk = {.tgid = k->tgid, .seq = head->dup_head, .ptr = k->ptr};
    const struct ft_up_pending* d = bpf_map_lookup_elem(&up_dup, &dk);
    if (d) {
      const __u32 h = head->dup_head + 1, t = head->dup_tail;
      *head = *d;
      head->dup_head = h;
      head->dup_tail = t;
      inflight_delete(&up_dup, &dk, k->tgid);
      return;
    }
  }
  inflight_delete(&up_pending, k, k->tgid);
}

/* A refused op's record, taken back from where park() put it. */
static __always_inline void unpark(__u32 tgid, const struct ft_up_call* c) {
  struct ft_up_key k = {.tgid = tgid, .ptr = c->ctx};
  struct ft_up_pending* head = bpf_map_lookup_elem(&up_pending, &k);
  if (!head) return;
  if (!c->slot) {
    if (head->start == c->start && head->op == c->op) next_pending(&k, head);
    return;
  }
  struct ft_up_dup_key dk = {.tgid = tgid, .seq = c->slot - 1, .ptr = c->ctx};
  const struct ft_up_pending* d = bpf_map_lookup_elem(&up_dup, &dk);
  if (!d || d->start != c->start) return;
  inflight_delete(&up_dup, &dk, tgid);
  if (head->dup_tail == c->slot) head->dup_tail -= 1; /* the newest: no hole */
}

SEC("uprobe")
int ft_up_op(struct pt_regs* regs) {
  const __u64 cookie = bpf_get_attach_cookie(regs);
  const __u32 tgid = hit(regs), tid = (__u32)bpf_get_current_pid_tgid();
  if (!tgid) return 0;
  /* An op called from inside the application's (sockets' send calls its
   * sendmsg directly, a utility provider's op its core's) is not an op of its
   * own: it runs deeper in the stack than the recorded call. One at the same
   * depth or above means that call's return was never seen: replaced. So does
   * one older than a data-path op ever runs, preempted or not (ops do not
   * block; FT_UP_NESTED_MAX_NS): return probes
   * are attached before entry probes (bpf_session.cpp), so a return is missed
   * only when a thread leaves a call by other ways (killed, a longjmp), and
   * such a record would otherwise hide every deeper op of the thread. */
  const struct ft_up_call* outer = bpf_map_lookup_elem(&up_call, &tid);
  if (outer && FT_SP(regs) < outer->sp && bpf_ktime_get_ns() - outer->start < FT_UP_NESTED_MAX_NS)
    return 0;
  const __u32 op = FT_UP_OP(cookie);
  struct ft_up_call c = {};
  c.ep = arg_n(regs, 1);
  c.peer = op_peer(regs, FT_UP_PEERLOC(cookie));
  c.bytes = op_bytes(regs, FT_UP_LENLOC(cookie));
  c.cls = FT_UP_CLASS(cookie) ? FT_UP_RX : FT_UP_TX;
  struct ft_up_stats* s = stats_of(tgid, op, c.ep, c.peer, c.bytes, c.cls == FT_UP_RX);
  if (s) s->calls += 1;
  const __u32 ctxloc = FT_UP_CTXLOC(cookie);
  c.untimed = !op_completes(tgid, c.ep, c.cls, ctxloc, regs);
  c.sp = FT_SP(regs);
  c.op = op;
  c.site = FT_UP_SITE(cookie);
  c.start = bpf_ktime_get_ns();
  if (c.untimed) {
    /* No completion will come: only its return is waited for (accepted or
     * refused, and the calls it makes inside are not ops). */
    bpf_map_update_elem(&up_call, &tid, &c, BPF_ANY);
    return 0;
  }

  if (FT_UP_CTX_IS_STACK(ctxloc)) c.ctx = arg_n(regs, FT_UP_CTX_STACK_ARG(ctxloc));
  switch (ctxloc) {
    case FT_UP_CTX_ARG6:
      c.ctx = arg_n(regs, 6);
      break;
    case FT_UP_CTX_ARG7:
      c.ctx = arg_n(regs, 7);
      break;
    case FT_UP_CTX_ARG8:
      c.ctx = arg_n(regs, 8);
      break;
    default: {
      /* A message (argument 2) keeps it in its ->context field. */
      const __u64 off = msg_ctx_off(ctxloc);
      if (off) c.ctx = read_u64(arg_n(regs, 2) + off);
      break;
    }
  }
  /* Known before the provider can complete it (another thread may poll the
   * completion before this call returns); taken back if it is refused (an op
   * issued again after -FI_EAGAIN with the same context is then the only one). */
  if (c.ctx) c.slot = park(tgid, &c);
  bpf_map_update_elem(&up_call, &tid, &c, BPF_ANY);
  return 0;
}

/* Site `site`'s layout (struct ft_up_layout); NULL when it has none. */
static __always_inline const volatile struct ft_up_layout* layout_of(__u32 site) {
  const __u32 li = ft_site_layout[site & (FT_UP_MAX_SITES - 1)];
  if (!li || li > FT_UP_MAX_LAYOUTS) return 0;
  return &ft_layouts[(li - 1) & (FT_UP_MAX_LAYOUTS - 1)];
}

/* An endpoint's CQ of one side, through the layout's path from the endpoint. */
static __always_inline __u64 ep_cq_of(const volatile struct ft_up_layout* l, int side, __u64 p) {
  const __u32 hops = l->ep_cq_hops[side];
  __u64 cq = 0;
#pragma unroll
  for (__u32 h = 0; h <= FT_UP_EP_HOPS_MAX; ++h) {
    if (h < hops)
      p = p ? read_u64(p + l->ep_cq_path[side][h]) : 0;
    else if (h == hops)
      cq = p ? read_u64(p + l->ep_cq_path[side][h]) : 0;
  }
  return cq;
}

/* An endpoint opened before the session (its binds were not seen), at its
 * first op on site `site`: its CQs read from the endpoint by the site's
 * provider's layout, each marked with the side it serves (its format is
 * learnt at its next outermost read: learn_cq). NULL without a layout. */
static __always_inline struct ft_up_ep* learn_ep(__u32 tgid, __u64 ep_ptr, __u32 site) {
  const volatile struct ft_up_layout* l = layout_of(site);
  if (!l || !l->cq_fmt_kind || !ep_ptr) return 0;
  struct ft_up_ep e = {};
  e.cq[FT_UP_TX] = ep_cq_of(l, FT_UP_TX, ep_ptr);
  e.cq[FT_UP_RX] = ep_cq_of(l, FT_UP_RX, ep_ptr);
  if (!e.cq[FT_UP_TX] && !e.cq[FT_UP_RX]) return 0;
  struct ft_up_key ek = {.tgid = tgid, .ptr = ep_ptr};
  if (!may_add(&up_eps, &ek, tgid, false)) return 0;
  bpf_map_update_elem(&up_eps, &ek, &e, BPF_NOEXIST);
#pragma unroll
  for (int side = 0; side < 2; ++side) {
    if (!e.cq[side]) continue;
    struct ft_up_key ck = {.tgid = tgid, .ptr = e.cq[side]};
    struct ft_up_cq* cq = bpf_map_lookup_elem(&up_cqs, &ck);
    if (!cq && may_add(&up_cqs, &ck, tgid, false)) {
      struct ft_up_cq fresh = {.learnt = 1};
      bpf_map_update_elem(&up_cqs, &ck, &fresh, BPF_NOEXIST);
      cq = bpf_map_lookup_elem(&up_cqs, &ck);
    }
    if (cq) cq->sides |= 1u << side;
  }
  struct ft_up_ep* made = bpf_map_lookup_elem(&up_eps, &ek);
  if (made) {
    if (e.cq[FT_UP_TX]) made->bound |= 1u << FT_UP_TX;
    if (e.cq[FT_UP_RX]) made->bound |= 1u << FT_UP_RX;
  }
  return made;
}

/* The op's return: accepted (0) ops wait for their completion. */
SEC("uretprobe")
int ft_up_op_ret(struct pt_regs* regs) {
  struct ft_up_call c;
  if (!take_call(&up_call, regs, &c, sizeof(c))) return 0;
  const __u32 tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);
  const long ret = (long)FT_RET(regs);
  if (ret != 0) {
    struct ft_up_stats* s = stats_of(tgid, c.op, c.ep, c.peer, c.bytes, c.cls == FT_UP_RX);
    if (s) {
      s->refused += 1;
      if (ret == -FT_UP_FI_EAGAIN) s->eagain += 1;
    }
    if (c.ctx) unpark(tgid, &c);
    return 0;
  }
  /* An endpoint opened before the session: its CQs become known here. */
  struct ft_up_key ek = {.tgid = tgid, .ptr = c.ep};
  struct ft_up_ep* ep = bpf_map_lookup_elem(&up_eps, &ek);
  if (!ep) ep = learn_ep(tgid, c.ep, c.site);
  if (c.untimed) {
    struct ft_up_stats* s = stats_of(tgid, c.op, c.ep, c.peer, c.bytes, c.cls == FT_UP_RX);
    if (s) {
      s->untimed += 1;
      s->untimed_bytes += c.bytes;
    }
    return 0;
  }
  if (c.ctx) return 0;
  /* A NULL context: queued on the CQ of its endpoint's side, once accepted. */
  struct ft_up_pending p = {.start = c.start,
                            .bytes = c.bytes,
                            .ep = c.ep,
                            .peer = c.peer,
                            .op = c.op,
                            .site = c.site,
                            .rx = c.cls == FT_UP_RX};
  const __u64 cq = ep ? ep->cq[c.cls & 1] : 0;
  if (!cq) {
    struct ft_up_stats* s = stats_of(tgid, c.op, c.ep, c.peer, c.bytes, c.cls == FT_UP_RX);
    if (s) s->unmatched += 1;
    return 0;
  }
  struct ft_up_fifo_key fk = {.tgid = tgid, .cls = c.cls & 1, .cq = cq};
  if (!may_add(&up_fifo, &fk, tgid, false)) return 0;
  struct ft_up_fifo* f = lookup_or_zero(&up_fifo, &fk);
  if (!f) return 0;
  struct ft_up_seq_key sk = {
      .tgid = tgid, .cls = fk.cls, .cq = cq, .seq = __sync_fetch_and_add(&f->tail, 1)};
  /* Over its process's share the op keeps its turn in the CQ's order but no
   * record: its completion finds the empty turn (unmatched), never the next op. */
  if (!inflight_take(tgid)) return 0;
  bpf_map_update_elem(&up_seq_pending, &sk, &p, BPF_ANY);
  return 0;
}

SEC("uprobe")
int ft_up_cq_open(struct pt_regs* regs) {
  if (!hit(regs)) return 0;
  const __u32 tid = (__u32)bpf_get_current_pid_tgid();
  /* cq_open(domain, attr, cq_fid, context); attr->format after size and flags. */
  struct ft_up_open o = {};
  o.cq_out = arg_n(regs, 3);
  o.sp = FT_SP(regs);
  const __u64 attr = arg_n(regs, 2);
  if (attr)
    bpf_probe_read_user(&o.format, sizeof(o.format),
                        (const void*)(attr + FT_UP_CQ_ATTR_FORMAT_OFF));
  bpf_map_update_elem(&up_open, &tid, &o, BPF_ANY);
  return 0;
}

/* enum fi_cq_format -> the size of its entry (rdma/fi_eq.h). UNSPEC is the
 * provider's choice: fi_cq_entry for the utility CQ (tcp, shm, rxm, rxd, udp). */
static __always_inline __u32 entry_size(__u32 format) {
  switch (format) {
    case 0: /* FI_CQ_FORMAT_UNSPEC */
    case 1: /* FI_CQ_FORMAT_CONTEXT */
      return 8;
    case 2: /* FI_CQ_FORMAT_MSG */
      return 24;
    case 3: /* FI_CQ_FORMAT_DATA */
      return 40;
    case 4: /* FI_CQ_FORMAT_TAGGED */
      return 48;
    default:
      return 0;
  }
}

SEC("uretprobe")
int ft_up_cq_open_ret(struct pt_regs* regs) {
  struct ft_up_open o;
  if (!take_call(&up_open, regs, &o, sizeof(o))) return 0;
  /* cq_open returns int: the register's upper half is not defined. */
  const int ret = (int)FT_RET(regs);
  const __u64 out = o.cq_out;
  const __u32 format = o.format;
  if (ret != 0 || !out) return 0;
  struct ft_up_key k = {.tgid = (__u32)(bpf_get_current_pid_tgid() >> 32), .ptr = read_u64(out)};
  struct ft_up_cq c = {
      .entry_size = entry_size(format), .format = format, .opened = bpf_ktime_get_ns()};
  if (k.ptr && c.entry_size && may_add(&up_cqs, &k, k.tgid, false))
    bpf_map_update_elem(&up_cqs, &k, &c, BPF_ANY);
  return 0;
}

/* bind(fid, bfid, flags): an application endpoint bound to an application CQ,
 * or to an AV (whose entries its ops' fi_addr_t values are). */
SEC("uprobe")
int ft_up_ep_bind(struct pt_regs* regs) {
  const __u32 tgid = hit(regs);
  if (!tgid) return 0;
  struct ft_up_key ck = {.tgid = tgid, .ptr = arg_n(regs, 2)};
  struct ft_up_cq* cq = bpf_map_lookup_elem(&up_cqs, &ck);
  if (!cq) {
    /* struct fid starts with its fclass. Anything else: a counter, an EQ, a CQ
     * of another layer. */
    if (ck.ptr && read_u64(ck.ptr) == FT_UP_FI_CLASS_AV) {
      struct ft_up_key ek = {.tgid = tgid, .ptr = arg_n(regs, 1)};
      if (may_add(&up_ep_av, &ek, tgid, false))
        bpf_map_update_elem(&up_ep_av, &ek, &ck.ptr, BPF_ANY);
    }
    return 0;
  }
  const __u64 flags = arg_n(regs, 3);
  struct ft_up_key ek = {.tgid = tgid, .ptr = arg_n(regs, 1)};
  if (!may_add(&up_eps, &ek, tgid, false)) return 0;
  struct ft_up_ep* ep = lookup_or_zero(&up_eps, &ek);
  if (!ep) return 0;
  /* A CQ bound with neither direction flag serves both (as the preload takes it). */
  const bool both = !(flags & (FT_UP_FI_TRANSMIT | FT_UP_FI_RECV));
#pragma unroll
  for (int side = 0; side < 2; ++side) {
    if (!both && !(flags & (side == FT_UP_TX ? FT_UP_FI_TRANSMIT : FT_UP_FI_RECV))) continue;
    ep->cq[side] = ck.ptr;
    ep->bound |= 1u << side;
    if (flags & FT_UP_FI_SELECTIVE_COMPLETION)
      ep->selective |= 1u << side;
    else
      ep->selective &= ~(1u << side);
    cq->sides |= 1u << side;
  }
  return 0;
}

/* One application poll of CQ `c`, stamped `now`: counted, and the gap since
 * the CQ's previous stamp filed in its class (the preload's poll_mark). Two
 * threads polling one CQ at once may both measure from the same stamp: that
 * only shortens gaps. */
static __always_inline void poll_mark(struct ft_up_cq* c, __u64 now) {
  const __u64 prev = c->last;
  c->last = now;
  __sync_fetch_and_add(&c->polls, 1);
  if (!prev || now <= prev) return;
  const __u64 gap = now - prev;
  __u32 cls = FT_UP_GAP_CLASSES - 1;
#pragma unroll
  for (int i = FT_UP_GAP_CLASSES - 2; i >= 0; --i)
    if (gap < FT_UP_GAP_EDGE_NS(i)) cls = (__u32)i;
  if (cls < FT_UP_GAP_CLASSES) __sync_fetch_and_add(&c->gaps[cls], 1);
  if (gap > c->max_gap) {
    c->max_gap = gap;
    c->max_gap_end = now;
  }
}

/* A CQ opened before the session, at its first outermost read after an op of
 * an endpoint bound to it (learn_ep made `known`, sides and no format): its
 * format by this site's provider's layout (struct ft_up_layout): the word it
 * keeps, or the one whose per-format function lies at the same distance from
 * this probe as in the library file. Only such CQs:
 * a utility provider's inner CQ (rxm's tcp CQ) is read through the same
 * function, and its read looks outermost when the application's read around it
 * began before the session. Any other object (a provider without the utility
 * CQ, another copy of the library) matches no format and stays unknown. */
static __always_inline struct ft_up_cq* learn_cq(struct pt_regs* regs, const struct ft_up_key* k,
                                                 struct ft_up_cq* known) {
  const __u32 site = FT_UP_SITE(bpf_get_attach_cookie(regs)) & (FT_UP_MAX_SITES - 1);
  const volatile struct ft_up_layout* l = layout_of(site);
  if (!known || !l || !l->cq_fmt_off || !k->ptr) return 0;
  __u32 format = 0;
  if (l->cq_fmt_kind == FT_UP_CQ_FMT_WORD) {
    __u32 w = 0;
    bpf_probe_read_user(&w, sizeof(w), (const void*)(k->ptr + l->cq_fmt_off));
    if (w >= 1 && w <= 4) format = w;
  } else if (l->cq_fmt_kind == FT_UP_CQ_FMT_FN) {
    const __u64 probe_off = ft_site_off[site];
    if (!probe_off) return 0;
    const __u64 ip = bpf_get_func_ip(regs);
    const __u64 fn = read_u64(k->ptr + l->cq_fmt_off);
#pragma unroll
    for (__u32 f = 1; f < 5; ++f) {
      if (l->fmt_fn[f] && fn - ip == l->fmt_fn[f] - probe_off) format = f;
    }
  }
  if (!format) return 0;
  known->format = format;
  known->entry_size = entry_size(format);
  return known;
}

SEC("uprobe")
int ft_up_cq_read(struct pt_regs* regs) {
  const __u32 tgid = hit(regs), tid = (__u32)bpf_get_current_pid_tgid();
  if (!tgid) return 0;
  /* A read nested in the application's (readfrom called by read, a core CQ
   * read by the utility provider's progress) is not a poll of its own: it runs
   * deeper in the stack. One at the same depth or above means the recorded
   * read's return was never seen (a uretprobe the kernel skipped): replaced. */
  const struct ft_up_poll* outer = bpf_map_lookup_elem(&up_poll, &tid);
  if (outer && FT_SP(regs) < outer->sp) return 0;
  struct ft_up_key k = {.tgid = tgid, .ptr = arg_n(regs, 1)};
  struct ft_up_cq* c = bpf_map_lookup_elem(&up_cqs, &k);
  if (c && !c->entry_size) c = learn_cq(regs, &k, c);
  if (!c) return 0;
  struct ft_up_poll p = {};
  p.cq = k.ptr;
  p.buf = arg_n(regs, 2);
  p.sp = FT_SP(regs);
  p.entry_size = c->entry_size;
  p.sides = c->sides;
  p.learnt = c->learnt;
  /* A blocking read services the CQ from its call on: its poll is stamped now. */
  p.blocking = FT_UP_CLASS(bpf_get_attach_cookie(regs)) != 0;
  if (p.blocking) poll_mark(c, bpf_ktime_get_ns());
  bpf_map_update_elem(&up_poll, &tid, &p, BPF_ANY);
  return 0;
}

/* The NULL-context op a completion of CQ `cq` ends: the oldest queued on the
 * side the entry belongs to (the CQ's only side, or the entry's FI_SEND/FI_RECV
 * flag where the format has flags). NULL when there is none. */
static __always_inline struct ft_up_pending* by_order(__u32 tgid, const struct ft_up_poll* pp,
                                                      __u64 entry, struct ft_up_seq_key* sk,
                                                      bool* early) {
  __u32 cls;
  if (pp->sides == (1u << FT_UP_TX)) {
    cls = FT_UP_TX;
  } else if (pp->sides == (1u << FT_UP_RX)) {
    cls = FT_UP_RX;
  } else if (pp->entry_size >= 24) {
    const __u64 flags = read_u64(entry + 8);
    if (flags & FT_UP_FI_RECV)
      cls = FT_UP_RX;
    else if (flags & FT_UP_FI_SEND)
      cls = FT_UP_TX;
    else
      return 0;
  } else {
    return 0;
  }
  struct ft_up_fifo_key fk = {.tgid = tgid, .cls = cls, .cq = pp->cq};
  struct ft_up_fifo* f = bpf_map_lookup_elem(&up_fifo, &fk);
  /* No op of this side issued in the session yet, on a CQ opened before it:
   * the completion of an op issued before the session. */
  *early = !f && pp->learnt;
  if (!f || f->head >= f->tail) return 0;
  sk->tgid = tgid;
  sk->cls = cls;
  sk->cq = pp->cq;
  sk->seq = __sync_fetch_and_add(&f->head, 1);
  return bpf_map_lookup_elem(&up_seq_pending, sk);
}

/* One CQ read's entries being walked by walk_entry, a bpf_loop step (checked
 * once by the verifier, where an unrolled walk of FT_UP_WALK_MAX entries took
 * most of its instruction budget). What an entry is not paired with goes to
 * the process's polls row, looked up by each step (a count kept here would
 * be a different value in every step's state). */
struct ft_up_walk {
  struct ft_up_poll pp;
  __u64 now, ret;
  __u32 tgid, pad;
};

static long walk_entry(__u64 i, void* arg) {
  struct ft_up_walk* w = arg;
  if (i >= w->ret || i >= FT_UP_WALK_MAX) return 1;
  const __u32 tgid = w->tgid;
  const __u64 entry = w->pp.buf + (__u64)w->pp.entry_size * i;
  struct ft_up_key k = {.tgid = tgid, .ptr = read_u64(entry)};
  /* A peer's RMA or atomic landing here (fi_writedata's CQ data): no op of
   * this process, and never a receive of its (FI_RECV is not set). */
  if (!k.ptr && w->pp.entry_size >= 24) {
    const __u64 flags = read_u64(entry + 8);
    if ((flags & (FT_UP_FI_REMOTE_WRITE | FT_UP_FI_REMOTE_READ)) && !(flags & FT_UP_FI_RECV)) {
      struct ft_up_stats* ps = stats_of(tgid, FT_UP_OP_POLLS, 0, 0, 0, 0);
      if (ps) ps->remote += 1;
      return 0;
    }
  }
  struct ft_up_seq_key sk = {};
  bool before = false;
  struct ft_up_pending* p =
      k.ptr ? bpf_map_lookup_elem(&up_pending, &k) : by_order(tgid, &w->pp, entry, &sk, &before);
  if (!p) {
    struct ft_up_stats* ps = stats_of(tgid, FT_UP_OP_POLLS, 0, 0, 0, 0);
    if (ps) {
      if (before)
        ps->early += 1;
      else
        ps->unmatched += 1;
    }
    return 0;
  }
  const __u64 now = w->now;
  const __u64 lat = now > p->start ? now - p->start : 0;
  const __u32 op = p->op;
  const __u64 ep = p->ep, peer = p->peer;
  /* A receive is sized as arrived where the entry has a length (every
   * format but FI_CQ_FORMAT_CONTEXT: fi_cq_msg_entry's len at +16), as the
   * preload sizes it; else as posted. */
  __u64 bytes = p->bytes;
  __u32 posted = 0;
  if (p->rx) {
    if (w->pp.entry_size >= 24)
      bytes = read_u64(entry + 16);
    else
      posted = 1;
  }
  /* The next op queued with this context (if any) takes its place. */
  if (k.ptr)
    next_pending(&k, p);
  else
    inflight_delete(&up_seq_pending, &sk, tgid);
  struct ft_up_stats* s = stats_of(tgid, op, ep, peer, bytes, posted);
  if (!s) return 0;
  s->completions += 1;
  if (!k.ptr) s->by_order += 1;
  s->bytes += bytes;
  s->lat_sum_ns += lat;
  if (!s->lat_min_ns || lat < s->lat_min_ns) s->lat_min_ns = lat;
  if (lat > s->lat_max_ns) s->lat_max_ns = lat;
  /* The mask is the bound the verifier sees (FT_UP_HIST is a power of two):
   * kept from the compiler, which knows the bucket is below it already. */
  __u32 b = ft_up_hist_bucket(lat);
  asm volatile("" : "+r"(b));
  s->hist[b & (FT_UP_HIST - 1)] += 1;
  return 0;
}

SEC("uretprobe")
int ft_up_cq_read_ret(struct pt_regs* regs) {
  const long ret = (long)FT_RET(regs); /* entries, or -FI_EAGAIN, ... */
  struct ft_up_walk w = {};
  if (!take_call(&up_poll, regs, &w.pp, sizeof(w.pp))) return 0;
  const __u32 tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);
  w.tgid = tgid;
  w.now = bpf_ktime_get_ns();
  struct ft_up_key ck = {.tgid = tgid, .ptr = w.pp.cq};
  struct ft_up_cq* cq = bpf_map_lookup_elem(&up_cqs, &ck);
  if (cq) {
    if (w.pp.blocking)
      cq->last = w.now; /* its end is the CQ's latest poll */
    else
      poll_mark(cq, w.now);
  }
  struct ft_up_stats* ps = stats_of(tgid, FT_UP_OP_POLLS, 0, 0, 0, 0);
  if (ps) ps->calls += 1;
  if (ret <= 0) return 0;
  if (ps) {
    ps->completions += (__u64)ret;
    if (ret > FT_UP_WALK_MAX) ps->unwalked += (__u64)ret - FT_UP_WALK_MAX;
  }
  w.ret = (__u64)ret;
  bpf_loop(FT_UP_WALK_MAX, walk_entry, &w, 0);
  return 0;
}

/* ---- What the endpoints and the peers are. */

/* An AV insert's or a getname's entry: (object, addresses, count or the
 * length's place, fi_addr_t array) kept for its return. A call nested in one
 * in flight (a utility provider's into its core's, through the same function)
 * is not the application's. */
static __always_inline int name_call(struct pt_regs* regs, __u64 count, __u64 out) {
  if (!hit(regs)) return 0;
  const __u32 tid = (__u32)bpf_get_current_pid_tgid();
  const struct ft_up_name_call* outer = bpf_map_lookup_elem(&up_name_call, &tid);
  if (outer && FT_SP(regs) < outer->sp) return 0;
  struct ft_up_name_call c = {};
  c.sp = FT_SP(regs);
  c.obj = arg_n(regs, 1);
  c.addr = arg_n(regs, 2);
  c.count = count;
  c.out = out;
  const __u64 cookie = bpf_get_attach_cookie(regs);
  c.site = FT_UP_SITE(cookie) & (FT_UP_MAX_SITES - 1);
  c.role = FT_UP_ROLE(cookie);
  bpf_map_update_elem(&up_name_call, &tid, &c, BPF_ANY);
  return 0;
}

/* insert(av, addr, count, fi_addr, flags, context) */
SEC("uprobe")
int ft_up_av_insert(struct pt_regs* regs) {
  return name_call(regs, arg_n(regs, 3), arg_n(regs, 4));
}

/* The entries inserted (the first FT_UP_INSERT_MAX of the call): each
 * fi_addr_t the provider gave out (FI_ADDR_NOTAVAIL: that one failed) and the
 * address at its place in the caller's array. */
SEC("uretprobe")
int ft_up_av_insert_ret(struct pt_regs* regs) {
  struct ft_up_name_call c;
  if (!take_call(&up_name_call, regs, &c, sizeof(c))) return 0;
  /* insert returns int: the entries inserted, or an error. */
  if ((int)FT_RET(regs) <= 0 || !c.out || !c.addr) return 0;
  const __u32 stride = ft_site_addrlen[c.site & (FT_UP_MAX_SITES - 1)];
  __u32 len = stride < FT_UP_ADDR_MAX ? stride : FT_UP_ADDR_MAX;
  struct ft_up_av_key k = {.tgid = (__u32)(bpf_get_current_pid_tgid() >> 32), .av = c.obj};
  struct ft_up_addr a = {};
  a.site = c.site;
  __u64 at = c.addr;
  for (__u32 i = 0; i < FT_UP_INSERT_MAX; ++i) {
    if (i >= c.count) break;
    bool last = false;
    k.fi_addr = read_u64(c.out + 8 * (__u64)i);
    if (stride) {
      if (len == 0 || len > FT_UP_ADDR_MAX) break;
      if (bpf_probe_read_user(a.bytes, len, (const void*)at) != 0) break;
      a.len = len;
      at += stride;
    } else {
      /* FI_ADDR_STR: one string after the other. One cut at FT_UP_ADDR_MAX
       * bytes ends the walk: where the next one starts is not known. */
      const long n = bpf_probe_read_user_str(a.bytes, FT_UP_ADDR_MAX, (const void*)at);
      if (n <= 0) break;
      a.len = (__u32)n;
      at += (__u64)n;
      last = n >= FT_UP_ADDR_MAX;
    }
    if (k.fi_addr != FT_UP_ADDR_UNSPEC && may_add(&up_av_addrs, &k, k.tgid, true) &&
        bpf_map_update_elem(&up_av_addrs, &k, &a, BPF_ANY) != 0)
      lost(FT_UP_LOST_ADDRS);
    if (last) break;
  }
  return 0;
}

/* getname(fid, addr, addrlen): addrlen is a size_t *. */
SEC("uprobe")
int ft_up_getname(struct pt_regs* regs) { return name_call(regs, arg_n(regs, 3), 0); }

SEC("uretprobe")
int ft_up_getname_ret(struct pt_regs* regs) {
  struct ft_up_name_call c;
  if (!take_call(&up_name_call, regs, &c, sizeof(c))) return 0;
  if ((int)FT_RET(regs) != 0 || !c.addr || !c.count) return 0;
  const __u64 got = read_u64(c.count);
  struct ft_up_addr a = {};
  a.site = c.site;
  __u32 len = got < FT_UP_ADDR_MAX ? (__u32)got : FT_UP_ADDR_MAX;
  if (len == 0 || len > FT_UP_ADDR_MAX) return 0;
  if (bpf_probe_read_user(a.bytes, len, (const void*)c.addr) != 0) return 0;
  a.len = len;
  struct ft_up_key k = {.tgid = (__u32)(bpf_get_current_pid_tgid() >> 32), .ptr = c.obj};
  if (may_add(&up_ep_names, &k, k.tgid, true) &&
      bpf_map_update_elem(&up_ep_names, &k, &a, BPF_ANY) != 0)
    lost(FT_UP_LOST_ADDRS);
  return 0;
}

/* ---- Connected (FI_EP_MSG) endpoints: no AV, one peer whatever fi_addr_t
 * their ops carry (the preload names it from the info the endpoint was opened
 * with, or the address fi_connect was given). */

FT_UP_MAP_GROWN(up_ep_conns, BPF_MAP_TYPE_HASH, FT_UP_MAX_ADDRS, struct ft_up_key,
                struct ft_up_conn);
FT_UP_MAP(up_conn_call, BPF_MAP_TYPE_HASH, 4096, __u32, struct ft_up_conn_call);

/* Up to FT_UP_ADDR_MAX bytes of an address of `len` bytes at `at`; the bytes
 * kept, 0 when none could be read. */
static __always_inline __u32 read_addr(__u8* to, __u64 at, __u64 len) {
  __u32 n = len < FT_UP_ADDR_MAX ? (__u32)len : FT_UP_ADDR_MAX;
  if (!at || n == 0 || n > FT_UP_ADDR_MAX) return 0;
  return bpf_probe_read_user(to, n, (const void*)at) == 0 ? n : 0;
}

/* endpoint(domain, info, ep, context): a MSG endpoint's info kept for the
 * return (the endpoint is not known before): its address format, peer and own
 * address. Built in the map (the value is too large for the BPF stack). An
 * open nested in one in flight (a utility provider's of its core's) is not
 * the application's. */
SEC("uprobe")
int ft_up_ep_open(struct pt_regs* regs) {
  if (!hit(regs)) return 0;
  const __u32 tid = (__u32)bpf_get_current_pid_tgid();
  const struct ft_up_conn_call* outer = bpf_map_lookup_elem(&up_conn_call, &tid);
  if (outer && FT_SP(regs) < outer->sp) return 0;
  const __u64 info = arg_n(regs, 2);
  if (!info) return 0;
  __u32 type = 0;
  bpf_probe_read_user(&type, sizeof(type), (const void*)read_u64(info + FT_UP_INFO_EP_ATTR_OFF));
  bpf_map_delete_elem(&up_conn_call, &tid);
  struct ft_up_conn_call* c = lookup_or_zero(&up_conn_call, &tid);
  if (!c) return 0;
  c->sp = FT_SP(regs);
  c->ep_out = arg_n(regs, 3);
  const __u64 tx = read_u64(info + FT_UP_INFO_TX_ATTR_OFF);
  const __u64 rx = read_u64(info + FT_UP_INFO_RX_ATTR_OFF);
  if (tx) c->op_flags[FT_UP_TX] = read_u64(tx + FT_UP_ATTR_OP_FLAGS_OFF);
  if (rx) c->op_flags[FT_UP_RX] = read_u64(rx + FT_UP_ATTR_OP_FLAGS_OFF);
  if (type != FT_UP_FI_EP_MSG) return 0; /* RDM, DGRAM: their AV names their peers */
  c->msg = 1;
  c->conn.site = FT_UP_SITE(bpf_get_attach_cookie(regs)) & (FT_UP_MAX_SITES - 1);
  bpf_probe_read_user(&c->conn.addr_format, sizeof(c->conn.addr_format),
                      (const void*)(info + FT_UP_INFO_ADDR_FORMAT_OFF));
  c->conn.peer_len = read_addr(c->conn.peer, read_u64(info + FT_UP_INFO_DEST_ADDR_OFF),
                               read_u64(info + FT_UP_INFO_DEST_ADDRLEN_OFF));
  c->conn.local_len = read_addr(c->conn.local, read_u64(info + FT_UP_INFO_SRC_ADDR_OFF),
                                read_u64(info + FT_UP_INFO_SRC_ADDRLEN_OFF));
  return 0;
}

/* The open's return: the endpoint made (0) is known (its open seen, its op
 * flags), a MSG one to be connected-type, with what its info said. */
SEC("uretprobe")
int ft_up_ep_open_ret(struct pt_regs* regs) {
  const __u32 tid = (__u32)bpf_get_current_pid_tgid();
  struct ft_up_conn_call* c = bpf_map_lookup_elem(&up_conn_call, &tid);
  if (!c || FT_SP(regs) != c->sp + 8) return 0;
  struct ft_up_key k = {.tgid = (__u32)(bpf_get_current_pid_tgid() >> 32),
                        .ptr = (int)FT_RET(regs) == 0 ? read_u64(c->ep_out) : 0};
  if (k.ptr) {
    const __u64 kept = FT_UP_FI_COMPLETION | FT_UP_FI_MULTI_RECV;
    struct ft_up_ep e = {.opened = 1};
    e.op_flags[FT_UP_TX] = c->op_flags[FT_UP_TX] & kept;
    e.op_flags[FT_UP_RX] = c->op_flags[FT_UP_RX] & kept;
    if (may_add(&up_eps, &k, k.tgid, false)) bpf_map_update_elem(&up_eps, &k, &e, BPF_ANY);
  }
  if (k.ptr && c->msg && may_add(&up_ep_conns, &k, k.tgid, true) &&
      bpf_map_update_elem(&up_ep_conns, &k, &c->conn, BPF_ANY) != 0)
    lost(FT_UP_LOST_ADDRS);
  bpf_map_delete_elem(&up_conn_call, &tid);
  return 0;
}

/* connect(ep, addr, param, paramlen) */
SEC("uprobe")
int ft_up_connect(struct pt_regs* regs) { return name_call(regs, 0, 0); }

/* A TCP socket moved to SYN_SENT by a thread inside a probed connect: the
 * provider's own connect(2) (tcp's; sockets' connects from its own thread are
 * not seen). Its local port is chosen right after, within the same syscall:
 * the connect's return reads it. This is how the connecting side's own address
 * is known where the program never asks its endpoint's name (fi_pingpong's
 * client: the preload asks it itself). */
SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(ft_up_sk_state, const struct sock* sk, int oldstate, int newstate) {
  if (newstate != FT_UP_TCP_SYN_SENT || !ft_up_armed) return 0;
  const __u32 tid = (__u32)bpf_get_current_pid_tgid();
  struct ft_up_name_call* c = bpf_map_lookup_elem(&up_name_call, &tid);
  if (c && c->role == FT_UP_ROLE_CONNECT && !c->sk) c->sk = (__u64)sk;
  return 0;
}

/* The connecting endpoint's own address from its socket (struct sock_common:
 * the bound address and the local port, host order), as a sockaddr_in /
 * sockaddr_in6 (its getname's form), where its info named none with a port
 * (tcp's names the IP only) and the connect's site is of a provider whose
 * connect socket is the endpoint's name (tcp's; sockets' endpoint listens on a
 * port of its own and connects from another: ft_site_addrlen). */
static __always_inline void own_address(struct ft_up_conn* conn, __u64 sk_ptr, __u32 site) {
  if (conn->local_len >= 4 && (conn->local[2] | conn->local[3])) return;
  if (!ft_site_addrlen[site & (FT_UP_MAX_SITES - 1)]) return;
  const struct sock* sk = (const struct sock*)sk_ptr;
  const __u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);
  const __u16 port = BPF_CORE_READ(sk, __sk_common.skc_num);
  if (port == 0 || (family != FT_UP_AF_INET && family != FT_UP_AF_INET6)) return;
  __builtin_memset(conn->local, 0, 28);
  /* sin_family (host order), sin_port (network order), then the address. */
  conn->local[0] = (__u8)family;
  conn->local[2] = (__u8)(port >> 8);
  conn->local[3] = (__u8)port;
  if (family == FT_UP_AF_INET) {
    const __be32 ip = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
    __builtin_memcpy(&conn->local[4], &ip, 4);
    conn->local_len = 16;
  } else {
    BPF_CORE_READ_INTO(&conn->local[8], sk, __sk_common.skc_v6_rcv_saddr);
    conn->local_len = 28;
  }
}

/* A connect the provider took (0): the endpoint is connected. Its socket's
 * local address is its own (above); the connect's address is its peer when it
 * is a sockaddr of a family the preload reads too (AF_INET, AF_INET6): its
 * length is known only then. An endpoint opened before the session gets an
 * entry here, with the site's address format. */
SEC("uretprobe")
int ft_up_connect_ret(struct pt_regs* regs) {
  struct ft_up_name_call c;
  if (!take_call(&up_name_call, regs, &c, sizeof(c))) return 0;
  if ((int)FT_RET(regs) != 0 || !c.obj) return 0;
  struct ft_up_key k = {.tgid = (__u32)(bpf_get_current_pid_tgid() >> 32), .ptr = c.obj};
  struct ft_up_conn* conn = bpf_map_lookup_elem(&up_ep_conns, &k);
  if (!conn) {
    if (!may_add(&up_ep_conns, &k, k.tgid, true)) return 0;
    conn = lookup_or_zero(&up_ep_conns, &k);
    if (!conn) {
      lost(FT_UP_LOST_ADDRS);
      return 0;
    }
    conn->site = c.site;
    conn->addr_format = ft_site_addr_format[c.site & (FT_UP_MAX_SITES - 1)];
  }
  if (conn->addr_format < FT_UP_FI_SOCKADDR || conn->addr_format > FT_UP_FI_SOCKADDR_IN6) return 0;
  if (c.sk) own_address(conn, c.sk, c.site);
  if (!c.addr) return 0;
  __u16 family = 0;
  bpf_probe_read_user(&family, sizeof(family), (const void*)c.addr);
  const __u64 len = family == FT_UP_AF_INET ? 16 : family == FT_UP_AF_INET6 ? 28 : 0;
  if (len) conn->peer_len = read_addr(conn->peer, c.addr, len);
  return 0;
}
