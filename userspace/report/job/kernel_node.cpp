#include "userspace/report/job/kernel_node.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <tuple>

#include "common/input_limits.h"
#include "common/kernel_classify.h"
#include "common/kernel_explain.h"
#include "common/kernel_log.h"
#include "userspace/report/job/kernel_rows.h"

namespace fabtrace::report {

namespace {

using kernel_log::record_as;

bool longer(const KernelExplanation& a, const KernelExplanation& b) {
  return a.dur_ns() > b.dur_ns();
}

// Keeps the `cap` longest stalls or slow ops of a stream in a min-heap (by duration).
void keep_longest(std::vector<KernelExplanation>* heap, KernelExplanation w, size_t cap) {
  if (heap->size() < cap) {
    heap->push_back(std::move(w));
    std::push_heap(heap->begin(), heap->end(), longer);
  } else if (!heap->empty() && w.dur_ns() > heap->front().dur_ns()) {
    std::pop_heap(heap->begin(), heap->end(), longer);
    heap->back() = std::move(w);
    std::push_heap(heap->begin(), heap->end(), longer);
  }
}

// A stall or slow op record's breakdown with its verdict.
KernelExplanation explain_breakdown(const ft_hdr& h, const ft_breakdown& w) {
  KernelExplanation k;
  k.kind = h.kind;
  k.pid = h.pid;
  k.tid = h.tid;
  k.cpu = h.cpu;
  k.w = w;
  k.verdict = breakdown_verdict(w);
  return k;
}

using ConnKey = std::tuple<std::string, uint32_t>;  // tuple bytes, owner

void add(KernelLoad* l, uint64_t ns, uint64_t count = 1) {
  l->ns += ns;
  l->count += count;
}

}  // namespace

bool load_kernel_node(const std::string& path, KernelNode* node, std::string* why) {
  KernelLogReader r;
  std::string err;
  if (!r.open(path, &err)) {
    *why = err;
    return false;
  }
  // First pass: the names (symbols may follow the events they name).
  if (!r.read_all([](const ft_hdr&, const uint8_t*) {}, &err)) {
    *why = err;
    return false;
  }
  const KernelNames names = KernelNames::from(r);
  KernelNode n;
  n.path = path;
  n.meta = r.meta();
  n.host = n.meta.host;
  std::map<std::pair<uint32_t, uint64_t>, std::vector<KernelExplanation>> stalls;
  std::map<ConnKey, KernelConn> conns;
  // A log with the collector's sums of the raw events takes its totals from
  // them: its raw records are only those the bound left (all, some or none).
  const auto so = n.meta.options.find(kernel_log::kSummaryOption);
  n.summed = so != n.meta.options.end() && so->second == "1";
  // A keyed total, its key new only while the map is within its bound.
  auto load_of = [&n](auto& m, const auto& key, size_t bound) -> KernelLoad* {
    const auto it = m.find(key);
    if (it != m.end()) return &it->second;
    if (m.size() >= bound) {
      ++n.over_bounds;
      return nullptr;
    }
    return &m[key];
  };
  auto net = [&](const ft_hdr& h, const uint8_t* rec) {
    const auto e = record_as<ft_net>(rec);
    const uint64_t k = h.kind == FT_EV_RETRANS ? retrans_segments(e) : 1;
    (h.kind == FT_EV_RETRANS ? n.retrans : n.drops) += k;
    const ConnKey key{std::string(reinterpret_cast<const char*>(&e.t), sizeof(e.t)), e.owner_pid};
    auto it = conns.find(key);
    if (it == conns.end()) {
      if (conns.size() >= kKernelConnections) {
        ++n.conns_dropped;
        return;
      }
      KernelConn c;
      c.t = e.t;
      c.owner = e.owner_pid;
      c.first_ns = h.ts;
      it = conns.emplace(key, c).first;
    }
    (h.kind == FT_EV_RETRANS ? it->second.retrans : it->second.drops) += k;
    it->second.last_ns = h.ts;
  };
  // The loads, from one raw record or from one summary of some (its `of` kind).
  auto irq_load = [&](uint16_t kind, uint32_t cpu, const std::string& name, uint64_t ns,
                      uint64_t count) {
    if (kind == FT_EV_IRQ) {
      if (KernelLoad* l = load_of(n.irq_per_cpu, cpu, kKernelCpus)) add(l, ns, count);
      if (KernelLoad* l = load_of(n.irq_by_name, name, kKernelIrqNames)) add(l, ns, count);
    } else if (KernelLoad* l = load_of(n.softirq_per_cpu, cpu, kKernelCpus)) {
      add(l, ns, count);
    }
  };
  auto offcpu_load = [&](const ft_offcpu& e, uint64_t ns, uint64_t count) {
    // A cause names the syscall ("sleep:syscall 4242" for one without a
    // name): as many as a crafted log has numbers, so bounded too.
    if (KernelLoad* l = load_of(n.offcpu_by_cause, offcpu_cause(e), kKernelCauses))
      add(l, ns, count);
  };
  auto work_load = [&](uint64_t func, uint64_t ns, uint64_t count) {
    const auto f = names.functions.find(func);
    const std::string cls = f != names.functions.end() ? cxi_work_class(f->second) : "";
    add(&n.cxi_work[cls.empty() ? "other" : cls], ns, count);
  };
  auto raw = [&](const ft_hdr& h, const uint8_t* rec) {
    switch (h.kind) {
      case FT_EV_IRQ:
      case FT_EV_SOFTIRQ: {
        const auto e = record_as<ft_irq>(rec);
        irq_load(h.kind, h.cpu, record_str(e.name, FT_NAME_LEN),
                 h.ts > e.start ? h.ts - e.start : 0, 1);
        break;
      }
      case FT_EV_OFFCPU: {
        const auto e = record_as<ft_offcpu>(rec);
        offcpu_load(e, h.ts > e.start ? h.ts - e.start : 0, 1);
        break;
      }
      case FT_EV_FAULTS:
        n.faults += record_as<ft_faults>(rec).count;
        break;
      case FT_EV_WORK: {
        const auto e = record_as<ft_work>(rec);
        work_load(e.func, h.ts > e.start ? h.ts - e.start : 0, 1);
        break;
      }
      default:
        break;
    }
  };
  auto summary = [&](const ft_hdr& h, const ft_summary& e) {
    if (!count_ok(e.count) || !count_ok(e.faults)) {
      ++n.malformed;
      return;
    }
    switch (e.of) {
      case FT_EV_IRQ:
      case FT_EV_SOFTIRQ:
        irq_load(e.of, h.cpu, record_str(e.name, FT_NAME_LEN), e.ns, e.count);
        break;
      case FT_EV_OFFCPU: {
        ft_offcpu o{};
        o.off_kind = e.off_kind;
        o.wait_on = e.wait_on;
        o.syscall = e.code;
        offcpu_load(o, e.ns, e.count);
        n.collector_took += e.self_count;
        n.collector_held_ns += e.self_ns;
        break;
      }
      case FT_EV_FAULTS:
        n.faults += e.faults;
        break;
      case FT_EV_WORK:
        work_load(e.func, e.ns, e.count);
        break;
      default:
        break;
    }
  };
  const bool ok = r.read_all(
      [&](const ft_hdr& h, const uint8_t* rec) {
        if (!n.first_ns || h.ts < n.first_ns) n.first_ns = h.ts;
        n.last_ns = std::max<uint64_t>(n.last_ns, h.ts);
        switch (h.kind) {
          case FT_EV_STALL: {
            const auto e = record_as<ft_stall>(rec);
            if (!breakdown_valid(e.w)) {
              ++n.malformed;
              break;
            }
            const std::pair<uint32_t, uint64_t> key{h.pid, e.cq};
            auto it = stalls.find(key);
            if (it == stalls.end()) {
              if (stalls.size() >= kKernelStallKeys) {
                ++n.over_bounds;
                break;
              }
              it = stalls.emplace(key, std::vector<KernelExplanation>()).first;
            }
            KernelExplanation k = explain_breakdown(h, e.w);
            k.cq = e.cq;
            keep_longest(&it->second, std::move(k), kKernelStallsPerCq);
            break;
          }
          case FT_EV_SLOW_OP:
          case FT_EV_OP_ERROR: {
            const auto e = record_as<ft_op>(rec);
            if (!breakdown_valid(e.w) || (h.kind == FT_EV_OP_ERROR && !op_error_valid(e.err))) {
              ++n.malformed;
              break;
            }
            KernelExplanation k = explain_breakdown(h, e.w);
            k.op = e.op;
            k.bytes = e.bytes;
            k.err = e.err;
            k.local = record_str(e.local, FT_ADDR_LEN);
            k.remote = record_str(e.remote, FT_ADDR_LEN);
            if (h.kind == FT_EV_SLOW_OP)
              keep_longest(&n.slow_ops, std::move(k), kKernelSlowOps);
            else if (n.op_errors.size() < kKernelOpErrors)
              n.op_errors.push_back(std::move(k));
            break;
          }
          case FT_EV_RETRANS:
          case FT_EV_DROP:
            net(h, rec);
            break;
          case FT_EV_IRQ:
          case FT_EV_SOFTIRQ:
          case FT_EV_OFFCPU:
          case FT_EV_FAULTS:
          case FT_EV_WORK:
            if (!n.summed) raw(h, rec);
            break;
          case FT_EV_SUMMARY:
            if (n.summed) summary(h, record_as<ft_summary>(rec));
            break;
          case FT_EV_CXI_ERR:
            ++n.cxi_errors;
            break;
          default:
            break;
        }
      },
      &err);
  if (!ok) {
    *why = err;
    return false;
  }
  for (auto& kv : stalls)
    for (KernelExplanation& w : kv.second) n.stalls.push_back(std::move(w));
  std::stable_sort(n.stalls.begin(), n.stalls.end(), longer);
  std::sort_heap(n.slow_ops.begin(), n.slow_ops.end(), longer);
  for (auto& kv : conns) n.conns.push_back(kv.second);
  std::stable_sort(n.conns.begin(), n.conns.end(), [](const KernelConn& a, const KernelConn& b) {
    return a.retrans + a.drops > b.retrans + b.drops;
  });
  n.stats = r.stats();
  n.truncated = r.truncated();
  n.ended = r.has_end();
  n.records = r.records_read();
  n.bad_records = r.bad_records();
  n.tasks = r.tasks();
  *node = std::move(n);
  return true;
}

}  // namespace fabtrace::report
