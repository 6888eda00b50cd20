/* A tc (clsact egress) filter for the record tests' packet loss: drops the TCP
 * data segments number 200, 400, ..., 1000 that leave the interface, and
 * nothing else. netem is not built into the kernels here; this plants a known
 * number of losses inside a network namespace the test made for itself. */
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
  if (payload <= 0) return TC_ACT_OK;
  __u32 k = 0;
  __u64* seen = bpf_map_lookup_elem(&counts, &k);
  k = 1;
  __u64* dropped = bpf_map_lookup_elem(&counts, &k);
  if (!seen || !dropped) return TC_ACT_OK;
  const __u64 n = __sync_fetch_and_add(seen, 1) + 1;
  if (n % DROP_EVERY == 0 && *dropped < DROPS) {
    __sync_fetch_and_add(dropped, 1);
    return TC_ACT_SHOT;
  }
  return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "GPL";
