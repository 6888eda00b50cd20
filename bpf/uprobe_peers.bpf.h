// SPDX-License-Identifier: (BSD-3-Clause OR GPL-2.0-only)
/* What the endpoints and the peers are: AV inserts, endpoint names, and the
 * connected (FI_EP_MSG) endpoints' one peer.
 * A part of uprobe_ops.bpf.c, which includes it once: the parts are one BPF
 * object, so that they share its maps. */
#ifndef FABTRACE_UPROBE_PEERS_BPF_H
#define FABTRACE_UPROBE_PEERS_BPF_H

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

#endif
