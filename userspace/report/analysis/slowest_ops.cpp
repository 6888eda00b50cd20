#include "userspace/report/analysis/slowest_ops.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <tuple>
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
  std::sort(v->begin(), v->end(), slower_op);
  if (v->size() > n) v->resize(n);
}

struct RankPass {
  const Job& job;
  uint32_t index;  // in job.ranks
  const Rank& rank;
  size_t top;
  SlowestPart* out;

  void warn(std::string w) const { out->warnings.emplace_back(index, std::move(w)); }

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
    s.host = rank.host();
    s.rank = rank.rank();
    s.pid = rank.pid();
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
    return s;
  }

  void run() {
    OplogReader rd;
    std::string err;
    if (!rd.open(rank.oplog_path, &err) || !rd.scan(&err)) {
      warn("slowest ops: skipped " + err);
      return;
    }
    const OplogCalib cal = rd.has_calib() ? rd.calib() : OplogCalib();
    int64_t offset = rank.wall_offset_ns();
    if (rank.start_wall_ns() == 0 && rd.has_calib() && cal.real0_ns != 0)
      offset = static_cast<int64_t>(cal.real0_ns) - static_cast<int64_t>(cal.mono0_ns);

    TopN ops(top), recvs(top);
    TimelineCover cover;
    cover.host = rank.host();
    cover.rank = rank.rank();
    cover.pid = rank.pid();
    cover.spec = rd.capture().spec;
    cover.signal = rd.capture().signal;
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
    if (!ok) warn("slowest ops: " + err);
    if (rd.truncated()) warn(rank.oplog_path + " is cut short");
    cover.outside = rd.end_outside_capture();
    out->ops_seen += cover.ops;
    spans(changes, &cover);
    out->covers.emplace_back(index, std::move(cover));

    for (const oplog::OpEntry& e : ops.take()) out->ops.push_back(resolve(rd, cal, offset, e));
    for (const oplog::OpEntry& e : recvs.take()) out->recvs.push_back(resolve(rd, cal, offset, e));
    keep_slowest(&out->ops, top);
    keep_slowest(&out->recvs, top);
  }

  // The captured spans from the changes: on from the start when no window was
  // asked for; a span still open at the end runs to the end of the rank's run.
  void spans(std::vector<std::pair<uint8_t, int64_t>> changes, TimelineCover* c) const {
    std::stable_sort(changes.begin(), changes.end(),
                     [](const auto& a, const auto& b) { return a.second < b.second; });
    c->whole = c->spec.empty() && changes.empty();
    if (c->whole) return;
    const int64_t start = static_cast<int64_t>(rank.start_wall_ns());
    const int64_t end = rank.start_wall_ns() ? start + static_cast<int64_t>(rank.duration_s() * 1e9)
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

bool slower_op(const SlowOp& a, const SlowOp& b) {
  if (a.dur_ns != b.dur_ns) return a.dur_ns > b.dur_ns;
  return std::tie(a.start_wall_ns, a.host, a.rank, a.pid, a.tid, a.local, a.remote, a.op, a.bytes,
                  a.size_unknown, a.error, a.start_mono_ns) <
         std::tie(b.start_wall_ns, b.host, b.rank, b.pid, b.tid, b.local, b.remote, b.op, b.bytes,
                  b.size_unknown, b.error, b.start_mono_ns);
}

SlowestPart slowest_part(const Job& job, const std::vector<uint32_t>& ranks, size_t n) {
  SlowestPart part;
  for (const uint32_t i : ranks)
    if (i < job.ranks.size() && !job.ranks[i].oplog_path.empty())
      RankPass{job, i, job.ranks[i], n, &part}.run();
  return part;
}

void merge_slowest_parts(SlowestPart* into, SlowestPart from, size_t n) {
  for (SlowOp& o : from.ops) into->ops.push_back(std::move(o));
  for (SlowOp& o : from.recvs) into->recvs.push_back(std::move(o));
  keep_slowest(&into->ops, n);
  keep_slowest(&into->recvs, n);
  for (auto& c : from.covers) into->covers.push_back(std::move(c));
  for (auto& w : from.warnings) into->warnings.push_back(std::move(w));
  into->ops_seen += from.ops_seen;
}

SlowestOps finish_slowest(const Job& job, size_t n, SlowestPart all) {
  SlowestOps s;
  s.n = n;
  s.first_wall_ns = job.first_wall_ns;
  s.ops_seen = all.ops_seen;
  // Rank order; a rank's own warnings keep theirs (stable).
  const auto by_rank = [](const auto& a, const auto& b) { return a.first < b.first; };
  std::stable_sort(all.covers.begin(), all.covers.end(), by_rank);
  std::stable_sort(all.warnings.begin(), all.warnings.end(), by_rank);
  for (auto& c : all.covers) s.covers.push_back(std::move(c.second));
  for (auto& w : all.warnings) s.warnings.push_back(std::move(w.second));
  keep_slowest(&all.ops, n);
  keep_slowest(&all.recvs, n);
  s.ops = std::move(all.ops);
  s.recvs = std::move(all.recvs);
  if (s.ops.empty() && s.recvs.empty()) return s;
  // The rows' medians, for the ops kept only: their rows' keys first, then one
  // pass over the link rows fills in the medians of those.
  const auto key_of = [](const SlowOp& o) {
    return row_key(o.host, o.rank, o.pid, o.local, o.remote, o.op, o.bytes, o.size_unknown);
  };
  std::unordered_map<std::string, double> p50;
  for (const std::vector<SlowOp>* v : {&s.ops, &s.recvs})
    for (const SlowOp& o : *v) p50.emplace(key_of(o), 0.0);
  for (const LinkRow& l : job.links) {
    if (l.row.count == 0) continue;
    const auto p = p50.find(row_key(l.host(), l.rank(), l.pid(), l.local(), l.remote(), l.op(),
                                    l.row.bytes, l.row.size_unknown));
    if (p != p50.end()) p->second = l.row.p50_ns;
  }
  for (std::vector<SlowOp>* v : {&s.ops, &s.recvs})
    for (SlowOp& o : *v) {
      const double m = p50[key_of(o)];
      if (m > 0) {
        o.row_p50_ns = m;
        o.ratio = o.dur_ns / m;
      }
    }
  return s;
}

SlowestOps find_slowest_ops(const Job& job, size_t n) {
  std::vector<uint32_t> all(job.ranks.size());
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = i;
  return finish_slowest(job, n, slowest_part(job, all, n));
}

}  // namespace fabtrace::report
