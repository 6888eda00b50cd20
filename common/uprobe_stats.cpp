#include "common/uprobe_stats.h"

#include <cstdio>

#include "bpf/uprobe_ops.h"
#include "common/op_kinds.h"

namespace fabtrace {

std::string uprobe_op_name(uint32_t op) {
  if (op == FT_UP_OP_POLLS) return "cq_read";
  if (op < static_cast<uint32_t>(kOpKindCount)) return op_name(static_cast<OpKind>(op));
  return "op" + std::to_string(op);
}

void add_uprobe_stats(ft_up_stats* into, const ft_up_stats& c) {
  ft_up_stats& r = *into;
  r.calls += c.calls;
  r.refused += c.refused;
  r.eagain += c.eagain;
  r.untimed += c.untimed;
  r.untimed_bytes += c.untimed_bytes;
  r.completions += c.completions;
  r.by_order += c.by_order;
  r.bytes += c.bytes;
  r.lat_sum_ns += c.lat_sum_ns;
  if (c.lat_min_ns && (!r.lat_min_ns || c.lat_min_ns < r.lat_min_ns)) r.lat_min_ns = c.lat_min_ns;
  if (c.lat_max_ns > r.lat_max_ns) r.lat_max_ns = c.lat_max_ns;
  r.unmatched += c.unmatched;
  r.unwalked += c.unwalked;
  r.early += c.early;
  r.remote += c.remote;
  for (int b = 0; b < FT_UP_HIST; ++b) r.hist[b] += c.hist[b];
}

uint32_t uprobe_hist_bucket(uint64_t ns) { return ft_up_hist_bucket(ns); }

uint64_t uprobe_hist_quantile(const ft_up_stats& s, double q) {
  uint64_t total = 0;
  for (uint64_t n : s.hist) total += n;
  if (!total) return 0;
  const double want = q * static_cast<double>(total);
  uint64_t seen = 0;
  for (uint32_t i = 0; i < FT_UP_HIST; ++i) {
    seen += s.hist[i];
    if (static_cast<double>(seen) >= want && s.hist[i]) return 2ULL << i;
  }
  return 2ULL << (FT_UP_HIST - 1);
}

std::string uprobe_stats_detail(const ft_uprobe_ops& r) {
  std::string d;
  auto kv = [&d](const char* k, uint64_t v) {
    if (!d.empty()) d += ';';
    d += k;
    d += '=';
    d += std::to_string(v);
  };
  const ft_up_stats& s = r.s;
  if (r.op != FT_UP_OP_POLLS) {
    char ep[32];
    std::snprintf(ep, sizeof(ep), "0x%llx", static_cast<unsigned long long>(r.ep));
    d = std::string("ep=") + ep +
        ";peer=" + (r.peer == FT_UP_ADDR_UNSPEC ? std::string("any") : std::to_string(r.peer));
  }
  kv("calls", s.calls);
  if (r.op == FT_UP_OP_POLLS) {
    kv("entries", s.completions);
    kv("unmatched", s.unmatched);
    kv("unwalked", s.unwalked);
    kv("early", s.early);
    kv("remote", s.remote);
    return d;
  }
  kv("refused", s.refused);
  kv("eagain", s.eagain);
  kv("completions", s.completions);
  kv("untimed", s.untimed);
  kv("untimed_bytes", s.untimed_bytes);
  kv("by_order", s.by_order);
  kv("bytes", s.bytes);
  kv("size_class", r.size_class);
  if (r.posted) kv("posted", 1);
  kv("pending", r.pending);
  kv("unmatched", s.unmatched);
  if (s.completions) {
    kv("avg_ns", s.lat_sum_ns / s.completions);
    kv("min_ns", s.lat_min_ns);
    kv("max_ns", s.lat_max_ns);
    kv("p50_le_ns", uprobe_hist_quantile(s, 0.5));
    kv("p99_le_ns", uprobe_hist_quantile(s, 0.99));
  }
  return d;
}

std::string uprobe_cq_detail(const ft_uprobe_cq& r) {
  char cq[32];
  std::snprintf(cq, sizeof(cq), "0x%llx", static_cast<unsigned long long>(r.cq));
  std::string d = std::string("cq=") + cq;
  auto kv = [&d](const std::string& k, uint64_t v) { d += ";" + k + "=" + std::to_string(v); };
  kv("opened", r.opened);
  kv("polls", r.polls);
  for (int i = 0; i < FT_UP_GAP_CLASSES; ++i) kv("gaps" + std::to_string(i), r.gaps[i]);
  kv("max_gap_ns", r.max_gap_ns);
  kv("max_gap_end", r.max_gap_end);
  return d;
}

}  // namespace fabtrace
