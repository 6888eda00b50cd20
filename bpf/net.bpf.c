// SPDX-License-Identifier: (BSD-3-Clause OR GPL-2.0-only)
/* Network, the analogue of link retries for the TCP-based providers: segments
 * retransmitted (tcp:tcp_retransmit_skb) and packets dropped (skb:kfree_skb, with
 * the kernel's drop reason) on the traced processes' sockets, each with the
 * connection's 4-tuple so that the report can put it on its link.
 *
 * Whose socket is it? Retransmits and drops run in softirq or timer context, so
 * the current task says nothing. The `traced_socks` map (key: the 4-tuple) holds
 * the traced processes' connections: filled here when a connection a traced
 * task started is established (the task is known at SYN_SENT, the tuple only
 * once the source port is chosen), when a connection is accepted on a port a
 * traced process listens on (its listen() registers the port), when a traced
 * process accepts one (the socket behind the descriptor accept returns), and by
 * the collector from /proc for connections older than the session: so the
 * first segment of a new connection is already on its owner's link. Events on other sockets are
 * only counted, unless the collector asks for every one (--net-all). */
#include "fabtrace_common.bpf.h"

#define FT_AF_INET 2
#define FT_AF_INET6 10
#define FT_IPPROTO_TCP 6

const volatile bool ft_net_all = false;

/* Local ports traced processes listen on (filled by the collector's scan and
 * at listen()). Room for every port (its memory taken as entries come): one
 * process listening on thousands of ports cannot fill it and leave the
 * others' listeners unknown. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __uint(max_entries, 65536);
  __type(key, __u16);
  __type(value, __u32);
} traced_ports SEC(".maps");

/* Connections a traced task started, by socket, until they are established:
 * at SYN_SENT (the caller's context) the source port is not chosen yet
 * (tcp_v4_connect sets the state before inet_hash_connect), and when the
 * SYN-ACK makes it ESTABLISHED the context is a softirq's. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, FT_MAX_SOCKS);
  __type(key, __u64);
  __type(value, __u32);
} connecting SEC(".maps");

static __always_inline bool tuple_of(const struct sock* sk, struct ft_tuple* t) {
  __builtin_memset(t, 0, sizeof(*t));
  t->family = BPF_CORE_READ(sk, __sk_common.skc_family);
  t->sport = BPF_CORE_READ(sk, __sk_common.skc_num);
  t->dport = __builtin_bswap16(BPF_CORE_READ(sk, __sk_common.skc_dport));
  if (t->family == FT_AF_INET) {
    __u32 s = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
    __u32 d = BPF_CORE_READ(sk, __sk_common.skc_daddr);
    __builtin_memcpy(t->saddr, &s, 4);
    __builtin_memcpy(t->daddr, &d, 4);
    return true;
  }
  if (t->family == FT_AF_INET6) {
    BPF_CORE_READ_INTO(&t->saddr, sk, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8);
    BPF_CORE_READ_INTO(&t->daddr, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr8);
    return true;
  }
  return false;
}

static __always_inline void emit(const struct sock* sk, __u16 kind, __u32 reason, __u32 segs) {
  struct ft_tuple t;
  if (!sk || !tuple_of(sk, &t)) return;
  __u32* owner = bpf_map_lookup_elem(&traced_socks, &t);
  if (!owner) {
    /* a traced task's connect still in its handshake: its SYN sent again */
    const __u64 key = (__u64)sk;
    owner = bpf_map_lookup_elem(&connecting, &key);
  }
  if (!owner && !ft_net_all) {
    ft_count(kind == FT_EV_DROP ? FT_CNT_UNTRACED_DROP : FT_CNT_UNTRACED_RETRANS);
    return;
  }
  struct ft_net* r = ft_reserve(sizeof(*r), kind, bpf_ktime_get_ns(), owner ? *owner : 0, 0);
  if (!r) return;
  r->t = t;
  r->state = BPF_CORE_READ(sk, __sk_common.skc_state);
  r->protocol = BPF_CORE_READ_BITFIELD_PROBED(sk, sk_protocol);
  r->reason = reason;
  r->owner_pid = owner ? *owner : 0;
  r->segs = segs;
  r->h.tid = 0;
  ft_submit(r);
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(ft_tcp_retransmit, const struct sock* sk, const struct sk_buff* skb, int err) {
  /* The tracepoint also fires when nothing was sent: a negative err is an
   * early exit (the skb still in the host's queue, no memory, outside the
   * window, no route), before the kernel counts the segments. A positive one
   * (a qdisc that dropped it) was sent again as far as TCP knows. */
  if (err < 0) return 0;
  /* tcp_skb_pcount(): the segments this skb carries (TSO/GSO), what the
   * kernel adds to RetransSegs for it. */
  const struct tcp_skb_cb* cb = (const struct tcp_skb_cb*)__builtin_preserve_access_index(&skb->cb);
  const __u16 segs = BPF_CORE_READ(cb, tcp_gso_segs);
  emit(sk, FT_EV_RETRANS, (__u32)err, segs ? segs : 1);
  return 0;
}

SEC("tp_btf/kfree_skb")
int BPF_PROG(ft_kfree_skb, struct sk_buff* skb, void* location, enum skb_drop_reason reason,
             struct sock* rx_sk) {
  if (reason <= SKB_CONSUMED) return 0;
  const struct sock* sk = rx_sk ? rx_sk : BPF_CORE_READ(skb, sk);
  emit(sk, FT_EV_DROP, (__u32)reason, 0);
  return 0;
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(ft_sock_state, const struct sock* sk, const int oldstate, const int newstate) {
  if (BPF_CORE_READ_BITFIELD_PROBED(sk, sk_protocol) != FT_IPPROTO_TCP) return 0;
  const __u64 key = (__u64)sk;
  struct ft_tuple t;
  if (newstate == TCP_SYN_SENT) {
    /* connect() runs in the caller's context */
    const __u32 tgid = ft_cur_tgid();
    if (ft_is_traced(tgid)) bpf_map_update_elem(&connecting, &key, &tgid, BPF_ANY);
    return 0;
  }
  if (!tuple_of(sk, &t)) return 0;
  if (newstate == TCP_LISTEN) {
    /* listen() runs in the caller's context; the port is bound by then (bind,
     * or listen's own autobind before it sets the state) when it is not 0 */
    const __u32 tgid = ft_cur_tgid();
    if (t.sport && ft_is_traced(tgid)) bpf_map_update_elem(&traced_ports, &t.sport, &tgid, BPF_ANY);
  } else if (newstate == TCP_ESTABLISHED && oldstate == TCP_SYN_SENT) {
    /* our own connect answered: the tuple is complete now */
    __u32* owner = bpf_map_lookup_elem(&connecting, &key);
    if (owner) {
      const __u32 tgid = *owner;
      bpf_map_update_elem(&traced_socks, &t, &tgid, BPF_ANY);
      bpf_map_delete_elem(&connecting, &key);
    }
  } else if (newstate == TCP_ESTABLISHED && oldstate == TCP_SYN_RECV) {
    /* a connection accepted on a traced listener's port (softirq context) */
    __u32* owner = bpf_map_lookup_elem(&traced_ports, &t.sport);
    if (owner) bpf_map_update_elem(&traced_socks, &t, owner, BPF_ANY);
  } else if (newstate == TCP_CLOSE) {
    if (oldstate == TCP_LISTEN) {
      bpf_map_delete_elem(&traced_ports, &t.sport);
    } else {
      bpf_map_delete_elem(&connecting, &key); /* a connect that failed */
      bpf_map_delete_elem(&traced_socks, &t);
    }
  }
  return 0;
}

/* accept() and accept4() of a traced process: the new descriptor's socket. */
static __always_inline int accepted(long fd) {
  if (fd < 0) return 0;
  const __u32 tgid = ft_cur_tgid();
  if (!ft_is_traced(tgid)) return 0;
  struct task_struct* task = (struct task_struct*)bpf_get_current_task();
  struct fdtable* fdt = BPF_CORE_READ(task, files, fdt);
  if (!fdt || (unsigned long)fd >= BPF_CORE_READ(fdt, max_fds)) return 0;
  struct file** fds = BPF_CORE_READ(fdt, fd);
  struct file* f = 0;
  bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
  if (!f) return 0;
  struct socket* so = (struct socket*)BPF_CORE_READ(f, private_data);
  if (!so) return 0;
  struct sock* sk = BPF_CORE_READ(so, sk);
  struct ft_tuple t;
  if (!sk || !tuple_of(sk, &t)) return 0;
  bpf_map_update_elem(&traced_socks, &t, &tgid, BPF_ANY);
  return 0;
}

SEC("tracepoint/syscalls/sys_exit_accept4")
int ft_accept4_exit(struct trace_event_raw_sys_exit* ctx) { return accepted(ctx->ret); }

SEC("tracepoint/syscalls/sys_exit_accept")
int ft_accept_exit(struct trace_event_raw_sys_exit* ctx) { return accepted(ctx->ret); }
