// SPDX-License-Identifier: (BSD-3-Clause OR GPL-2.0-only)
/* The application's CQs: their opening and binding, each outermost read counted
 * as a poll, and the entries it returned paired with their ops.
 * A part of uprobe_ops.bpf.c, which includes it once: the parts are one BPF
 * object, so that they share its maps. */
#ifndef FABTRACE_UPROBE_POLL_BPF_H
#define FABTRACE_UPROBE_POLL_BPF_H

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

/* A CQ read's entry: 0 when it recorded an application poll (whose return
 * must be seen), 1 otherwise. */
static __always_inline int cq_read_entry(struct pt_regs* regs) {
  const __u32 tgid = hit(regs), tid = (__u32)bpf_get_current_pid_tgid();
  if (!tgid) return 1;
  /* A read nested in the application's (readfrom called by read, a core CQ
   * read by the utility provider's progress) is not a poll of its own: it runs
   * deeper in the stack. One at the same depth or above means the recorded
   * read's return was never seen (a uretprobe the kernel skipped): replaced. */
  const struct ft_up_poll* outer = bpf_map_lookup_elem(&up_poll, &tid);
  if (outer && FT_SP(regs) < outer->sp) return 1;
  struct ft_up_key k = {.tgid = tgid, .ptr = arg_n(regs, 1)};
  struct ft_up_cq* c = bpf_map_lookup_elem(&up_cqs, &k);
  if (c && !c->entry_size) c = learn_cq(regs, &k, c);
  if (!c) return 1;
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

SEC("uprobe")
int ft_up_cq_read(struct pt_regs* regs) {
  cq_read_entry(regs);
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

/* A CQ read's return: its poll counted, the entries it returned walked. */
static __always_inline int cq_read_ret(struct pt_regs* regs) {
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

SEC("uretprobe")
int ft_up_cq_read_ret(struct pt_regs* regs) { return cq_read_ret(regs); }

/* Kernel 6.13+ (weak: an older kernel never loads the program below). */
extern bool bpf_session_is_return(void) __ksym __weak;

/* A CQ read's entry and return in one program (BPF_TRACE_UPROBE_SESSION,
 * where the kernel has it): an entry that records no poll (a read nested in
 * the application's, as rxm's progress reads its tcp CQ; a CQ that is not the
 * application's) returns 1, and the kernel then skips its return probe, about
 * half of such a read's cost. */
SEC("uprobe")
int ft_up_cq_read_session(struct pt_regs* regs) {
  if (bpf_session_is_return()) return cq_read_ret(regs);
  return cq_read_entry(regs);
}

#endif
