#include "userspace/report/analysis/root_causes.h"

#include <algorithm>
#include <set>
#include <tuple>
#include <unordered_map>

#include "common/kernel_explain.h"
#include "common/printable.h"
#include "userspace/report/analysis/kernel_join.h"
#include "userspace/report/job/job.h"

namespace fabtrace::report {

namespace {

struct Analyzer {
  const Job& job;
  std::vector<int64_t> off;
  std::vector<std::vector<const Wait*>> by_rank;  // each rank's waits by start
  // Root parts: (root, waiter) -> their lengths, and the parts for the causes.
  struct Part {
    uint32_t root, waiter;
    int64_t s, e;
    bool transit;  // after the root issued the send: the message in transit
    // >= 0: the root was itself receiving a message this rank had sent (the
    // rank was earlier on the chain: it is not followed round).
    int64_t from = -1;
  };

  std::vector<std::vector<const KernelExplanation*>> explained;  // each rank's stalls and slow ops
  std::vector<bool> logged;                                      // its node has a kernel log

  explicit Analyzer(const Job& j)
      : job(j),
        off(job_clock_offsets(j)),
        by_rank(j.ranks.size()),
        explained(j.ranks.size()),
        logged(j.ranks.size(), false) {
    std::map<std::pair<std::string, long>, uint32_t> pids;
    for (uint32_t r = 0; r < j.ranks.size(); ++r) pids[{j.ranks[r].host(), j.ranks[r].pid()}] = r;
    for (const KernelNode& n : j.kernel)
      for (const auto* list : {&n.stalls, &n.slow_ops})
        for (const KernelExplanation& w : *list) {
          const auto it = pids.find({n.host, static_cast<long>(w.pid)});
          if (it != pids.end()) explained[it->second].push_back(&w);
        }
    for (uint32_t r = 0; r < j.ranks.size(); ++r) logged[r] = kernel_node(j, j.ranks[r].host());
    for (const Wait& w : job.waits.list)
      if (w.rank < by_rank.size() && w.on < by_rank.size()) by_rank[w.rank].push_back(&w);
    for (auto& v : by_rank)
      std::sort(v.begin(), v.end(),
                [](const Wait* a, const Wait* b) { return a->start < b->start; });
  }

  // What the kernel log says of rank r over [s, e] (job clock): the verdict of
  // its process's stall or slow op record covering most of it (its span on
  // the job's clock in *win, else [s, e]).
  std::string cause(uint32_t r, int64_t s, int64_t e, bool transit,
                    std::pair<int64_t, int64_t>* win = nullptr, std::string* cls = nullptr,
                    int64_t from = -1) const {
    if (win) *win = {s, e};
    if (cls) *cls = transit || from >= 0 ? "in transit" : "late to post";
    const std::string none =
        from >= 0
            ? "receiving a message in transit from " + rank_name(job, static_cast<uint32_t>(from)) +
                  " (the provider, the network, or " + rank_name(job, r) + " not progressing)"
        : transit ? "sent, the message in transit (the provider, the network, or " +
                        rank_name(job, r) + " not progressing)"
                  : "late to post";
    if (!logged[r]) return none + " (no kernel log of its node)";
    const KernelExplanation* best = nullptr;
    int64_t most = 0;
    for (const KernelExplanation* w : explained[r]) {
      const int64_t ws = static_cast<int64_t>(w->w.start) + off[r];
      const int64_t we = static_cast<int64_t>(w->w.end) + off[r];
      const int64_t o = std::min(e, we) - std::max(s, ws);
      if (o > most) most = o, best = w;
    }
    if (best && 2 * most >= e - s) {
      if (win)
        *win = {static_cast<int64_t>(best->w.start) + off[r],
                static_cast<int64_t>(best->w.end) + off[r]};
      if (cls) *cls = breakdown_cause(best->w);
      return printable(best->verdict);
    }
    return none +
           (transit || from >= 0 ? "" : " (the kernel shows no stall of it then: computing)");
  }

  // True when the kernel log holds a stall or slow op of rank r covering most
  // of [s, e] (job clock) in which r was kept from running (stopped,
  // preempted, paging in): r itself was not progressing then.
  bool stalled(uint32_t r, int64_t s, int64_t e) const {
    if (!logged[r] || e <= s) return false;
    for (const KernelExplanation* w : explained[r]) {
      // Kept from running: a rank blocked in a call (epoll, futex) may be
      // waiting for the very message, and one on CPU was running.
      const std::string cls = breakdown_cause(w->w);
      if (cls != "stopped" && cls != "preempted" && cls != "disk") continue;
      const int64_t ws = static_cast<int64_t>(w->w.start) + off[r];
      const int64_t we = static_cast<int64_t>(w->w.end) + off[r];
      if (2 * (std::min(e, we) - std::max(s, ws)) >= e - s) return true;
    }
    return false;
  }

  // A part [s, e] of a wait of `waiter` on `root`, which sent `receiver` its
  // message at `sent` (the receiver: the waiter, or the rank before `root`
  // on the chain). After the send the message was the receiver's to take:
  // where the receiver was kept from running then, that part is its own delay.
  void root_part(uint32_t root, uint32_t waiter, uint32_t receiver, int64_t s, int64_t e,
                 int64_t sent, std::vector<Part>* out) const {
    if (s < sent) out->push_back({root, waiter, s, std::min(e, sent), false});
    if (e > sent) {
      const int64_t ts = std::max(s, sent);
      if (stalled(receiver, ts, e))
        out->push_back({receiver, waiter, ts, e, false});
      else
        out->push_back({root, waiter, ts, e, true});
    }
  }

  // Charges [s, e], in which `waiter` waited on `on` (for a message `on` sent
  // at `sent`), to its roots: where `on` was itself waiting on another rank,
  // on through that rank. `chain` holds the ranks followed so far: a rank met
  // again is not followed round (two ranks of a ping-pong each wait on the
  // other, the one that did not progress is the root).
  void charge(uint32_t on, int64_t s, int64_t e, int64_t sent, uint32_t waiter,
              std::vector<uint32_t>* chain, std::vector<Part>* out) const {
    const auto& ws = by_rank[on];
    auto it = std::lower_bound(ws.begin(), ws.end(), s,
                               [](const Wait* w, int64_t t) { return w->start < t; });
    if (it != ws.begin()) --it;  // one that began before s may still cover it
    const uint32_t receiver = chain->back();
    chain->push_back(on);
    int64_t cur = s;
    for (; it != ws.end() && (*it)->start < e; ++it) {
      const int64_t os = std::max(cur, (*it)->start);
      const int64_t oe = std::min(e, (*it)->end);
      if (oe <= os) continue;
      const uint32_t next = (*it)->on;
      const bool loop = std::find(chain->begin(), chain->end(), next) != chain->end();
      if (chain->size() >= kMaxChain) continue;  // left to `on` below
      if (os > cur) root_part(on, waiter, receiver, cur, os, sent, out);
      // Once `on` had sent its message (at `sent`), the message was in
      // transit, whatever `on` waited for next (root_part).
      const int64_t u = std::clamp(sent, os, oe);
      if (!loop) {
        if (os < u) charge(next, os, u, (*it)->sent, waiter, chain, out);
      } else {
        // `on` waited for `next`, met before on this chain (the two ranks of
        // a ping-pong each wait on the other): after `next` sent its message,
        // `on` is the root, receiving it (or kept from running); before, `on`
        // is the root, late (a cycle of late senders, which the clocks alone
        // can make).
        const int64_t t = std::clamp((*it)->sent, os, u);
        if (os < t) out->push_back({on, waiter, os, t, false});
        if (t < u) {
          if (stalled(on, t, u))
            out->push_back({on, waiter, t, u, false});
          else
            out->push_back({on, waiter, t, u, false, static_cast<int64_t>(next)});
        }
      }
      if (u < oe) root_part(on, waiter, receiver, u, oe, sent, out);
      cur = oe;
    }
    if (cur < e) root_part(on, waiter, receiver, cur, e, sent, out);
    chain->pop_back();
  }

  // The root charged most of `parts`, and its longest part (nullptr: none).
  static const Part* top_part(const std::vector<Part>& parts) {
    std::map<uint32_t, int64_t> per_root;
    for (const Part& p : parts) per_root[p.root] += p.e - p.s;
    const auto top =
        std::max_element(per_root.begin(), per_root.end(),
                         [](const auto& x, const auto& y) { return x.second < y.second; });
    if (top == per_root.end()) return nullptr;
    const Part* longest = nullptr;
    for (const Part& p : parts)
      if (p.root == top->first && (!longest || p.e - p.s > longest->e - longest->s)) longest = &p;
    return longest;
  }
};

// Without timelines: a poll gap of A that overlaps a longer poll gap of a rank
// A has links with (weaker evidence, one hop). The gaps of at least
// kMinWaitNs, swept by start (at most kOverlapScan later ones each); the link
// rows read only when two such gaps overlap, each row's rank found by its
// owner (shared by the rank's rows), not by its names.
constexpr size_t kOverlapScan = 256;

void weak_overlaps(const Job& job, const std::vector<int64_t>& off,
                   const std::vector<int64_t>& stall_rank, std::map<uint32_t, RootCause>* roots,
                   WaitAnalysis* wa) {
  struct Gap {
    size_t stall;
    uint32_t rank;
    int64_t s, e;
  };
  std::vector<Gap> gaps;
  for (size_t i = 0; i < job.stalls.size(); ++i) {
    const Stall& st = job.stalls[i];
    if (stall_rank[i] < 0 || st.cq.max_gap_ns < static_cast<double>(kMinWaitNs)) continue;
    const uint32_t r = static_cast<uint32_t>(stall_rank[i]);
    const int64_t e = static_cast<int64_t>(st.end_mono_ns) + off[r];
    gaps.push_back({i, r, e - static_cast<int64_t>(st.cq.max_gap_ns), e});
  }
  std::stable_sort(gaps.begin(), gaps.end(), [](const Gap& x, const Gap& y) { return x.s < y.s; });
  std::vector<std::pair<size_t, size_t>> pairs;  // indices into gaps, overlapping >= kMinWaitNs
  for (size_t i = 0; i < gaps.size(); ++i)
    for (size_t j = i + 1; j < gaps.size() && j <= i + kOverlapScan && gaps[j].s < gaps[i].e; ++j)
      if (gaps[j].rank != gaps[i].rank && std::min(gaps[i].e, gaps[j].e) - gaps[j].s >= kMinWaitNs)
        pairs.push_back({i, j});
  if (pairs.empty()) return;
  // Which rank owns each row, by the row's owner (rows of a rank share it).
  std::map<std::tuple<std::string, std::string, long>, uint32_t> index;
  for (uint32_t r = 0; r < job.ranks.size(); ++r)
    index[{job.ranks[r].host(), job.ranks[r].rank(), job.ranks[r].pid()}] = r;
  std::unordered_map<const void*, int64_t> by_owner;
  const auto rank_of = [&](const LinkRow& l) {
    const auto [it, fresh] = by_owner.try_emplace(&l.host(), -1);
    if (fresh) {
      const auto f = index.find({l.host(), l.rank(), l.pid()});
      if (f != index.end()) it->second = f->second;
    }
    return it->second;
  };
  std::unordered_map<uint32_t, uint32_t> owner;  // local address id -> rank
  for (const LinkRow& l : job.links)
    if (const int64_t r = rank_of(l); r >= 0) owner.emplace(l.local_id(), static_cast<uint32_t>(r));
  // Only the pairs of ranks whose gaps overlap are looked for among the rows
  // (a set of every linked pair would be a million entries at a million rows).
  const auto pair_key = [](uint32_t a, uint32_t b) {
    return a < b ? uint64_t{a} << 32 | b : uint64_t{b} << 32 | a;
  };
  std::unordered_map<uint64_t, bool> linked;  // candidate pair -> a row links them
  for (const auto& [i, j] : pairs) linked.emplace(pair_key(gaps[i].rank, gaps[j].rank), false);
  for (const LinkRow& l : job.links) {
    const int64_t r = rank_of(l);
    const auto o = owner.find(l.remote_id());
    if (r < 0 || o == owner.end()) continue;
    const auto c = linked.find(pair_key(static_cast<uint32_t>(r), o->second));
    if (c != linked.end()) c->second = true;
  }
  const auto is_linked = [&](uint32_t a, uint32_t b) {
    const auto c = linked.find(pair_key(a, b));
    return c != linked.end() && c->second;
  };
  // Per gap, the longer overlapping gap of a linked rank that overlaps it most.
  std::vector<std::pair<int64_t, size_t>> best(gaps.size(), {0, 0});
  const auto consider = [&](size_t a, size_t b) {
    const Stall &sa = job.stalls[gaps[a].stall], &sb = job.stalls[gaps[b].stall];
    if (sb.cq.max_gap_ns < sa.cq.max_gap_ns ||
        (sb.cq.max_gap_ns == sa.cq.max_gap_ns && gaps[b].stall > gaps[a].stall))
      return;  // the longer gap is the one the other waited through
    if (!is_linked(gaps[a].rank, gaps[b].rank)) return;
    const int64_t o = std::min(gaps[a].e, gaps[b].e) - std::max(gaps[a].s, gaps[b].s);
    if (o > best[a].first) best[a] = {o, b};
  };
  for (const auto& [i, j] : pairs) consider(i, j), consider(j, i);
  for (size_t a = 0; a < gaps.size(); ++a) {
    const int64_t most = best[a].first;
    if (most < kMinWaitNs) continue;
    const Gap& g = gaps[a];
    const Gap& on = gaps[best[a].second];
    StallWait& sw = wa->stalls[g.stall];
    sw.known = sw.weak = true;
    sw.on = sw.root = on.rank;
    sw.cause = stall_why(job.stalls[on.stall]);
    if (sw.cause.empty()) sw.cause = "its own poll gap";
    RootCause& rc = (*roots)[on.rank];
    rc.rank = on.rank;
    rc.weak = true;
    rc.cause = sw.cause;
    rc.cost_ns += most;
    rc.by_waiter[g.rank] += most;
    ++rc.waits;
    wa->matrix[{g.rank, on.rank}] += most;
  }
}

}  // namespace

WaitAnalysis analyze_waits(const Job& job) {
  WaitAnalysis wa;
  wa.stalls.resize(job.stalls.size());
  const Analyzer an(job);
  std::map<std::tuple<std::string, std::string, long>, uint32_t> index;
  for (uint32_t r = 0; r < job.ranks.size(); ++r)
    index[{job.ranks[r].host(), job.ranks[r].rank(), job.ranks[r].pid()}] = r;

  std::map<uint32_t, RootCause> roots;
  // (root, class of cause) -> the time, and the words of its longest part.
  struct ClassCost {
    int64_t ns = 0, longest = 0;
    std::string words;
  };
  std::map<std::pair<uint32_t, std::string>, ClassCost> cause_cost;
  std::vector<Analyzer::Part> parts;
  std::vector<uint32_t> chain;  // the ranks followed, the waiter first
  wa.waits.resize(job.waits.list.size());
  for (size_t i = 0; i < job.waits.list.size(); ++i) {
    const Wait& w = job.waits.list[i];
    if (w.rank >= job.ranks.size() || w.on >= job.ranks.size()) continue;
    wa.matrix[{w.rank, w.on}] += w.length();
    parts.clear();
    chain.assign(1, w.rank);
    an.charge(w.on, w.start, w.end, w.sent, w.rank, &chain, &parts);
    const Analyzer::Part* top = Analyzer::top_part(parts);
    std::map<uint32_t, bool> seen;
    for (const Analyzer::Part& p : parts) {
      RootCause& rc = roots[p.root];
      rc.rank = p.root;
      rc.cost_ns += p.e - p.s;
      rc.by_waiter[p.waiter] += p.e - p.s;
      if (!seen[p.root]) ++rc.waits, seen[p.root] = true;
      std::pair<int64_t, int64_t> win;
      std::string cls;
      std::string why = an.cause(p.root, p.s, p.e, p.transit, &win, &cls, p.from);
      if (&p == top) {
        WaitRoot& wr = wa.waits[i];
        wr.known = true;
        wr.root = p.root;
        std::tie(wr.delay_start, wr.delay_end) = win;
        wr.cause = why;
      }
      ClassCost& cc = cause_cost[{p.root, std::move(cls)}];
      cc.ns += p.e - p.s;
      if (p.e - p.s > cc.longest) cc.longest = p.e - p.s, cc.words = std::move(why);
    }
  }
  // A root's cause: the words of the longest part of its costliest class (a
  // root preempted a thousand times for a few ms each is "preempted", not the
  // one fixed phrase that sums them); its other classes, costliest first.
  for (const auto& [key, cc] : cause_cost) roots[key.first].classes.push_back({key.second, cc.ns});
  for (auto& [r, rc] : roots) {
    std::stable_sort(rc.classes.begin(), rc.classes.end(),
                     [](const auto& x, const auto& y) { return x.second > y.second; });
    if (!rc.classes.empty()) rc.cause = cause_cost.at({r, rc.classes[0].first}).words;
  }

  // The stalls: with timelines, the wait of the stalled rank that overlaps the
  // gap most, followed to its root.
  const auto stall_span = [&](const Stall& st, uint32_t r) {
    const int64_t e = static_cast<int64_t>(st.end_mono_ns) + an.off[r];
    return std::make_pair(e - static_cast<int64_t>(st.cq.max_gap_ns), e);
  };
  std::vector<int64_t> stall_rank(job.stalls.size(), -1);
  for (size_t i = 0; i < job.stalls.size(); ++i) {
    const auto it = index.find({job.stalls[i].host, job.stalls[i].rank, job.stalls[i].pid});
    if (it != index.end()) stall_rank[i] = it->second;
  }
  if (job.waits.from_timelines) {
    for (size_t i = 0; i < job.stalls.size(); ++i) {
      if (stall_rank[i] < 0) continue;
      const uint32_t a = static_cast<uint32_t>(stall_rank[i]);
      const auto [s, e] = stall_span(job.stalls[i], a);
      const Wait* best = nullptr;
      int64_t most = 0;
      for (const Wait* w : an.by_rank[a]) {
        const int64_t o = std::min(e, w->end) - std::max(s, w->start);
        if (o > most) most = o, best = w;
      }
      if (!best) continue;
      parts.clear();
      chain.assign(1, a);
      an.charge(best->on, std::max(s, best->start), std::min(e, best->end), best->sent, a, &chain,
                &parts);
      // The root's cause in its longest part of this gap; a gap mostly of the
      // rank's own stall says no more than its why line.
      const Analyzer::Part* longest = Analyzer::top_part(parts);
      if (!longest || longest->root == a) continue;
      StallWait& sw = wa.stalls[i];
      sw.known = true;
      sw.on = best->on;
      sw.root = longest->root;
      sw.cause = an.cause(longest->root, longest->s, longest->e, longest->transit, nullptr, nullptr,
                          longest->from);
    }
  } else if (!job.stalls.empty()) {
    weak_overlaps(job, an.off, stall_rank, &roots, &wa);
  }
  for (auto& [r, rc] : roots) wa.roots.push_back(std::move(rc));
  std::stable_sort(wa.roots.begin(), wa.roots.end(),
                   [](const RootCause& x, const RootCause& y) { return x.cost_ns > y.cost_ns; });
  return wa;
}

}  // namespace fabtrace::report
