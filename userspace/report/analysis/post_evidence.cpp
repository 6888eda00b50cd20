#include "userspace/report/analysis/post_evidence.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "common/op_kinds.h"
#include "common/oplog_file.h"
#include "userspace/report/job/wait_states.h"

namespace fabtrace::report {

namespace {

enum Family { kTagged = 0, kUntagged = 1, kOther = 2 };

Family send_family(OpKind k) {
  switch (k) {
    case OpKind::kTsend:
    case OpKind::kTsendv:
    case OpKind::kTsendmsg:
    case OpKind::kTsenddata:
      return kTagged;
    case OpKind::kSend:
    case OpKind::kSendv:
    case OpKind::kSendmsg:
    case OpKind::kSenddata:
      return kUntagged;
    default:
      return kOther;
  }
}

Family recv_family(OpKind k) {
  switch (k) {
    case OpKind::kTrecv:
    case OpKind::kTrecvv:
    case OpKind::kTrecvmsg:
      return kTagged;
    case OpKind::kRecv:
    case OpKind::kRecvv:
    case OpKind::kRecvmsg:
      return kUntagged;
    default:
      return kOther;
  }
}

constexpr const char* kAny = "(any)";

// Times on a rank's CLOCK_MONOTONIC; the rank says how to align them.
struct Send {
  int64_t issue;
  int64_t done, idle_from;  // completed; the rank's last op event before (at least issue)
  uint64_t bytes;
  uint32_t rank;
};
struct Recv {
  int64_t post, done;
  int64_t idle_from;  // the rank's last op event before `done` (at least `post`)
  uint64_t bytes;
  bool size_unknown;
  uint32_t rank;
  size_t row;  // index into Job::links
};

using SendKey = std::tuple<std::string, std::string, int>;  // sender, receiver, family
using RecvKey = std::pair<std::string, int>;                // receiver, family

struct Collected {
  std::map<SendKey, std::vector<Send>> sends;
  std::map<RecvKey, std::map<std::string, std::vector<Recv>>> recvs;  // by the row's remote
  std::vector<double> residual_ns;  // per rank: its timeline's clock-fit residual
  std::vector<int64_t> offsets;     // per rank: to the job's clock (job_clock_offsets)
  size_t records = 0;
  bool full = false;
};

std::string row_key(const std::string& host, const std::string& rank, long pid,
                    const std::string& local, const std::string& remote, const std::string& op,
                    uint64_t bytes, bool size_unknown) {
  return host + '\n' + rank + '\n' + std::to_string(pid) + '\n' + local + '\n' + remote + '\n' +
         op + '\n' + std::to_string(bytes) + (size_unknown ? "?" : "");
}

// Post time of the receive minus issue time of the send, on the aligned clock:
// one host's ranks share CLOCK_MONOTONIC; across hosts each rank's anchors.
int64_t post_minus_issue(const Job& job, const Recv& rv, const Send& sd) {
  const Rank &a = job.ranks[rv.rank], &b = job.ranks[sd.rank];
  if (a.host() == b.host()) return rv.post - sd.issue;
  return (rv.post + a.wall_offset_ns()) - (sd.issue + b.wall_offset_ns());
}

void no_verdict(Job* job, const std::vector<Recv>& recvs, const std::string& why) {
  for (const Recv& r : recvs) {
    LinkRow& l = job->links[r.row];
    if (l.posted().unknown().empty()) l.set_posted_unknown(why);
  }
}

// Pairs the receives at one receiver from one sender with that sender's sends.
void pair(Job* job, const Collected& c, std::vector<Recv> recvs, const std::vector<Send>& sends,
          std::map<size_t, std::vector<int64_t>>* lateness) {
  if (recvs.size() != sends.size()) {
    no_verdict(job, recvs,
               "the timelines hold " + std::to_string(sends.size()) + " sends and " +
                   std::to_string(recvs.size()) +
                   " receives on this link (injects, a byte floor or dropped records on one side)");
    return;
  }
  std::stable_sort(recvs.begin(), recvs.end(),
                   [](const Recv& a, const Recv& b) { return a.done < b.done; });
  std::vector<Send> s = sends;
  std::stable_sort(s.begin(), s.end(),
                   [](const Send& a, const Send& b) { return a.issue < b.issue; });
  for (size_t k = 0; k < recvs.size(); ++k) {
    const bool fits =
        recvs[k].size_unknown ? recvs[k].bytes >= s[k].bytes : recvs[k].bytes == s[k].bytes;
    if (!fits) {
      no_verdict(job, recvs,
                 "the sizes of the sends and of the receives on this link do not pair up in order");
      return;
    }
  }
  for (size_t k = 0; k < recvs.size(); ++k) {
    const int64_t d = post_minus_issue(*job, recvs[k], s[k]);
    const double margin = c.residual_ns[recvs[k].rank] + c.residual_ns[s[k].rank];
    PostEvidence& p = job->links[recvs[k].row].posted_mut();
    ++p.matched;
    if (static_cast<double>(d) > margin) {
      ++p.late;
      (*lateness)[recvs[k].row].push_back(d);
    }
    // A wait on the sender: the receiver had nothing else to do from idle_from on.
    const Recv& r = recvs[k];
    const Send& sd = s[k];
    if (job->waits.messages.size() < kMaxMessages)
      job->waits.messages.push_back(Message{sd.rank, r.rank, sd.issue, r.post, r.done, sd.bytes});
    else
      ++job->waits.messages_over;
    if (r.rank == sd.rank) continue;
    const int64_t from = c.offsets[r.rank] + r.idle_from;
    const int64_t until = c.offsets[r.rank] + r.done;
    const int64_t sent = c.offsets[sd.rank] + sd.issue;
    if (until - from >= kMinWaitNs)
      job->waits.list.push_back(Wait{r.rank, sd.rank, from, until, sent, sd.bytes, false});
    // A wait on the receiver: a send that completed only after its receive
    // was posted late (a rendezvous), the sender idle meanwhile.
    const int64_t s_from = c.offsets[sd.rank] + sd.idle_from;
    const int64_t s_until = c.offsets[sd.rank] + sd.done;
    const int64_t posted = c.offsets[r.rank] + r.post;
    if (s_until - s_from >= kMinWaitNs && posted > s_from)
      job->waits.list.push_back(Wait{sd.rank, r.rank, s_from, s_until, posted, sd.bytes, true});
  }
}

int64_t mono_ns(const Calibration& cal, uint64_t ticks) {
  int64_t t = 0;
  return cal.mono_ns_checked(ticks, &t) ? t : static_cast<int64_t>(cal.to_mono_ns(ticks));
}

}  // namespace

RankTimeline read_rank_timeline(const Job& job, uint32_t r, const EvidenceOptions& opt) {
  RankTimeline t;
  t.rank = r;
  const Rank& rank = job.ranks[r];
  OplogReader rd;
  std::string why;
  if (!rd.open(rank.oplog_path, &why) || !rd.scan(&why)) return t;
  const Calibration cal = rd.calib();
  t.residual_ns = cal.residual_ns;
  // The whole file's link table, from the scan (a link's block may come after
  // its first ops: the preload writes links lazily).
  const auto& links = rd.links();
  for (const auto& [id, l] : links) t.links.push_back({id, l.local, l.remote});
  t.ops.reserve(static_cast<size_t>(std::min<uint64_t>(rd.ops_read(), opt.max_records)));
  bool full = false;
  t.read = rd.read_all(
      [&](const oplog::OpEntry* e, size_t n) {
        for (size_t i = 0; i < n && !full; ++i) {
          if (e[i].error) continue;  // a receive in error matched no message
          if (links.find(e[i].link_id) == links.end()) continue;
          if (++t.records > opt.max_records) {
            full = true;  // the matching is off whatever the other ranks hold
            break;
          }
          const OpKind kind = static_cast<OpKind>(e[i].kind);
          if (send_family(kind) == kOther && recv_family(kind) == kOther) continue;
          // The times as the trace writers compute them (perfetto/ops.cpp,
          // otf2_export.cpp: a message's flow finds its ops by their start).
          t.ops.push_back({e[i].link_id, e[i].kind, (e[i].flags & oplog::kOpSizeUnknown) != 0,
                           mono_ns(cal, e[i].start_ticks), mono_ns(cal, e[i].end_ticks),
                           e[i].bytes});
        }
      },
      &why);
  return t;
}

struct ReceiveMatcher::State {
  std::map<std::string, size_t> rows;  // receive rows by row_key
  Collected c;
  std::vector<bool> has_timeline;
};

ReceiveMatcher::ReceiveMatcher(Job* job, const EvidenceOptions& opt)
    : job_(job), opt_(opt), st_(std::make_unique<State>()) {
  for (size_t i = 0; i < job->links.size(); ++i) {
    LinkRow& l = job->links[i];
    if (!l.row.recv) continue;
    l.clear_posted();
    st_->rows[row_key(l.host(), l.rank(), l.pid(), l.local(), l.remote(), l.op(), l.row.bytes,
                      l.row.size_unknown)] = i;
  }
  st_->c.residual_ns.assign(job->ranks.size(), 0.0);
  st_->c.offsets = job_clock_offsets(*job);
  job->waits = WaitStates();
  st_->has_timeline.assign(job->ranks.size(), false);
}

ReceiveMatcher::~ReceiveMatcher() = default;

void ReceiveMatcher::add(const RankTimeline& t) {
  if (t.rank >= job_->ranks.size()) return;
  Collected& c = st_->c;
  const Rank& rank = job_->ranks[t.rank];
  st_->has_timeline[t.rank] = t.read;
  c.residual_ns[t.rank] = t.residual_ns;
  c.records += t.records;
  if (c.records > opt_.max_records) c.full = true;
  if (c.full) return;
  // Where a link's ops go, looked up once per link and family (sends) or
  // per link, op and size (receives), not once per op.
  struct Where {
    const RankTimeline::Link* link = nullptr;
    std::vector<Send>* sends[2] = {nullptr, nullptr};
  };
  std::map<uint32_t, Where> links;
  for (const RankTimeline::Link& l : t.links) links[l.id].link = &l;
  constexpr size_t kNoRow = ~size_t{0};
  std::map<std::tuple<uint32_t, uint8_t, uint64_t, bool>, std::pair<std::vector<Recv>*, size_t>>
      recv_rows;
  // Per op: the rank's last op event before it completed (wait_states.h).
  std::vector<int64_t> idle;
  {
    std::vector<int64_t> events, ends;
    events.reserve(2 * t.ops.size());
    ends.reserve(t.ops.size());
    for (const RankTimeline::Op& o : t.ops) {
      events.push_back(o.start);
      events.push_back(o.end);
      ends.push_back(o.end);
    }
    idle = last_event_before(std::move(events), ends);
  }
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const RankTimeline::Op& o = t.ops[i];
    const auto l = links.find(o.link);
    if (l == links.end()) continue;
    const RankTimeline::Link& link = *l->second.link;
    const OpKind kind = static_cast<OpKind>(o.kind);
    const Family sf = send_family(kind), rf = recv_family(kind);
    if (sf != kOther) {
      std::vector<Send>*& to = l->second.sends[sf];
      if (!to) to = &c.sends[SendKey{link.local, link.remote, sf}];
      to->push_back(Send{o.start, o.end, std::max(o.start, idle[i]), o.bytes, t.rank});
    } else if (rf != kOther) {
      const auto [it, fresh] =
          recv_rows.try_emplace(std::make_tuple(o.link, o.kind, o.bytes, o.size_unknown),
                                std::pair<std::vector<Recv>*, size_t>(nullptr, kNoRow));
      if (fresh) {
        const auto row =
            st_->rows.find(row_key(rank.host(), rank.rank(), rank.pid(), link.local, link.remote,
                                   op_name(kind), o.bytes, o.size_unknown));
        if (row != st_->rows.end())
          it->second = {&c.recvs[RecvKey{link.local, rf}][link.remote], row->second};
      }
      if (it->second.second == kNoRow) continue;
      it->second.first->push_back(Recv{o.start, o.end, std::max(o.start, idle[i]), o.bytes,
                                       o.size_unknown, t.rank, it->second.second});
    }
  }
}

void match_receives_to_sends(Job* job, const EvidenceOptions& opt) {
  bool any = false;
  for (const Rank& r : job->ranks) any = any || !r.oplog_path.empty();
  if (!any) {
    // What the matcher below says of every receive row when no rank has a
    // timeline, in one pass over the rows instead of four.
    for (LinkRow& l : job->links)
      if (l.row.recv) {
        l.clear_posted();
        l.set_posted_unknown(kPostedNoTimeline);
      }
    return;
  }
  ReceiveMatcher m(job, opt);
  for (uint32_t r = 0; r < job->ranks.size(); ++r)
    if (!job->ranks[r].oplog_path.empty()) m.add(read_rank_timeline(*job, r, opt));
  m.finish();
}

void ReceiveMatcher::finish() {
  Job* job = job_;
  const EvidenceOptions& opt = opt_;
  const Collected& c = st_->c;
  const std::vector<bool>& has_timeline = st_->has_timeline;
  // Rows of ranks without a timeline.
  std::map<std::string, bool> rank_has;  // host, rank, pid -> timeline read
  for (uint32_t r = 0; r < job->ranks.size(); ++r)
    rank_has[job->ranks[r].host() + '\n' + job->ranks[r].rank() + '\n' +
             std::to_string(job->ranks[r].pid())] = has_timeline[r];
  for (LinkRow& l : job->links) {
    if (!l.row.recv) continue;
    if (!rank_has[l.host() + '\n' + l.rank() + '\n' + std::to_string(l.pid())])
      l.set_posted_unknown(kPostedNoTimeline);
  }
  // Waits come from the timelines only when a rank has one (else the report
  // weighs overlapping poll gaps instead: root_causes.h), as
  // match_receives_to_sends decides before it makes a matcher.
  bool any = false;
  for (const Rank& r : job->ranks) any = any || !r.oplog_path.empty();
  job->waits.from_timelines = any && !c.full;
  if (c.full) {
    for (LinkRow& l : job->links)
      if (l.row.recv)
        l.set_posted_unknown("more than " + std::to_string(opt.max_records) +
                             " timeline records to match; none was");
    return;
  }
  for (const auto& [key, by_remote] : c.recvs)
    for (const auto& [remote, rv] : by_remote)
      for (const Recv& r : rv) ++job->links[r.row].posted_mut().logged;

  std::map<size_t, std::vector<int64_t>> lateness;
  for (const auto& [key, by_remote] : c.recvs) {
    const std::string& receiver = key.first;
    const int family = key.second;
    // The senders whose timelines have sends of this family to this receiver.
    std::vector<std::string> senders;
    for (auto it = c.sends.begin(); it != c.sends.end(); ++it)
      if (std::get<1>(it->first) == receiver && std::get<2>(it->first) == family)
        senders.push_back(std::get<0>(it->first));
    std::map<std::string, std::vector<Recv>> from;
    for (const auto& [remote, rv] : by_remote) {
      if (remote != kAny) {
        from[remote].insert(from[remote].end(), rv.begin(), rv.end());
      } else if (senders.size() == 1) {
        from[senders[0]].insert(from[senders[0]].end(), rv.begin(), rv.end());
      } else {
        no_verdict(job, rv,
                   senders.empty() ? "no sender's timeline has sends to this address"
                                   : "receives from any source, and several senders' timelines "
                                     "have sends to this address");
      }
    }
    for (auto& [sender, rv] : from) {
      const auto s = c.sends.find(SendKey{sender, receiver, family});
      if (s == c.sends.end()) {
        no_verdict(job, rv, "no per-op timeline has the sends of " + sender);
        continue;
      }
      pair(job, c, rv, s->second, &lateness);
    }
  }
  for (auto& [row, d] : lateness) {
    std::nth_element(d.begin(), d.begin() + static_cast<long>(d.size() / 2), d.end());
    job->links[row].posted_mut().late_median_ns = static_cast<double>(d[d.size() / 2]);
  }
  for (LinkRow& l : job->links)
    if (l.row.recv && l.posted().unknown().empty() && l.posted().matched < l.row.count)
      l.posted_mut().set_unknown(
          l.posted().logged < l.row.count
              ? "only " + std::to_string(l.posted().logged) + " of " + std::to_string(l.row.count) +
                    " receives in the per-op timeline (FABTRACE_OPS_MIN_BYTES?)"
              : "not matched");
}

}  // namespace fabtrace::report
