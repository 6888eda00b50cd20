// SPDX-License-Identifier: (BSD-3-Clause OR GPL-2.0-only)
/* A tc (clsact egress) filter for the record tests' packet loss: drops the TCP
 * data segments number 200, 400, ..., 1000 that leave the interface, and
 * nothing else. netem is not built into the kernels here; this plants a known
 * number of losses inside a network namespace the test made for itself.
 *
 * It is also the test's ground truth for retransmits, per connection: a data
 * segment that starts below the highest sequence number its direction has
 * already put on the wire is a retransmit. A segment this filter dropped never
 * left: TCP sees the error and keeps it as unsent, and sends it again as new
 * data, not as a retransmit, so a dropped segment does not move the mark.
 * What counts is what TCP's own tcp_retransmit_skb reports: the segments
 * (gso_segs) of every skb sent again, whether or not this filter then drops it. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/tcp.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define DROP_EVERY 200
#define DROPS 5

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 2); /* 0: data segments seen, 1: dropped */
  __type(key, __u32);
  __type(value, __u64);
} counts SEC(".maps");

/* One direction of a connection, as its sender sees it (host byte order ports). */
struct flow {
  __u32 saddr, daddr;
  __u16 sport, dport;
};
struct flow_state {
  __u32 wire_end; /* the highest sequence number past a segment put on the wire */
  __u32 pad;
  __u64 retrans_segs;
};
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 256);
  __type(key, struct flow);
  __type(value, struct flow_state);
} flows SEC(".maps");

SEC("tc")
int drop_some(struct __sk_buff* skb) {
  void* data = (void*)(long)skb->data;
  void* end = (void*)(long)skb->data_end;
  struct ethhdr* eth = data;
  if ((void*)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP)) return TC_ACT_OK;
  struct iphdr* ip = (void*)(eth + 1);
  if ((void*)(ip + 1) > end || ip->protocol != IPPROTO_TCP) return TC_ACT_OK;
  struct tcphdr* tcp = (void*)ip + ip->ihl * 4;
  if ((void*)(tcp + 1) > end) return TC_ACT_OK;
  const int payload = bpf_ntohs(ip->tot_len) - ip->ihl * 4 - tcp->doff * 4;
  /* The handshake is not counted: a SYN or SYN-ACK sent again belongs to no
   * connection yet. Data and FIN take sequence numbers; pure ACKs, keepalives
   * and window probes take none and are never retransmits. */
  if (tcp->syn) return TC_ACT_OK;
  const __u32 seq_len = (payload > 0 ? (__u32)payload : 0) + tcp->fin;
  if (!seq_len) return TC_ACT_OK;
  __u32 k = 0;
  __u64* seen = bpf_map_lookup_elem(&counts, &k);
  k = 1;
  __u64* dropped = bpf_map_lookup_elem(&counts, &k);
  if (!seen || !dropped) return TC_ACT_OK;
  struct flow f = {ip->saddr, ip->daddr, bpf_ntohs(tcp->source), bpf_ntohs(tcp->dest)};
  const __u32 seq = bpf_ntohl(tcp->seq);
  const __u32 seq_end = seq + seq_len;
  struct flow_state* st = bpf_map_lookup_elem(&flows, &f);
  if (st && (__s32)(seq - st->wire_end) < 0)
    __sync_fetch_and_add(&st->retrans_segs, skb->gso_segs ? skb->gso_segs : 1);

  if (payload <= 0) goto sent; /* only data segments are numbered and dropped */
  const __u64 n = __sync_fetch_and_add(seen, 1) + 1;
  if (n % DROP_EVERY == 0 && *dropped < DROPS) {
    __sync_fetch_and_add(dropped, 1);
    return TC_ACT_SHOT;
  }
sent:
  if (!st) {
    struct flow_state fresh = {seq_end, 0, 0};
    bpf_map_update_elem(&flows, &f, &fresh, BPF_NOEXIST);
  } else if ((__s32)(seq_end - st->wire_end) > 0) {
    st->wire_end = seq_end; /* one sender per direction: its socket lock orders these */
  }
  return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
