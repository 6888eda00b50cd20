#include "userspace/report/job/kernel_rows.h"

#include <arpa/inet.h>

#include <cstdio>
#include <cstring>

#include "common/kernel_classify.h"
#include "common/kernel_explain.h"
#include "common/kernel_log.h"
#include "common/op_kinds.h"
#include "common/uprobe_stats.h"

namespace fabtrace {

namespace {

using kernel_log::record_as;

void kv(std::string* d, const char* key, const std::string& v) {
  if (!d->empty()) *d += ';';
  *d += key;
  *d += '=';
  *d += v;
}
void kv(std::string* d, const char* key, uint64_t v) { kv(d, key, std::to_string(v)); }

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof(b), "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

// A stall's or slow op's breakdown: its span, the verdict, the task that ran instead.
void breakdown_row(const ft_breakdown& w, KernelRow* r) {
  r->start_ns = w.start;
  r->dur_ns = w.end > w.start ? w.end - w.start : 0;
  r->cause = breakdown_verdict(w);
  r->other_pid = w.top[0].pid;
  r->other_comm = record_str(w.top[0].comm, FT_COMM_LEN);
}

// The breakdown's parts and what else it counted, as key=value pairs.
void breakdown_detail(const ft_breakdown& w, std::string* d) {
  for (const BreakdownPart& p : breakdown_parts(w))
    if (p.ns) kv(d, (std::string(p.name) + "_ns").c_str(), p.ns);
  kv(d, "faults", w.faults);
  if (w.faults) kv(d, "faults_bound", faults_bound(w));
  for (const ft_sleep_call& c : w.sleep_calls)
    if (c.ns && c.syscall >= 0) {
      const std::string on = wait_on_name(c.wait_on);
      kv(d, "sleep_in",
         syscall_name(c.syscall) + (on.empty() ? "" : "(" + on + ")") + ":" + std::to_string(c.ns));
    }
  kv(d, "offcpu", w.offcpu_count);
  if (w.migrations) kv(d, "migrations", w.migrations);
  for (int i = 0; i < FT_TOP_TASKS; ++i)
    if (w.top[i].pid)
      kv(d, "ran_instead",
         record_str(w.top[i].comm, FT_COMM_LEN) + "[" + std::to_string(w.top[i].pid) +
             "]:" + std::to_string(w.top[i].ns));
  if (w.flags) kv(d, "flags", w.flags);
}

}  // namespace

std::string record_str(const char* s, size_t n) {
  std::string out;
  for (size_t i = 0; i < n && s[i]; ++i)
    out += (static_cast<unsigned char>(s[i]) >= 0x20 && s[i] != 0x7f) ? s[i] : '?';
  return out;
}

const char* mark_type_name(uint32_t type) {
  switch (type) {
    case FT_MARK_INSTANT:
      return "mark";
    case FT_MARK_BEGIN:
      return "begin";
    case FT_MARK_END:
      return "end";
    default:
      return "?";
  }
}

std::string tuple_side(const ft_tuple& t, bool local) {
  const uint8_t* a = local ? t.saddr : t.daddr;
  const uint16_t port = local ? t.sport : t.dport;
  char b[INET6_ADDRSTRLEN] = "?";
  if (t.family == AF_INET6) {
    inet_ntop(AF_INET6, a, b, sizeof(b));
    return std::string("[") + b + "]:" + std::to_string(port);
  }
  inet_ntop(AF_INET, a, b, sizeof(b));
  return std::string(b) + ":" + std::to_string(port);
}

KernelNames KernelNames::from(const KernelLogReader& r) {
  KernelNames n;
  for (const KernelSymbol& s : r.symbols()) {
    if (s.cls == "drop_reason")
      n.drop_reasons[s.addr] = s.name;
    else if (s.cls != kernel_log::kUprobeSiteClass)  // file offsets of --uprobes, not addresses
      n.functions[s.addr] = s.name;
  }
  return n;
}

KernelRow kernel_row(const ft_hdr& h, const uint8_t* rec, const KernelNames& names) {
  KernelRow r;
  r.ts_ns = r.start_ns = h.ts;
  r.kind = kernel_log::kind_name(h.kind);
  r.cpu = h.cpu;
  r.pid = h.pid;
  r.tid = h.tid;
  auto span = [&r](uint64_t start) {
    r.start_ns = start;
    r.dur_ns = r.ts_ns > start ? r.ts_ns - start : 0;
  };
  switch (h.kind) {
    case FT_EV_OFFCPU: {
      const auto e = record_as<ft_offcpu>(rec);
      span(e.start);
      r.cause = offcpu_cause(e);
      // Who held the CPU while it waited: the longest runner, else the task
      // that took the CPU (preempted) or gave it back.
      const bool by_out = e.off_kind == FT_OFF_PREEMPTED;
      if (e.ran_pid) {
        r.other_pid = e.ran_pid;
        r.other_comm = record_str(e.ran_comm, FT_COMM_LEN);
        kv(&r.detail, "ran_ns", e.ran_ns);
      } else {
        r.other_pid = by_out ? e.out_pid : e.in_pid;
        r.other_comm = record_str(by_out ? e.out_comm : e.in_comm, FT_COMM_LEN);
      }
      if (by_out)
        kv(&r.detail, "taken_by",
           record_str(e.out_comm, FT_COMM_LEN) + "[" + std::to_string(e.out_pid) + "]");
      if (e.wake) kv(&r.detail, "wait_after_wake_ns", h.ts > e.wake ? h.ts - e.wake : 0);
      kv(&r.detail, "cpu_out", e.cpu_out);
      kv(&r.detail, "cpu_in", h.cpu);
      kv(&r.detail, "state", hex(e.prev_state));
      break;
    }
    case FT_EV_IRQ:
    case FT_EV_SOFTIRQ: {
      const auto e = record_as<ft_irq>(rec);
      span(e.start);
      if (h.kind == FT_EV_IRQ) {
        r.cause = record_str(e.name, FT_NAME_LEN);
        kv(&r.detail, "irq", e.irq);
        kv(&r.detail, "class", irq_class_name(classify_irq(r.cause).cls));
      } else {
        r.cause = softirq_name(e.irq);
        kv(&r.detail, "vec", e.irq);
      }
      break;
    }
    case FT_EV_FAULTS: {
      const auto e = record_as<ft_faults>(rec);
      span(e.first);
      r.cause = "page faults";
      kv(&r.detail, "count", e.count);
      kv(&r.detail, "total", e.total);
      kv(&r.detail, "last_addr", hex(e.last_addr));
      break;
    }
    case FT_EV_RETRANS:
    case FT_EV_DROP: {
      const auto e = record_as<ft_net>(rec);
      if (h.kind == FT_EV_RETRANS) {
        r.cause = "retransmit";
      } else {
        const auto it = names.drop_reasons.find(e.reason);
        r.cause =
            it != names.drop_reasons.end() ? it->second : "drop reason " + std::to_string(e.reason);
      }
      kv(&r.detail, "src", tuple_side(e.t, true));
      kv(&r.detail, "dst", tuple_side(e.t, false));
      kv(&r.detail, "owner", e.owner_pid);
      kv(&r.detail, "tcp_state", e.state);
      if (h.kind == FT_EV_RETRANS) kv(&r.detail, "segs", retrans_segments(e));
      if (h.kind == FT_EV_RETRANS && e.reason) kv(&r.detail, "err", e.reason);
      break;
    }
    case FT_EV_WORK: {
      const auto e = record_as<ft_work>(rec);
      span(e.start);
      const auto it = names.functions.find(e.func);
      r.cause = it != names.functions.end() ? it->second : hex(e.func);
      kv(&r.detail, "class", cxi_work_class(r.cause));
      break;
    }
    case FT_EV_CXI_ERR: {
      const auto e = record_as<ft_cxi_err>(rec);
      r.cause = "cass_err";
      kv(&r.detail, "csr_flag", e.csr_flag);
      kv(&r.detail, "bit", e.bit);
      char t[48];  // seconds and nanoseconds: "1700000000.000000005"
      std::snprintf(t, sizeof(t), "%llu.%09llu", static_cast<unsigned long long>(e.sec),
                    static_cast<unsigned long long>(e.nsec));
      kv(&r.detail, "hw_time", t);
      break;
    }
    case FT_EV_THREAD: {
      const auto e = record_as<ft_thread>(rec);
      r.cause = "first fabric activity";
      r.other_comm = record_str(e.comm, FT_COMM_LEN);
      kv(&r.detail, "rank", record_str(e.rank, FT_RANK_LEN));
      break;
    }
    case FT_EV_STALL: {
      const auto e = record_as<ft_stall>(rec);
      breakdown_row(e.w, &r);
      kv(&r.detail, "cq", e.cq);
      breakdown_detail(e.w, &r.detail);
      break;
    }
    case FT_EV_SLOW_OP:
    case FT_EV_OP_ERROR: {
      const auto e = record_as<ft_op>(rec);
      breakdown_row(e.w, &r);
      kv(&r.detail, "op", e.op < kOpKindCount ? op_name(static_cast<OpKind>(e.op)) : "?");
      kv(&r.detail, "bytes", e.bytes);
      kv(&r.detail, "local", record_str(e.local, FT_ADDR_LEN));
      kv(&r.detail, "remote", record_str(e.remote, FT_ADDR_LEN));
      if (h.kind == FT_EV_OP_ERROR) {
        kv(&r.detail, "err", std::to_string(e.err));
        if (!op_error_valid(e.err)) r.cause = "malformed error code (not explained)";
      }
      breakdown_detail(e.w, &r.detail);
      break;
    }
    case FT_EV_POLL: {
      const auto e = record_as<ft_poll>(rec);
      span(e.enter);
      r.cause = "poll";
      kv(&r.detail, "cq", e.cq);
      kv(&r.detail, "ret", std::to_string(e.ret));
      kv(&r.detail, "polls", e.polls);
      kv(&r.detail, "busy_ns", e.busy_ns);
      break;
    }
    case FT_EV_MARK: {
      // The name goes in `cause` (a quoted CSV field): an application's string
      // may hold the detail column's separators.
      const auto e = record_as<ft_mark>(rec);
      r.cause = record_str(e.name, FT_MARK_NAME_LEN);
      kv(&r.detail, "type", mark_type_name(e.type));
      break;
    }
    case FT_EV_EXIT: {
      const auto e = record_as<ft_exit>(rec);
      r.cause = "exit";
      r.other_comm = record_str(e.comm, FT_COMM_LEN);
      kv(&r.detail, "faults_total", e.faults_total);
      break;
    }
    case FT_EV_UPROBE_OPS: {
      const auto e = record_as<ft_uprobe_ops>(rec);
      r.cause = uprobe_op_name(e.op);
      r.detail = uprobe_stats_detail(e);
      break;
    }
    case FT_EV_UPROBE_CQ: {
      const auto e = record_as<ft_uprobe_cq>(rec);
      r.cause = "cq_polls";
      r.detail = uprobe_cq_detail(e);
      break;
    }
    case FT_EV_SUMMARY: {
      // The sums of one thread's raw events of one kind and cause since its
      // previous summary: the cause as its raw events' rows name it.
      const auto e = record_as<ft_summary>(rec);
      std::string cause;
      switch (e.of) {
        case FT_EV_OFFCPU: {
          ft_offcpu o{};
          o.off_kind = e.off_kind;
          o.wait_on = e.wait_on;
          o.syscall = e.code;
          cause = offcpu_cause(o);
          break;
        }
        case FT_EV_IRQ:
          cause = record_str(e.name, FT_NAME_LEN);
          break;
        case FT_EV_SOFTIRQ:
          cause = softirq_name(static_cast<uint32_t>(e.code));
          break;
        case FT_EV_WORK: {
          const auto it = names.functions.find(e.func);
          cause = it != names.functions.end() ? it->second : hex(e.func);
          break;
        }
        default:
          break;
      }
      r.cause = kernel_log::kind_name(e.of) + (cause.empty() ? "" : " " + cause);
      kv(&r.detail, "of", kernel_log::kind_name(e.of));
      kv(&r.detail, "count", e.count);
      kv(&r.detail, "ns", e.ns);
      if (e.of == FT_EV_FAULTS) kv(&r.detail, "faults", e.faults);
      if (e.self_count) {
        kv(&r.detail, "collector_took", e.self_count);
        kv(&r.detail, "collector_held_ns", e.self_ns);
      }
      break;
    }
    default:
      break;
  }
  return r;
}

}  // namespace fabtrace
