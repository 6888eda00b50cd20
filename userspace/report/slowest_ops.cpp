#include "userspace/report/slowest_ops.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <unordered_map>

#include "common/op_kinds.h"
#include "common/oplog_file.h"

namespace fabtrace::report {

namespace {

// A heap entry: the op and its length in ticks (same order as in ns).
struct Candidate {
  uint64_t dur;
  oplog::OpEntry e;
};
struct Longer {
  bool operator()(const Candidate& a, const Candidate& b) const { return a.dur > b.dur; }
};
// The N longest seen so far: a min-heap whose top is the shortest kept.
class TopN {
 public:
  explicit TopN(size_t n) : n_(n) {}
  void offer(const oplog::OpEntry& e) {
    const uint64_t d = e.end_ticks >= e.start_ticks ? e.end_ticks - e.start_ticks : 0;
    if (q_.size() < n_) {
      q_.push(Candidate{d, e});
    } else if (n_ > 0 && d > q_.top().dur) {
      q_.pop();
      q_.push(Candidate{d, e});
    }
  }
  std::vector<oplog::OpEntry> take() {
    std::vector<oplog::OpEntry> v;
    while (!q_.empty()) {
      v.push_back(q_.top().e);
      q_.pop();
    }
    return v;
  }

 private:
  size_t n_;
  std::priority_queue<Candidate, std::vector<Candidate>, Longer> q_;
};

std::string row_key(const std::string& host, const std::string& rank, long pid,
                    const std::string& local, const std::string& remote, const std::string& op,
                    uint64_t bytes, bool size_unknown) {
  return host + '\n' + rank + '\n' + std::to_string(pid) + '\n' + local + '\n' + remote + '\n' +
         op + '\n' + std::to_string(bytes) + (size_unknown ? "?" : "");
}

void keep_slowest(std::vector<SlowOp>* v, size_t n) {
  std::sort(v->begin(), v->end(),
            [](const SlowOp& a, const SlowOp& b) { return a.dur_ns > b.dur_ns; });
  if (v->size() > n) v->resize(n);
}

struct RankPass {
  const Job& job;
  const Rank& rank;
  const std::unordered_map<std::string, double>& p50;
  SlowestOps* out;

  std::string op_name_of(const OplogReader& rd, uint8_t kind) const {
    const auto& names = rd.header().op_names;
    std::string s = kind < names.size() ? names[kind] : "";
    if (s.empty()) s = op_name(static_cast<OpKind>(kind));
    if (s.empty() || s == "?") s = "op kind " + std::to_string(kind);
    return s;
  }

  SlowOp resolve(const OplogReader& rd, const OplogCalib& cal, int64_t offset,
                 const oplog::OpEntry& e) const {
    SlowOp s;
    s.host = rank.host;
    s.rank = rank.rank;
    s.pid = rank.pid;
    s.tid = e.tid;
    const auto l = rd.links().find(e.link_id);
    if (l != rd.links().end()) {
      s.local = l->second.local;
      s.remote = l->second.remote;
    }
    s.op = op_name_of(rd, e.kind);
    s.bytes = e.bytes;
    s.size_unknown = (e.flags & oplog::kOpSizeUnknown) != 0;
    s.error = e.error != 0;
    int64_t a = 0, b = 0;
    cal.mono_ns_checked(e.start_ticks, &a);
    cal.mono_ns_checked(e.end_ticks, &b);
    s.start_mono_ns = a;
    s.start_wall_ns = a + offset;
    // In integers first: wall-clock ns are beyond a double's exact range.
    s.start_job_s =
        job.first_wall_ns
            ? static_cast<double>(s.start_wall_ns - static_cast<int64_t>(job.first_wall_ns)) / 1e9
            : 0;
    s.dur_ns = b > a ? static_cast<double>(b - a) : 0;
    const auto p =
        p50.find(row_key(s.host, s.rank, s.pid, s.local, s.remote, s.op, s.bytes, s.size_unknown));
    if (p != p50.end() && p->second > 0) {
      s.row_p50_ns = p->second;
      s.ratio = s.dur_ns / p->second;
    }
    return s;
  }

  void run() {
    OplogReader rd;
    std::string err;
    if (!rd.open(rank.oplog_path, &err) || !rd.scan(&err)) {
      out->warnings.push_back("slowest ops: skipped " + err);
      return;
    }
    const OplogCalib cal = rd.has_calib() ? rd.calib() : OplogCalib();
    int64_t offset = rank.wall_offset_ns();
    if (rank.start_wall_ns == 0 && rd.has_calib() && cal.real0_ns != 0)
      offset = static_cast<int64_t>(cal.real0_ns) - static_cast<int64_t>(cal.mono0_ns);

    TopN ops(out->n), recvs(out->n);
    TimelineCover cover;
    cover.host = rank.host;
    cover.rank = rank.rank;
    cover.pid = rank.pid;
    cover.spec = rd.window().spec;
    cover.signal = rd.window().signal;
    // Capture changes, in file order (each thread's and the writer's are in time order).
    std::vector<std::pair<uint8_t, int64_t>> changes;
    const bool ok = rd.read_all(
        [&](const oplog::OpEntry* e, size_t n) {
          for (size_t i = 0; i < n; ++i) {
            if (e[i].error) continue;  // an error's time is not a latency
            (op_is_recv(static_cast<OpKind>(e[i].kind)) ? recvs : ops).offer(e[i]);
          }
          cover.ops += n;
        },
        [&](const oplog::OpEntry* e, size_t n) {
          for (size_t i = 0; i < n; ++i) {
            if (e[i].kind == oplog::kCaptureOn || e[i].kind == oplog::kCaptureOff) {
              int64_t t = 0;
              if (cal.mono_ns_checked(e[i].start_ticks, &t))
                changes.emplace_back(e[i].kind, t + offset);
            } else {
              ++cover.marks;
            }
          }
        },
        &err);
    if (!ok) out->warnings.push_back("slowest ops: " + err);
    if (rd.truncated()) out->warnings.push_back(rank.oplog_path + " is cut short");
    cover.outside = rd.end_outside_window();
    out->ops_seen += cover.ops;
    spans(changes, &cover);
    out->covers.push_back(std::move(cover));

    for (const oplog::OpEntry& e : ops.take()) out->ops.push_back(resolve(rd, cal, offset, e));
    for (const oplog::OpEntry& e : recvs.take()) out->recvs.push_back(resolve(rd, cal, offset, e));
    keep_slowest(&out->ops, out->n);
    keep_slowest(&out->recvs, out->n);
  }

  // The captured spans from the changes: on from the start when no window was
  // asked for; a span still open at the end runs to the end of the rank's run.
  void spans(std::vector<std::pair<uint8_t, int64_t>> changes, TimelineCover* c) const {
    std::stable_sort(changes.begin(), changes.end(),
                     [](const auto& a, const auto& b) { return a.second < b.second; });
    c->whole = c->spec.empty() && changes.empty();
    if (c->whole) return;
    const int64_t start = static_cast<int64_t>(rank.start_wall_ns);
    const int64_t end = rank.start_wall_ns ? start + static_cast<int64_t>(rank.duration_s * 1e9)
                                           : std::numeric_limits<int64_t>::max();
    bool on = c->spec.empty();
    int64_t from = start;
    for (const auto& ch : changes) {
      if (ch.first == oplog::kCaptureOn && !on) {
        on = true;
        from = ch.second;
      } else if (ch.first == oplog::kCaptureOff && on) {
        on = false;
        if (from < end) c->spans.push_back({from, std::min(ch.second, end)});
      }
    }
    if (on && from < end) c->spans.push_back({from, 0});
  }
};

}  // namespace

SlowestOps find_slowest_ops(const Job& job, size_t n) {
  SlowestOps s;
  s.n = n;
  s.first_wall_ns = job.first_wall_ns;
  // The rows' medians are only needed beside a per-op timeline: a job without
  // any does not build a key per link row.
  const bool any_timeline = std::any_of(job.ranks.begin(), job.ranks.end(),
                                        [](const Rank& r) { return !r.oplog_path.empty(); });
  std::unordered_map<std::string, double> p50;
  if (any_timeline)
    for (const LinkRow& l : job.links)
      if (l.row.count > 0)
        p50[row_key(l.host(), l.rank(), l.pid(), l.local(), l.remote(), l.op(), l.row.bytes,
                    l.row.size_unknown)] = l.row.p50_ns;
  for (const Rank& r : job.ranks) {
    if (r.oplog_path.empty()) continue;
    RankPass{job, r, p50, &s}.run();
  }
  return s;
}

}  // namespace fabtrace::report
