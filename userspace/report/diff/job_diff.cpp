// diff_jobs: two jobs' rows matched by who they are between (job_diff.h) and
// their figures compared.
#include "userspace/report/diff/job_diff.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "userspace/report/analysis/kernel_join.h"
#include "userspace/report/text/formats.h"
#include "userspace/report/text/summary.h"

namespace fabtrace::report {

namespace {

using ProcKey = std::pair<std::string, long>;  // host, pid: a process of one job

// A job's names for its processes and endpoints.
struct Names {
  std::vector<std::string> proc;                    // by index in job.ranks
  std::map<ProcKey, size_t> index;                  // (host, pid) -> index
  std::unordered_map<std::string, std::string> ep;  // local address -> endpoint label

  const std::string& proc_of(const std::string& host, long pid) const {
    static const std::string unknown = "?";
    const auto it = index.find({host, pid});
    return it == index.end() ? unknown : proc[it->second];
  }
  // The label of an address: its endpoint, or the address itself.
  std::string endpoint(const std::string& addr) const {
    const auto it = ep.find(addr);
    return it == ep.end() ? addr : it->second;
  }
};

Names names_of(const Job& job) {
  Names n;
  n.proc = process_labels(job);
  for (size_t i = 0; i < job.ranks.size(); ++i)
    n.index[{job.ranks[i].host(), job.ranks[i].pid()}] = i;
  // The local addresses of each process, from its NIC rows in order; the
  // addresses only its link rows name (reports that wrote no NIC row for a
  // domain that only received) after them.
  std::vector<std::vector<std::pair<std::string, std::string>>> addrs(job.ranks.size());
  std::vector<std::map<std::string, size_t>> domains(job.ranks.size());
  for (const NicRow& r : job.nics) {
    const auto it = n.index.find({r.host, r.pid});
    if (it == n.index.end()) continue;
    const size_t i = it->second;
    std::string domain = r.nic.domain;
    if (const size_t seen = domains[i][domain]++; seen) domain += "~" + std::to_string(seen + 1);
    for (size_t k = 0; k < r.nic.locals.size(); ++k)
      addrs[i].emplace_back(
          r.nic.locals[k], r.nic.locals.size() > 1 ? domain + "#" + std::to_string(k + 1) : domain);
  }
  std::vector<size_t> unlisted(job.ranks.size(), 0);
  std::unordered_map<std::string, bool> listed;
  for (const auto& a : addrs)
    for (const auto& kv : a) listed[kv.first] = true;
  for (const LinkRow& l : job.links) {
    const auto it = n.index.find({l.host(), l.pid()});
    if (it == n.index.end() || listed.count(l.local())) continue;
    listed[l.local()] = true;
    addrs[it->second].emplace_back(l.local(), "ep" + std::to_string(++unlisted[it->second]));
  }
  for (size_t i = 0; i < addrs.size(); ++i)
    for (const auto& kv : addrs[i])
      n.ep.emplace(kv.first, addrs[i].size() > 1 ? n.proc[i] + "[" + kv.second + "]" : n.proc[i]);
  return n;
}

// A figure's slowdown: B/A for a latency, A/B for a bandwidth.
double slowdown_of(const FigurePair& f, bool bandwidth) {
  if (!f.valid()) return 0;
  return bandwidth ? f.a / f.b : f.b / f.a;
}

void compare_link(const DiffOptions& opt, LinkDiff* d) {
  if (!d->a || !d->b || d->a->row.count < opt.min_ops || d->b->row.count < opt.min_ops) return;
  d->compared = true;
  d->p50 = {d->a->row.p50_ns, d->b->row.p50_ns};
  d->p99 = {d->a->row.p99_ns, d->b->row.p99_ns};
  d->gbps = {d->a->row.gbps, d->b->row.gbps};
  bool any = false;
  const std::pair<const FigurePair*, bool> figures[] = {
      {&d->p50, false}, {&d->p99, false}, {&d->gbps, true}};
  for (const auto& [f, bw] : figures) {
    if (!f->valid()) continue;
    const double s = slowdown_of(*f, bw);
    d->worst = any ? std::max(d->worst, s) : s;
    d->best = any ? std::min(d->best, s) : s;
    any = true;
  }
  d->slower = any && d->worst >= opt.threshold;
  d->faster = any && !d->slower && d->best <= 1 / opt.threshold;
}

// Pairs the rows of two runs by key into *out: A's rows in order, then B's
// that A has not. A key repeated within a run (rows its names cannot tell
// apart) gets its occurrence number. key(names, row) names a row; make(names,
// row) is its entry, whose a or b is then set.
template <typename Diff, typename Row, typename Key, typename Make>
void pair_up(const std::vector<Row>& rows_a, const Names& na, const std::vector<Row>& rows_b,
             const Names& nb, Key key, Make make, std::vector<Diff>* out) {
  std::unordered_map<std::string, size_t> at;  // key -> index in *out
  const auto add = [&](const std::vector<Row>& rows, const Names& n, bool is_a) {
    std::unordered_map<std::string, size_t> seen;
    for (const Row& r : rows) {
      std::string k = key(n, r);
      if (const size_t i = seen[k]++; i) k += '#' + std::to_string(i + 1);
      const auto it = at.find(k);
      if (it != at.end() && !is_a) {
        (*out)[it->second].b = &r;
        continue;
      }
      Diff x = make(n, r);
      (is_a ? x.a : x.b) = &r;
      at.emplace(std::move(k), out->size());
      out->push_back(std::move(x));
    }
  };
  add(rows_a, na, true);
  add(rows_b, nb, false);
}

// The `make` of pair_up for a diff that holds only its rows and the label its
// key is made from.
template <typename Diff, typename Label>
auto labeled(const Label& label) {
  return [&label](const Names& n, const auto& r) {
    Diff x;
    x.label = label(n, r);
    return x;
  };
}

std::string remote_label(const Names& n, const LinkRow& l) {
  return l.remote() == "(any)" ? l.remote() : n.endpoint(l.remote());
}

void diff_links(const Job& a, const Job& b, const Names& na, const Names& nb, JobDiff* d) {
  pair_up(
      a.links, na, b.links, nb,
      [](const Names& n, const LinkRow& l) {
        return n.endpoint(l.local()) + '\x1f' + remote_label(n, l) + '\x1f' + l.op() + '\x1f' +
               std::to_string(l.row.bytes) + (l.row.recv ? "r" : "s") +
               (l.row.size_unknown ? "?" : "");
      },
      [](const Names& n, const LinkRow& l) {
        LinkDiff x;
        x.from = n.endpoint(l.local());
        x.to = remote_label(n, l);
        x.op = l.op();
        x.bytes = l.row.bytes;
        x.recv = l.row.recv;
        x.size_unknown = l.row.size_unknown;
        return x;
      },
      &d->links);
  for (LinkDiff& l : d->links) {
    compare_link(d->opt, &l);
    if (!l.a) ++d->rows_only_b;
    if (!l.b) ++d->rows_only_a;
    if (l.compared) ++d->rows_compared;
    if (l.a && l.b && !l.compared) ++d->rows_few_ops;
  }
}

void diff_nics(const Job& a, const Job& b, const Names& na, const Names& nb, JobDiff* d) {
  const auto label = [](const Names& n, const NicRow& r) {
    return n.proc_of(r.host, r.pid) + " " + r.nic.domain;
  };
  pair_up(a.nics, na, b.nics, nb, label, labeled<NicDiff>(label), &d->nics);
  for (NicDiff& n : d->nics) {
    if (!n.a || !n.b || n.a->nic.ops < d->opt.min_ops || n.b->nic.ops < d->opt.min_ops) continue;
    n.gbps = {n.a->nic.gbps, n.b->nic.gbps};
    if (!n.gbps.valid()) continue;
    n.compared = true;
    n.slowdown = slowdown_of(n.gbps, true);
    n.slower = n.slowdown >= d->opt.threshold;
    n.faster = n.slowdown <= 1 / d->opt.threshold;
  }
}

std::map<std::string, OpTotals> op_totals(const Job& job) {
  std::map<std::string, OpTotals> by;
  std::map<std::string, double> weighted;  // sum of avg_ns * count
  for (const LinkRow& l : job.links) {
    OpTotals& t = by[l.op()];
    t.issued += l.row.issued();
    t.completed += l.row.count;
    t.errors += l.row.errors;
    t.eagain += l.row.eagain;
    t.bytes += l.row.count * l.row.bytes;
    weighted[l.op()] += l.row.avg_ns * static_cast<double>(l.row.count);
  }
  for (auto& [op, t] : by)
    if (t.completed) t.mean_ns = weighted[op] / static_cast<double>(t.completed);
  return by;
}

bool beyond(double ratio, double threshold) {
  return ratio > 0 && (ratio >= threshold || ratio <= 1 / threshold);
}

void diff_ops(const Job& a, const Job& b, JobDiff* d) {
  const auto ta = op_totals(a), tb = op_totals(b);
  std::map<std::string, OpDiff> by;
  for (const auto& [op, t] : ta) {
    by[op].a = t;
    by[op].in_a = true;
  }
  for (const auto& [op, t] : tb) {
    by[op].b = t;
    by[op].in_b = true;
  }
  uint64_t all_a = 0, all_b = 0;
  for (const auto& kv : by) all_a += kv.second.a.issued, all_b += kv.second.b.issued;
  for (auto& [op, o] : by) {
    o.op = op;
    if (all_a) o.share_a = static_cast<double>(o.a.issued) / static_cast<double>(all_a);
    if (all_b) o.share_b = static_cast<double>(o.b.issued) / static_cast<double>(all_b);
    o.issued = {static_cast<double>(o.a.issued), static_cast<double>(o.b.issued)};
    o.mean_ns = {o.a.mean_ns, o.b.mean_ns};
    o.changed = o.in_a != o.in_b || beyond(o.issued.ratio(), d->opt.threshold) ||
                beyond(o.mean_ns.ratio(), d->opt.threshold) || (!o.a.errors && o.b.errors) ||
                (!o.a.eagain && o.b.eagain);
    d->ops.push_back(std::move(o));
  }
}

void diff_stalls(const Job& a, const Job& b, const Names& na, const Names& nb, JobDiff* d) {
  const auto label = [](const Names& n, const Stall& s) {
    return n.proc_of(s.host, s.pid) + " CQ#" + std::to_string(s.cq.id);
  };
  std::vector<StallDiff> all;
  pair_up(a.stalls, na, b.stalls, nb, label, labeled<StallDiff>(label), &all);
  const double limit = d->opt.stall_ns, thr = d->opt.threshold;
  const double enough = static_cast<double>(d->opt.min_ops);
  const auto long_gaps = [](const Stall* s) {
    uint64_t n = 0;
    if (s)
      for (int k = kFirstLongGapClass; k < kGapClasses; ++k) n += s->cq.gaps[k];
    return static_cast<double>(n);
  };
  for (StallDiff& s : all) {
    const double ga = s.a ? s.a->cq.max_gap_ns : 0, gb = s.b ? s.b->cq.max_gap_ns : 0;
    const double ca = long_gaps(s.a), cb = long_gaps(s.b);
    const bool in_a = ga >= limit, in_b = gb >= limit;
    // Counts compared as ratios, a count of 0 as 1.
    const double count_ratio = std::max(cb, 1.0) / std::max(ca, 1.0);
    const bool counts_moved =
        std::max(ca, cb) >= enough && (count_ratio >= thr || count_ratio <= 1 / thr);
    if (!in_a && !in_b && !counts_moved) continue;
    s.gap_ns = {ga, gb};
    s.long_gaps = {ca, cb};
    if (!in_a && in_b)
      s.kind = StallDiff::Kind::kNew;
    else if (in_a && !in_b)
      s.kind = StallDiff::Kind::kGone;
    else if (counts_moved)
      s.kind = count_ratio > 1 ? StallDiff::Kind::kMore : StallDiff::Kind::kFewer;
    else if (gb / ga >= thr)
      s.kind = StallDiff::Kind::kLonger;
    else if (gb / ga <= 1 / thr)
      s.kind = StallDiff::Kind::kShorter;
    else
      s.kind = StallDiff::Kind::kBoth;
    d->stalls.push_back(std::move(s));
  }
  std::stable_sort(d->stalls.begin(), d->stalls.end(), [](const StallDiff& x, const StallDiff& y) {
    if (x.kind != y.kind) return x.kind < y.kind;
    return std::max(x.gap_ns.a, x.gap_ns.b) > std::max(y.gap_ns.a, y.gap_ns.b);
  });
}

}  // namespace

const char* stall_kind_name(StallDiff::Kind k) {
  // In the order of StallDiff::Kind.
  static const char* const names[] = {"new", "gone", "more", "fewer", "longer", "shorter", "both"};
  static_assert(sizeof(names) / sizeof(names[0]) ==
                static_cast<size_t>(StallDiff::Kind::kBoth) + 1);
  return names[static_cast<int>(k)];
}

std::vector<std::string> process_labels(const Job& job) {
  // By rank; processes that share one (NA, or the reports of two jobs in
  // one directory) in the order they started.
  std::map<std::string, std::vector<size_t>> by_rank;
  for (size_t i = 0; i < job.ranks.size(); ++i) by_rank[job.ranks[i].rank()].push_back(i);
  std::vector<std::string> labels(job.ranks.size());
  for (auto& [rank, idx] : by_rank) {
    const auto start = [&job](size_t i) {
      const Rank& r = job.ranks[i];
      return std::make_tuple(
          r.report.job.start_wall_ns ? r.report.job.start_wall_ns : r.start_wall_ns(), r.host(),
          r.pid());
    };
    std::stable_sort(idx.begin(), idx.end(),
                     [&](size_t x, size_t y) { return start(x) < start(y); });
    const std::string base = rank.empty() || rank == "NA" ? "NA" : "r" + rank;
    for (size_t k = 0; k < idx.size(); ++k)
      labels[idx[k]] = k ? base + "." + std::to_string(k + 1) : base;
  }
  return labels;
}

JobDiff diff_jobs(const Job& a, const Job& b, const DiffOptions& opt) {
  JobDiff d;
  d.opt = opt;
  const Names na = names_of(a), nb = names_of(b);
  {
    std::map<std::string, int> in;  // 1: A, 2: B, 3: both
    for (const std::string& l : na.proc) in[l] |= 1;
    for (const std::string& l : nb.proc) in[l] |= 2;
    for (const auto& [label, where] : in) {
      if (where == 1) d.ranks_only_a.push_back(label);
      if (where == 2) d.ranks_only_b.push_back(label);
      if (where == 3) ++d.ranks_both;
    }
  }
  diff_links(a, b, na, nb, &d);
  diff_nics(a, b, na, nb, &d);
  diff_ops(a, b, &d);
  diff_stalls(a, b, na, nb, &d);
  return d;
}

std::string link_diff_name(const LinkDiff& l) {
  OpStats size;
  size.bytes = l.bytes;
  size.size_unknown = l.size_unknown;
  return l.from + (l.recv ? " <- " : " -> ") + l.to + "  " + l.op + " " + fmt_row_size(size);
}

Gate diff_gate(const JobDiff& d, double limit) {
  Gate g;
  const auto look = [&](double s, const std::string& where) {
    if (s <= 0) return;
    ++g.figures;
    if (limit > 0 && s > limit) ++g.over;
    if (s > g.worst) {
      g.worst = s;
      g.worst_where = where;
    }
  };
  for (const LinkDiff& l : d.links) {
    if (l.recv || !l.compared) continue;
    const std::string name = link_diff_name(l);
    look(slowdown_of(l.p50, false), name + " p50");
    look(slowdown_of(l.p99, false), name + " p99");
    look(slowdown_of(l.gbps, true), name + " bandwidth");
  }
  for (const NicDiff& n : d.nics)
    if (n.compared) look(n.slowdown, "NIC " + n.label + " bandwidth");
  return g;
}

std::string fmt_ratio(double r) {
  if (!(r > 0) || !std::isfinite(r)) return "x?";
  if (r >= 100) return printf_str("x%.0f", r);
  if (r >= 10) return printf_str("x%.1f", r);
  if (r >= 0.1) return printf_str("x%.2f", r);
  return printf_str("x%.2g", r);
}

std::string fmt_op_gbps(double gbps) {
  static const char* const units[] = {"B/s", "kB/s", "MB/s", "GB/s", "TB/s"};
  double v = gbps * 1e9;  // bytes per second
  int u = 0;
  while (u < 4 && v >= 1000) v /= 1000, ++u;
  return printf_str("%.3g %s", v, units[u]);
}

}  // namespace fabtrace::report
