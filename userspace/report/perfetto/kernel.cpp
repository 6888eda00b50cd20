#include "userspace/report/perfetto/kernel.h"

#include <cstring>
#include <map>

#include "common/kernel_explain.h"
#include "common/kernel_log.h"
#include "common/op_kinds.h"
#include "userspace/report/job/kernel_rows.h"

namespace fabtrace::report {

namespace {

// Upper bounds of what a packet adds, for the caller's file splitting.
constexpr size_t kEventBytes = 512;
constexpr size_t kDescriptorBytes = 256;

using kernel_log::record_as;

struct Track {
  uint64_t uuid = 0;
  uint32_t gen = 0;
  std::string name;
  int32_t order = 0;
};

// An explained stall's window on one thread, and the flow that ends at it.
struct StallFlow {
  uint64_t start, end, flow;
};

class KernelTracks {
 public:
  KernelTracks(const KernelNode& n, const Job& job, KernelTraceContext& ctx, KernelTraceStats* st)
      : n_(n), ctx_(ctx), st_(st) {
    node_.uuid = (*ctx_.next_uuid)++;
    node_.name = "kernel (" + n.host + ")";
    for (const KernelTask& t : n.tasks) comm_[static_cast<uint32_t>(t.tid)] = t.comm;
    for (const Rank& r : job.ranks)
      if (r.host() == n.host) rank_of_[static_cast<uint32_t>(r.pid())] = r.rank();
    for (const Stall& s : job.stalls)
      if (s.host == n.host && s.has_cause)
        flows_[s.cause.tid].push_back({s.cause.w.start, s.cause.w.end, stall_flow_id(s)});
  }

  bool record(const ft_hdr& h, const uint8_t* rec, const KernelNames& names) {
    switch (h.kind) {
      case FT_EV_OFFCPU:
        return offcpu(h, record_as<ft_offcpu>(rec));
      case FT_EV_IRQ:
      case FT_EV_SOFTIRQ: {
        const auto e = record_as<ft_irq>(rec);
        const bool hard = h.kind == FT_EV_IRQ;
        Track& t = track((hard ? "irq" : "soft") + std::to_string(h.cpu),
                         "cpu" + std::to_string(h.cpu) + (hard ? " IRQs" : " softirqs"),
                         static_cast<int32_t>(1000000 + 2 * h.cpu + (hard ? 0 : 1)));
        const std::string name = hard ? record_str(e.name, FT_NAME_LEN) : softirq_name(e.irq);
        return slice(t, e.start, h.ts, name, nullptr, 0, {});
      }
      case FT_EV_RETRANS:
      case FT_EV_DROP: {
        const auto e = record_as<ft_net>(rec);
        // One skb sent again can carry several segments (TSO); say how many.
        const uint32_t segs = retrans_segments(e);
        std::string what =
            segs > 1 ? "retransmit " + std::to_string(segs) + " segments" : "retransmit";
        if (h.kind == FT_EV_DROP) {
          const auto it = names.drop_reasons.find(e.reason);
          what = "drop " + (it != names.drop_reasons.end() ? it->second : std::to_string(e.reason));
        }
        return instant(track("net", "network", 2000000), h.ts,
                       what + " " + tuple_side(e.t, true) + " -> " + tuple_side(e.t, false) +
                           (e.owner_pid ? " (pid " + std::to_string(e.owner_pid) + ")" : ""));
      }
      case FT_EV_CXI_ERR: {
        const auto e = record_as<ft_cxi_err>(rec);
        return instant(
            track("cxi", "cxi driver", 2000001), h.ts,
            "cass_err csr " + std::to_string(e.csr_flag) + " bit " + std::to_string(e.bit));
      }
      case FT_EV_WORK: {
        const auto e = record_as<ft_work>(rec);
        const auto f = names.functions.find(e.func);
        return slice(track("cxi", "cxi driver", 2000001), e.start, h.ts,
                     f != names.functions.end() ? f->second : "cxi work", nullptr, 0, {});
      }
      case FT_EV_FAULTS: {
        const auto e = record_as<ft_faults>(rec);
        return instant(thread_track(h.pid, h.tid), h.ts, std::to_string(e.count) + " page faults");
      }
      case FT_EV_SLOW_OP:
      case FT_EV_OP_ERROR: {
        const auto e = record_as<ft_op>(rec);
        const std::string op =
            e.op < static_cast<uint32_t>(kOpKindCount) ? op_name(static_cast<OpKind>(e.op)) : "op";
        return instant(thread_track(h.pid, h.tid), h.ts,
                       std::string(h.kind == FT_EV_SLOW_OP ? "slow " : "error ") + op + " " +
                           std::to_string(e.bytes) + " B: " + breakdown_verdict(e.w));
      }
      case FT_EV_MARK: {
        // Instants, phases included: the thread's track also holds its off-CPU
        // slices, which a phase would overlap without nesting.
        const auto e = record_as<ft_mark>(rec);
        const std::string name = record_str(e.name, FT_MARK_NAME_LEN);
        const std::string what = e.type == FT_MARK_BEGIN ? "begin " + name
                                 : e.type == FT_MARK_END ? std::string("end")
                                                         : "mark " + name;
        return instant(thread_track(h.pid, h.tid), h.ts, what);
      }
      default:
        return true;
    }
  }

 private:
  bool need(Track& t) {
    PerfettoWriter& w = *ctx_.w;
    if (node_.gen != w.generation()) {
      w.process_track(node_.uuid, ctx_.pid, node_.name, ctx_.order);
      node_.gen = w.generation();
    }
    if (t.gen != w.generation()) {
      w.child_track(t.uuid, node_.uuid, t.name, t.order, false);
      t.gen = w.generation();
    }
    return true;
  }

  Track& track(const std::string& key, const std::string& name, int32_t order) {
    auto it = tracks_.find(key);
    if (it == tracks_.end()) {
      Track t;
      t.uuid = (*ctx_.next_uuid)++;
      t.name = name;
      t.order = order;
      it = tracks_.emplace(key, t).first;
      ++st_->tracks;
    }
    return it->second;
  }

  Track& thread_track(uint32_t pid, uint32_t tid) {
    std::string name = "tid " + std::to_string(tid);
    const auto c = comm_.find(tid);
    if (c != comm_.end() && !c->second.empty()) name += " " + c->second;
    const auto r = rank_of_.find(pid);
    if (r != rank_of_.end())
      name += " (rank " + r->second + ")";
    else
      name += " (pid " + std::to_string(pid) + ")";
    return track("t" + std::to_string(tid), name + " off CPU", static_cast<int32_t>(tid % 1000000));
  }

  uint64_t ts(uint64_t mono) const {
    const int64_t t = static_cast<int64_t>(mono) + ctx_.wall_offset;
    return t < 0 ? 0 : static_cast<uint64_t>(t);
  }

  bool slice(Track& t, uint64_t start, uint64_t end, const std::string& name, const DebugArg* args,
             size_t nargs, const Flows& flows) {
    if (end < start) end = start;
    if (!ctx_.room(2 * kEventBytes + name.size() + 2 * kDescriptorBytes)) return false;
    need(t);
    PerfettoWriter& w = *ctx_.w;
    w.slice_begin(ts(start), t.uuid, w.event_name(name), args, nargs, flows);
    w.slice_end(ts(end), t.uuid);
    ++st_->slices;
    return true;
  }

  bool instant(Track& t, uint64_t at, const std::string& name) {
    if (!ctx_.room(kEventBytes + name.size() + 2 * kDescriptorBytes)) return false;
    need(t);
    ctx_.w->instant_named(ts(at), t.uuid, name, nullptr, 0);
    ++st_->instants;
    return true;
  }

  bool offcpu(const ft_hdr& h, const ft_offcpu& e) {
    std::string name = offcpu_cause(e);
    const std::string ran = record_str(e.ran_comm, FT_COMM_LEN);
    if (e.ran_pid && !ran.empty()) name += ": " + ran;
    const std::string by = e.ran_pid ? ran + "[" + std::to_string(e.ran_pid) + "]" : std::string();
    PerfettoWriter& w = *ctx_.w;
    Track& t = thread_track(h.pid, h.tid);
    const DebugArg args[3] = {DebugArg::String(w.annotation_name("ran_instead"), by),
                              DebugArg::Uint(w.annotation_name("cpu_out"), e.cpu_out),
                              DebugArg::Uint(w.annotation_name("cpu_in"), h.cpu)};
    // Part of an explained stall's window: a flow towards the stall.
    uint64_t flow[4];
    size_t nflow = 0;
    const auto f = flows_.find(h.tid);
    if (f != flows_.end())
      for (const StallFlow& fw : f->second)
        if (e.start < fw.end && h.ts > fw.start && nflow < 4) flow[nflow++] = fw.flow;
    st_->flows += nflow;
    return slice(t, e.start, h.ts, name, args, by.empty() ? 0 : 3, Flows{flow, nflow});
  }

  const KernelNode& n_;
  KernelTraceContext& ctx_;
  KernelTraceStats* st_;
  Track node_;
  std::map<std::string, Track> tracks_;
  std::map<uint32_t, std::string> comm_, rank_of_;
  std::map<uint32_t, std::vector<StallFlow>> flows_;
};

}  // namespace

uint64_t stall_flow_id(const Stall& s) {
  // FNV-1a over what identifies the stall: unique within a job.
  uint64_t h = 1469598103934665603ull;
  const auto mix = [&h](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  };
  mix(s.host.data(), s.host.size());
  mix(&s.pid, sizeof(s.pid));
  mix(&s.cq.id, sizeof(s.cq.id));
  return h | 1;  // never 0
}

bool write_kernel_tracks(const KernelNode& n, const Job& job, KernelTraceContext& ctx,
                         KernelTraceStats* stats, std::vector<std::string>* warnings) {
  KernelLogReader r;
  std::string err;
  if (!r.open(n.path, &err) || !r.read_all([](const ft_hdr&, const uint8_t*) {}, &err)) {
    warnings->push_back("kernel log skipped: " + err);
    return true;
  }
  const KernelNames names = KernelNames::from(r);
  KernelTracks tracks(n, job, ctx, stats);
  bool ok = true;
  if (!r.read_all(
          [&](const ft_hdr& h, const uint8_t* rec) {
            if (ok) ok = tracks.record(h, rec, names);
          },
          &err))
    warnings->push_back("kernel log " + n.path + ": " + err);
  return ok;
}

}  // namespace fabtrace::report
