#include "userspace/live/live_view.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <set>
#include <tuple>

#include "common/clock.h"
#include "common/json_writer.h"
#include "common/op_kinds.h"
#include "common/printable.h"

namespace fabtrace {
namespace live {

namespace {

// Late: no snapshot for this many intervals (a stopped process, or one whose
// publisher cannot run); its rates are then not "now".
constexpr uint64_t kLateIntervals = 3;
constexpr size_t kMaxStallsShown = 64;

double per_s(uint64_t n, uint64_t interval_ns) {
  return interval_ns ? static_cast<double>(n) * 1e9 / static_cast<double>(interval_ns) : 0.0;
}

bool link_matches(const Filter& f, const std::string& local, const std::string& remote,
                  const std::string& op) {
  if (!f.link.empty() && (local + " -> " + remote).find(f.link) == std::string::npos) return false;
  return f.op.empty() || op.find(f.op) != std::string::npos;
}

std::string with_commas(double v) {
  char b[32];
  std::snprintf(b, sizeof(b), "%.0f", v < 0 ? 0 : v);
  std::string s = b, out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

std::string fixed(double v, int digits) {
  char b[32];
  std::snprintf(b, sizeof(b), "%.*f", digits, v);
  return b;
}

std::string utc_time(uint64_t real_ns, bool millis) {
  const time_t t = static_cast<time_t>(real_ns / 1000000000ULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  char b[48];
  if (millis)
    std::snprintf(b, sizeof(b), "%02d:%02d:%02d.%03u", tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<unsigned>(real_ns / 1000000ULL % 1000));
  else
    std::snprintf(b, sizeof(b), "%02d:%02d:%02d", tm.tm_hour, tm.tm_min, tm.tm_sec);
  return b;
}

const char* state_word(char s) {
  switch (s) {
    case 'R':
      return "running";
    case 'S':
      return "sleeping";
    case 'D':
      return "disk";
    case 'T':
      return "stopped";
    case 't':
      return "traced";
    case 'Z':
      return "zombie";
    case 0:
      return "gone";
    default:
      return "other";
  }
}

std::string pad(std::string s, size_t w, bool right = false) {
  if (s.size() >= w) return s;
  return right ? std::string(w - s.size(), ' ') + s : s + std::string(w - s.size(), ' ');
}

void build_process(const Filter& f, uint64_t now_mono, ProcessView* p) {
  const Snapshot& s = p->snap;
  const uint64_t published = s.proc[kp_published_mono_ns];
  p->age_s = now_mono > published ? static_cast<double>(now_mono - published) / 1e9 : 0.0;
  p->late = now_mono > published &&
            now_mono - published > kLateIntervals * std::max<uint64_t>(s.head[kh_interval_ns], 1);
  const uint64_t iv = s.proc[kp_interval_real_ns];
  for (const Link& l : s.links) {
    const OpKind kind = static_cast<OpKind>(l.c[kl_op]);
    LinkView lv;
    lv.local = l.local;
    lv.remote = l.remote;
    lv.op = op_name(kind);
    if (!link_matches(f, lv.local, lv.remote, lv.op)) continue;
    lv.recv = op_is_recv(kind);
    // Its traffic: the ops completed, and those issued without a completion
    // to time (fi_inject), which move their bytes all the same.
    if (!p->late) {
      lv.ops_s = per_s(l.c[kl_ops_iv] + l.c[kl_untimed_iv], iv);
      lv.mb_s = per_s(l.c[kl_bytes_iv] + l.c[kl_untimed_bytes_iv], iv) / 1e6;
    }
    lv.p50_iv_ns = l.c[kl_p50_iv_ns];
    lv.p99_iv_ns = l.c[kl_p99_iv_ns];
    lv.row = &l;
    p->ops_s += lv.ops_s;
    p->mb_s += lv.mb_s;
    // Receives wait for their sender by design: the slowest link is a link
    // this process drives (as in the report's "slowest links").
    if (!lv.recv && l.c[kl_ops_iv] && lv.p99_iv_ns > p->slowest_p99_ns) {
      p->slowest_p99_ns = lv.p99_iv_ns;
      p->slowest_link = lv.local + " -> " + lv.remote + " " + lv.op;
    }
    p->links.push_back(std::move(lv));
  }
  std::stable_sort(p->links.begin(), p->links.end(),
                   [](const LinkView& a, const LinkView& b) { return a.ops_s > b.ops_s; });
  for (const Cq& q : s.cqs) {
    CqView c;
    c.id = q.c[kq_id];
    c.row = &q;
    c.gap_now_ns = q.c[kq_max_gap_iv_ns];
    const uint64_t last = q.c[kq_last_poll_mono_ns];
    // A closed CQ's gap is not open: nobody is meant to poll it.
    if (last && !q.c[kq_closed] && now_mono > last && now_mono - last > c.gap_now_ns) {
      c.gap_now_ns = now_mono - last;
      c.open_gap = true;
    }
    if (c.gap_now_ns > p->worst_gap_ns) {
      p->worst_gap_ns = c.gap_now_ns;
      p->worst_gap_cq = c.id;
      p->worst_gap_open = c.open_gap;
    }
    p->cqs.push_back(c);
  }
}

// The session's stalls the view may show: a user's own file as it is; as
// root, a file's events only for processes that are that user's.
void join_stalls(const GatherOptions& opt, NodeView* v) {
  if (!read_session(opt.run_dir, opt.read.proc_root, &v->session_info)) return;
  v->session = true;
  std::map<uid_t, StallsDoc> docs;
  read_stalls(opt.run_dir, opt.read.caller, &docs, &v->problems);
  std::map<uint32_t, uid_t> listed;
  for (const ProcessView& p : v->procs) listed[static_cast<uint32_t>(p.snap.pid())] = p.snap.owner;
  const auto belongs = [&](uid_t uid, uint32_t pid) {
    if (opt.read.caller != 0) return true;
    const auto it = listed.find(pid);
    uid_t owner = 0;
    return it != listed.end()
               ? it->second == uid
               : process_owner(static_cast<pid_t>(pid), opt.read.proc_root, &owner) && owner == uid;
  };
  for (const auto& [uid, d] : docs) {
    for (const StallEvent& e : d.recent)
      if (belongs(uid, e.pid) && (opt.filter.rank.empty() || e.rank == opt.filter.rank) &&
          (!opt.filter.pid || e.pid == static_cast<uint32_t>(opt.filter.pid)))
        v->stalls.push_back(e);
    for (const CauseCount& c : d.counts)
      if (belongs(uid, c.pid)) v->counts[c.pid].push_back(c);
  }
  std::stable_sort(
      v->stalls.begin(), v->stalls.end(),
      [](const StallEvent& a, const StallEvent& b) { return a.end_mono_ns > b.end_mono_ns; });
  if (v->stalls.size() > kMaxStallsShown) v->stalls.resize(kMaxStallsShown);
}

}  // namespace

const char* sort_key_name(SortKey k) {
  switch (k) {
    case SortKey::kOps:
      return "ops";
    case SortKey::kBytes:
      return "mb";
    case SortKey::kP99:
      return "p99";
    case SortKey::kGap:
      return "gap";
    default:
      return "rank";
  }
}

bool parse_sort_key(const std::string& s, SortKey* k) {
  for (SortKey c : {SortKey::kRank, SortKey::kOps, SortKey::kBytes, SortKey::kP99, SortKey::kGap})
    if (s == sort_key_name(c)) {
      *k = c;
      return true;
    }
  return false;
}

std::string short_ns(uint64_t ns, bool dash) {
  if (!ns && dash) return "-";
  char b[32];
  if (ns >= 999500000ULL)
    std::snprintf(b, sizeof(b), "%.3f s", static_cast<double>(ns) / 1e9);
  else if (ns >= 999500)
    std::snprintf(b, sizeof(b), "%.1f ms", static_cast<double>(ns) / 1e6);
  else if (ns >= 1000)
    std::snprintf(b, sizeof(b), "%.1f us", static_cast<double>(ns) / 1e3);
  else
    std::snprintf(b, sizeof(b), "%llu ns", static_cast<unsigned long long>(ns));
  return b;
}

bool gather(const GatherOptions& opt, NodeView* v, std::string* error) {
  *v = NodeView();
  std::vector<Snapshot> snaps;
  if (!read_snapshots(opt.read, &snaps, &v->skipped, error)) return false;
  v->now_mono_ns = mono_ns();
  v->now_real_ns = real_ns();
  for (Snapshot& s : snaps) {
    if (!opt.filter.rank.empty() && s.rank != opt.filter.rank) continue;
    if (opt.filter.pid && s.pid() != opt.filter.pid) continue;
    ProcessView p;
    p.snap = std::move(s);
    p.state = process_state(p.snap.pid(), opt.read.proc_root);
    v->procs.push_back(std::move(p));
  }
  // Built in place: the views point into their own snapshot's rows.
  for (ProcessView& p : v->procs) build_process(opt.filter, v->now_mono_ns, &p);
  join_stalls(opt, v);
  sort_view(v, opt.sort);
  return true;
}

void sort_view(NodeView* v, SortKey key) {
  const auto rank_key = [](const ProcessView& p) {
    return std::make_tuple(p.snap.rank.size(), p.snap.rank, p.snap.pid());
  };
  std::stable_sort(v->procs.begin(), v->procs.end(),
                   [&](const ProcessView& a, const ProcessView& b) {
                     switch (key) {
                       case SortKey::kOps:
                         return a.ops_s > b.ops_s;
                       case SortKey::kBytes:
                         return a.mb_s > b.mb_s;
                       case SortKey::kP99:
                         return a.slowest_p99_ns > b.slowest_p99_ns;
                       case SortKey::kGap:
                         return a.worst_gap_ns > b.worst_gap_ns;
                       default:
                         return rank_key(a) < rank_key(b);
                     }
                   });
}

std::vector<std::string> view_lines(const NodeView& v, const GatherOptions& opt, size_t width,
                                    bool keys) {
  std::vector<std::string> out;
  const auto add = [&](std::string s) {
    s = printable(s);
    if (s.size() > width) s.resize(width);
    out.push_back(std::move(s));
  };
  std::string host = v.procs.empty() ? "" : v.procs.front().snap.host;
  add("fabtrace top  " + utc_time(v.now_real_ns, false) + " UTC  " + host + "  " +
      std::to_string(v.procs.size()) + " traced process" + (v.procs.size() == 1 ? "" : "es") +
      "  sort: " + sort_key_name(opt.sort) +
      (opt.filter.empty()
           ? ""
           : "  filter:" + (opt.filter.rank.empty() ? "" : " rank=" + opt.filter.rank) +
                 (opt.filter.link.empty() ? "" : " link~" + opt.filter.link) +
                 (opt.filter.op.empty() ? "" : " op~" + opt.filter.op) +
                 (opt.filter.pid ? " pid=" + std::to_string(opt.filter.pid) : "")));
  if (v.session)
    add("record session pid " + std::to_string(v.session_info.pid) + " since " +
        utc_time(v.session_info.started_real_ns, false) + " UTC: stalls explained as they happen");
  else
    add("no fabtrace record session on this node: stalls are not explained live");
  add("");
  add(pad("RANK", 6) + pad("PID", 9) + pad("COMMAND", 16) + pad("OPS/S", 12, true) +
      pad("MB/S", 10, true) + "  " + pad("P99", 10, true) + "  " + pad("CQ GAP NOW", 14, true) +
      "  STATE");
  for (const ProcessView& p : v.procs) {
    std::string gap = short_ns(p.worst_gap_ns);
    if (p.worst_gap_ns) gap += (p.worst_gap_open ? " open" : "");
    std::string state = state_word(p.state);
    if (p.late) state += ", no snapshot for " + fixed(p.age_s, 1) + " s";
    add(pad(p.snap.rank, 6) + pad(std::to_string(p.snap.pid()), 9) + pad(p.snap.comm, 16) +
        pad(with_commas(p.ops_s), 12, true) + pad(fixed(p.mb_s, 1), 10, true) + "  " +
        pad(short_ns(p.slowest_p99_ns), 10, true) + "  " + pad(gap, 14, true) + "  " + state);
    for (const LinkView& l : p.links)
      add("      " + l.local + " -> " + l.remote + "  " + l.op + "  " + with_commas(l.ops_s) +
          " ops/s  " + fixed(l.mb_s, 1) + " MB/s  p50 " + short_ns(l.p50_iv_ns) + "  p99 " +
          short_ns(l.p99_iv_ns) + (l.recv ? "  (receive: includes the wait)" : ""));
  }
  if (v.procs.empty()) add("  (no traced process of yours is running on this node)");
  if (v.session) {
    add("");
    add("latest stalls and slow ops (fabtrace record: the newest and the longest of the last 30 "
        "s), newest first:");
    if (v.stalls.empty()) add("  none yet");
    for (const StallEvent& e : v.stalls) {
      const std::string what = e.slow_op ? e.op + " " + std::to_string(e.bytes) + " B"
                                         : "CQ#" + std::to_string(e.cq) + " stall";
      add("  " + utc_time(e.end_real_ns, true) + "  r" + e.rank + " pid " + std::to_string(e.pid) +
          "  " + what + " " + short_ns(e.dur_ns) + "  " + e.why);
    }
  }
  if (keys) {
    add("");
    add("keys: s sort (rank/ops/mb/p99/gap)  r rank  l link  o op  c clear  q quit");
  }
  return out;
}

std::string view_json(const NodeView& v, const GatherOptions& opt) {
  std::string text;
  if (!json_text(
          &text,
          [&](JsonWriter& w) {
            w.begin_object();
            w.field("format", "fabtrace-top").field("version", uint64_t{1});
            w.field("time_real_ns", v.now_real_ns).field("time_mono_ns", v.now_mono_ns);
            w.field("sort", sort_key_name(opt.sort));
            w.key("filter").begin_object();
            w.field("rank", opt.filter.rank)
                .field("link", opt.filter.link)
                .field("op", opt.filter.op);
            w.field("pid", static_cast<int64_t>(opt.filter.pid));
            w.end_object();
            w.key("session");
            if (v.session) {
              w.begin_object();
              w.field("pid", static_cast<int64_t>(v.session_info.pid));
              w.field("started_real_ns", v.session_info.started_real_ns);
              w.end_object();
            } else {
              w.null();
            }
            w.key("processes").begin_array();
            for (const ProcessView& p : v.procs) {
              const Snapshot& s = p.snap;
              w.begin_object();
              w.field("rank", s.rank).field("pid", static_cast<int64_t>(s.pid()));
              w.field("uid", static_cast<uint64_t>(s.owner))
                  .field("host", s.host)
                  .field("comm", s.comm);
              w.field("job", s.job).field("state", state_word(p.state)).field("late", p.late);
              w.field("age_s", p.age_s).field("ops_per_s", p.ops_s).field("mb_per_s", p.mb_s);
              w.field("slowest_p99_ns", p.slowest_p99_ns).field("slowest_link", p.slowest_link);
              w.field("worst_gap_ns", p.worst_gap_ns).field("worst_gap_cq", p.worst_gap_cq);
              w.field("worst_gap_open", p.worst_gap_open);
              for (int i = 0; i < kProcessFields; ++i) w.field(kProcessNames[i], s.proc[i]);
              w.key("links").begin_array();
              for (const LinkView& l : p.links) {
                w.begin_object();
                w.field("local", l.local).field("remote", l.remote).field("op", l.op);
                w.field("ops_per_s", l.ops_s).field("mb_per_s", l.mb_s);
                for (int i = 0; i < kLinkFields; ++i)
                  if (i != kl_op) w.field(kLinkNames[i], l.row->c[i]);
                w.end_object();
              }
              w.end_array();
              w.key("cqs").begin_array();
              for (const CqView& c : p.cqs) {
                w.begin_object();
                for (int i = 0; i < kCqFields; ++i) w.field(kCqNames[i], c.row->c[i]);
                w.field("gap_now_ns", c.gap_now_ns).field("open_gap", c.open_gap);
                w.end_object();
              }
              w.end_array();
              w.key("stalls_by_cause").begin_array();
              const auto it = v.counts.find(static_cast<uint32_t>(s.pid()));
              if (it != v.counts.end())
                for (const CauseCount& c : it->second) {
                  w.begin_object();
                  w.field("cause", c.cause).field("stalls", c.stalls).field("slow_ops", c.slow_ops);
                  w.end_object();
                }
              w.end_array();
              w.end_object();
            }
            w.end_array();
            w.key("stalls").begin_array();
            for (const StallEvent& e : v.stalls) write_stall_event(w, e, false);
            w.end_array();
            w.key("skipped").begin_array();
            for (const Skipped& s : v.skipped) {
              w.begin_object();
              w.field("file", s.name).field("why", s.why).field("stale", s.stale);
              w.end_object();
            }
            w.end_array();
            w.end_object();
          },
          true))
    return "{}\n";
  return text;
}

}  // namespace live
}  // namespace fabtrace
