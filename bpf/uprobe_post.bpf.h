// SPDX-License-Identifier: (BSD-3-Clause OR GPL-2.0-only)
/* An op posted: its bytes, its peer, whether it will get a completion, and the
 * record parked under its context until that completion comes.
 * A part of uprobe_ops.bpf.c, which includes it once: the parts are one BPF
 * object, so that they share its maps. */
#ifndef FABTRACE_UPROBE_POST_BPF_H
#define FABTRACE_UPROBE_POST_BPF_H

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
static __always_inline __u64 op_peer(struct pt_regs* regs, __u32 site, __u32 peerloc) {
  if (peerloc == FT_UP_PEER_MSG) return read_u64(op_arg(regs, site, 2) + FT_UP_MSG_ADDR_OFF);
  if (peerloc >= 2 && peerloc <= 16) return op_arg(regs, site, (int)peerloc);
  return 0;
}

/* The bytes an op moves, from where its length is (enum ft_up_len): an atomic's
 * elements times its datatype's size (an unknown datatype counts 0 bytes). */
static __always_inline __u64 op_bytes(struct pt_regs* regs, __u32 site, __u32 lenloc) {
  const __u32 kind = FT_UP_LEN_KIND(lenloc);
  __u64 n = 0;
  switch (kind) {
    case FT_UP_LEN_ARG3:
    case FT_UP_LEN_ACOUNT:
      n = op_arg(regs, site, 3);
      break;
    case FT_UP_LEN_IOV:
    case FT_UP_LEN_AIOC:
      n = iov_bytes(op_arg(regs, site, 2), op_arg(regs, site, 4));
      break;
    case FT_UP_LEN_MSG:
    case FT_UP_LEN_AMSG: {
      /* fi_msg, fi_msg_tagged, fi_msg_rma, fi_msg_atomic: the same two fields */
      const __u64 msg = op_arg(regs, site, 2);
      n = iov_bytes(read_u64(msg + FT_UP_MSG_IOV_OFF), read_u64(msg + FT_UP_MSG_COUNT_OFF));
      break;
    }
    default:
      return 0;
  }
  if (kind < FT_UP_LEN_ACOUNT) return n;
  __u32 dt = 0;
  if (kind == FT_UP_LEN_AMSG)
    bpf_probe_read_user(&dt, sizeof(dt), (const void*)(op_arg(regs, site, 2) + FT_UP_AMSG_DT_OFF));
  else
    dt = (__u32)op_arg(regs, site, (int)FT_UP_LEN_DT_ARG(lenloc));
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
                                         struct pt_regs* regs, __u32 site) {
  if (ctxloc == FT_UP_CTX_NONE) return false;
  const __u32 side = cls & 1;
  struct ft_up_key ek = {.tgid = tgid, .ptr = ep_ptr};
  const struct ft_up_ep* ep = bpf_map_lookup_elem(&up_eps, &ek);
  const bool bound = ep && (ep->bound & (1u << side));
  const bool known = ep && (bound || ep->opened);
  const bool selective = ep && (ep->selective & (1u << side));
  if (msg_ctx_off(ctxloc)) {
    /* (ep, msg, flags), but for two atomic msg ops (FT_UP_CTX_AMSG_FLAGS*). */
    const __u64 flags = op_arg(regs, site,
                               ctxloc == FT_UP_CTX_AMSG_FLAGS6   ? 6
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

/* An op's entry, `cookie` its site's. */
static __always_inline int op_entry(struct pt_regs* regs, __u64 cookie) {
  const __u32 tgid = hit_of(cookie), tid = (__u32)bpf_get_current_pid_tgid();
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
  const __u32 site = FT_UP_SITE(cookie);
  const __u64 sp = op_sp(regs, site);
  /* A call probed on the call it forwards to (ft_site_args) records its
   * callee's stack pointer: that callee's entry, when it is a probed op of
   * its own, is the same call. */
  const struct ft_up_call* outer = bpf_map_lookup_elem(&up_call, &tid);
  if (outer && (sp < outer->sp || (sp == outer->sp && outer->moved)) &&
      bpf_ktime_get_ns() - outer->start < FT_UP_NESTED_MAX_NS)
    return 0;
  const __u32 op = FT_UP_OP(cookie);
  struct ft_up_call c = {};
  c.ep = op_arg(regs, site, 1);
  c.peer = op_peer(regs, site, FT_UP_PEERLOC(cookie));
  c.bytes = op_bytes(regs, site, FT_UP_LENLOC(cookie));
  c.cls = FT_UP_CLASS(cookie) ? FT_UP_RX : FT_UP_TX;
  struct ft_up_stats* s = stats_of(tgid, op, c.ep, c.peer, c.bytes, c.cls == FT_UP_RX);
  if (s) s->calls += 1;
  const __u32 ctxloc = FT_UP_CTXLOC(cookie);
  c.untimed = !op_completes(tgid, c.ep, c.cls, ctxloc, regs, site);
  c.sp = sp;
  c.moved = ft_site_args[site & (FT_UP_MAX_SITES - 1)].moved;
  c.op = op;
  c.site = site;
  c.start = bpf_ktime_get_ns();
  if (c.untimed) {
    /* No completion will come: only its return is waited for (accepted or
     * refused, and the calls it makes inside are not ops). */
    bpf_map_update_elem(&up_call, &tid, &c, BPF_ANY);
    return 0;
  }

  if (FT_UP_CTX_IS_STACK(ctxloc)) c.ctx = op_arg(regs, site, FT_UP_CTX_STACK_ARG(ctxloc));
  switch (ctxloc) {
    case FT_UP_CTX_ARG6:
      c.ctx = op_arg(regs, site, 6);
      break;
    case FT_UP_CTX_ARG7:
      c.ctx = op_arg(regs, site, 7);
      break;
    case FT_UP_CTX_ARG8:
      c.ctx = op_arg(regs, site, 8);
      break;
    default: {
      /* A message (argument 2) keeps it in its ->context field. */
      const __u64 off = msg_ctx_off(ctxloc);
      if (off) c.ctx = read_u64(op_arg(regs, site, 2) + off);
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

SEC("uprobe")
int ft_up_op(struct pt_regs* regs) { return op_entry(regs, bpf_get_attach_cookie(regs)); }

/* The entry of a function ops forward to (struct ft_up_caller_key): the op
 * whose call this is, by the return address on top of the stack; any other
 * caller's is not an op. */
SEC("uprobe")
int ft_up_op_callee(struct pt_regs* regs) {
  if (!ft_up_armed) return 0;
  struct ft_up_caller_key k = {.callee = bpf_get_attach_cookie(regs)};
  k.delta = (__s64)(read_u64(FT_SP(regs)) - bpf_get_func_ip(regs));
  const __u64* cookie = bpf_map_lookup_elem(&up_callers, &k);
  if (!cookie) return 0;
  return op_entry(regs, *cookie);
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

#endif
