// load_job: finds a job's per-rank outputs under a directory and merges them.
//
// Files are recognised by the names the preload gives them (common/output_names.h):
//   fabtrace.<host>.r<rank>.p<pid>.json       the rank's report (the one required file)
//   fabtrace.<host>.r<rank>.p<pid>.txt        its text twin (ignored when the JSON is there)
//   fabtrace_ops.<host>.r<rank>.p<pid>.oplog  per-op timeline (scanned, not held)
//   fabtrace_nic.<host>.r<rank>.p<pid>.csv    NIC counter series (reduced for plotting)
//   fabtrace_kernel.<host>.p<pid>.klog        a node's kernel log (fabtrace record)
// Files with other names are not looked at. A timeline or counter file goes
// with the report of the same (host, rank, pid), taken from its own header.
#include <sys/mman.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <string_view>
#include <system_error>
#include <thread>
#include <tuple>
#include <utility>

#include "common/counter_csv.h"
#include "common/input_limits.h"
#include "common/oplog_file.h"
#include "common/output_names.h"
#include "common/rank.h"
#include "userspace/report/job.h"
#include "userspace/report/parsed_report.h"
#include "userspace/report/post_evidence.h"
#include "userspace/report/report_reader.h"
#include "userspace/report/report_rows.h"

namespace fabtrace::report {

namespace fs = std::filesystem;

namespace {

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

// A reader's message without the file's path in it (Skipped names the file).
std::string without_path(std::string msg, const std::string& path) {
  if (starts_with(msg, path.c_str())) {
    msg.erase(0, path.size());
    // "path:12: what" -> "line 12: what"
    size_t digits = 1;
    while (digits < msg.size() && std::isdigit(static_cast<unsigned char>(msg[digits]))) ++digits;
    if (msg.size() > 2 && msg[0] == ':' && digits > 1 && digits < msg.size() && msg[digits] == ':')
      return "line " + msg.substr(1, digits - 1) + msg.substr(digits);
    while (!msg.empty() && (msg[0] == ':' || msg[0] == ' ')) msg.erase(0, 1);
    if (starts_with(msg, "is ")) msg.erase(0, 3);
    return msg;
  }
  const size_t at = msg.find(path);
  if (at != std::string::npos) msg.replace(at, path.size(), "the file");
  return msg;
}

// Ranks sort numerically when they are numbers ("2" before "10"), "NA" and
// other names after the numbers.
bool rank_less(const std::string& a, const std::string& b) {
  const auto numeric = [](const std::string& s) {
    return !s.empty() && s.size() < 19 && std::all_of(s.begin(), s.end(), ::isdigit);
  };
  const bool na = numeric(a), nb = numeric(b);
  if (na != nb) return na;
  if (na) return std::stoll(a) < std::stoll(b);
  return a < b;
}

using Key = std::tuple<std::string, std::string, long>;  // host, rank, pid

struct Found {
  std::vector<std::string> reports, texts, oplogs, counters, kernel_logs;
};

// The key of a process: host and rank by the writer's one rule (output_token),
// so that files written by older versions, which applied it to the counter
// CSV only, still meet.
Key key_of(const std::string& host, const std::string& rank, long pid) {
  return Key{output_token(host), output_token(rank), pid};
}

// Every directory under dir, without following symlinks to directories (no
// cycles) and without recursion (any depth). A directory that cannot be
// listed is named in `skipped`, never passed over in silence.
void walk(const std::string& dir, const LoadOptions& opt, Found* found,
          std::vector<Skipped>* skipped) {
  std::set<std::string> excluded;
  for (const std::string& d : opt.exclude_dirs) {
    std::error_code ec;
    const fs::path c = fs::weakly_canonical(d, ec);
    if (!ec) excluded.insert(c.string());
  }
  std::vector<fs::path> todo{fs::path(dir)};
  while (!todo.empty()) {
    const fs::path d = std::move(todo.back());
    todo.pop_back();
    std::error_code ec;
    fs::directory_iterator it(d, ec), end;
    if (ec) {
      skipped->push_back({d.string(), "cannot read the directory: " + ec.message()});
      continue;
    }
    for (; it != end; it.increment(ec)) {
      const fs::directory_entry& e = *it;
      std::error_code tec;
      if (e.is_symlink(tec)) {
        if (!e.is_regular_file(tec)) continue;  // a link to a directory is not walked
      } else if (e.is_directory(tec)) {
        std::error_code cec;
        const fs::path c = fs::weakly_canonical(e.path(), cec);
        if (cec || !excluded.count(c.string())) todo.push_back(e.path());
        continue;
      } else if (!e.is_regular_file(tec)) {
        continue;
      }
      const std::string name = e.path().filename().string();
      const std::string path = e.path().string();
      OutputKind kind;
      if (!output_kind_of(name, &kind)) continue;
      switch (kind) {
        case OutputKind::kReportJson:
          found->reports.push_back(path);
          break;
        case OutputKind::kReportText:
          found->texts.push_back(path);
          break;
        case OutputKind::kOplog:
          found->oplogs.push_back(path);
          break;
        case OutputKind::kNicCounters:
          found->counters.push_back(path);
          break;
        case OutputKind::kKernelLog:
          found->kernel_logs.push_back(path);
          break;
      }
    }
    if (ec) skipped->push_back({d.string(), "cannot read the directory: " + ec.message()});
  }
  for (auto* v :
       {&found->reports, &found->texts, &found->oplogs, &found->counters, &found->kernel_logs})
    std::sort(v->begin(), v->end());
}

// The node-wide sessions' kernel logs (one per node; a second of the same host
// is used too: sessions of different runs, or restarted ones).
void load_kernel_logs(const std::vector<std::string>& paths, Job* job) {
  for (const std::string& path : paths) {
    KernelNode n;
    std::string why;
    if (!load_kernel_node(path, &n, &why)) {
      job->skipped.push_back({path, without_path(why, path)});
      continue;
    }
    if (n.truncated)
      job->partial.push_back({path, "kernel log cut short after " + std::to_string(n.records) +
                                        " events (the rest of the file is unreadable)"});
    else if (!n.ended)
      job->partial.push_back({path,
                              "kernel log without its end block: the session did not stop "
                              "cleanly"});
    bool host_has_ranks = false;
    for (const Rank& r : job->ranks) host_has_ranks = host_has_ranks || r.host == n.host;
    if (!host_has_ranks)
      job->partial.push_back(
          {path, "kernel log of host " + n.host + ", where no rank of this job reported"});
    job->kernel.push_back(std::move(n));
  }
}

void attach_oplog(const std::string& path, std::map<Key, size_t>& by_key, Job* job) {
  OplogReader r;
  std::string err;
  if (!r.open(path, &err)) {
    job->skipped.push_back({path, without_path(err, path)});
    return;
  }
  const OplogMeta& m = r.header().meta;
  const auto it = by_key.find(key_of(m.host, m.rank, m.pid));
  if (it == by_key.end()) {
    // Why there is no report tells the reader what happened to the process.
    const std::string who =
        "per-op timeline of host " + m.host + " rank " + m.rank + " pid " + std::to_string(m.pid);
    std::string why;
    if (!r.scan(&err))
      why = " has no report beside it, and cannot be read: " + without_path(err, path);
    else if (r.has_end() && r.ops_read() == 0 && r.end_ops() == 0)
      why =
          " holds no ops and ends cleanly: the process did no data-path ops, so it wrote no "
          "report (nothing to report)";
    else if (r.has_end())
      why = " ends cleanly with " + std::to_string(r.ops_read()) +
            " ops but has no report beside it (its report was removed, or written elsewhere)";
    else
      why =
          " has no report beside it and no end record: the process did not exit cleanly "
          "(killed or crashed)";
    job->skipped.push_back({path, who + why});
    return;
  }
  Rank& rank = job->ranks[it->second];
  if (!rank.oplog_path.empty()) {
    job->skipped.push_back(
        {path, "a second per-op timeline of the same process (" + rank.oplog_path + " is used)"});
    return;
  }
  if (!r.scan(&err)) {
    job->skipped.push_back({path, without_path(err, path)});
    return;
  }
  rank.oplog_path = path;
  rank.oplog_ops = r.ops_read();
  rank.oplog_truncated = r.truncated();
  rank.oplog_ended = r.has_end();
  rank.oplog_dropped = r.has_end() ? r.end_dropped() : 0;
  if (r.truncated())
    job->partial.push_back(
        {path, "cut short after " + std::to_string(r.ops_read()) + " ops (" +
                   (r.stop_reason().empty() ? std::string("incomplete block") : r.stop_reason()) +
                   "; the rest of the file is not read)"});
  else if (!r.has_end())
    job->partial.push_back({path, "no end record: the process did not exit cleanly"});
}

void attach_counters(const std::string& path, const LoadOptions& opt, std::map<Key, size_t>& by_key,
                     Job* job) {
  CounterSeries cs;
  std::string err;
  if (!read_counter_csv(path, &cs, &err)) {
    job->skipped.push_back({path, without_path(err, path)});
    return;
  }
  auto it = by_key.find(key_of(cs.host, cs.rank, cs.pid));
  if (it == by_key.end() && cs.rank == kNodeCountersRank) {
    // The node's series, sampled once by `fabtrace record` for all its ranks:
    // shown with the host's first rank that has no series of its own.
    for (auto k = by_key.begin(); k != by_key.end(); ++k) {
      if (std::get<0>(k->first) != cs.host || !job->ranks[k->second].counters_path.empty())
        continue;
      if (it == by_key.end() || rank_less(std::get<1>(k->first), std::get<1>(it->first))) it = k;
    }
  }
  if (it == by_key.end()) {
    job->skipped.push_back({path, "NIC counters of host " + cs.host + " rank " + cs.rank + " pid " +
                                      std::to_string(cs.pid) + " have no report beside them"});
    return;
  }
  Rank& rank = job->ranks[it->second];
  if (!rank.counters_path.empty()) {
    job->skipped.push_back(
        {path, "a second counter file of the same process (" + rank.counters_path + " is used)"});
    return;
  }
  rank.counters_path = path;
  rank.counter_devices = cs.devices;
  rank.counter_samples = cs.rows.size();
  if (cs.truncated) job->partial.push_back({path, "its last line was cut short (dropped)"});
  if (opt.read_counters)
    reduce_counter_series(cs, rank.wall_offset_ns(), kCounterTracksPerDevice, kCounterPlotPoints,
                          &rank.counter_tracks);
}

// A rank's link rows for Job::links, in its report's order. take: moved out of
// the report, whose links are then freed.
std::vector<LinkRow> link_rows_of(const std::string& host, const std::string& rank, long pid,
                                  std::vector<LinkReport>* links, bool take) {
  size_t n = 0;
  for (const LinkReport& l : *links) n += l.rows.size();
  std::vector<LinkRow> out;
  out.reserve(n);
  const RowOwner& owner = intern_owner(host, rank, pid);
  Interned op;  // the previous row's: a link's rows mostly repeat a few ops
  for (LinkReport& l : *links) {
    const Interned local = intern(l.local), remote = intern(l.remote);
    for (OpRow& o : l.rows) {
      LinkRow row;
      row.set_owner(owner);
      row.set_link(local, remote);
      if (op.str() != o.op) op = intern(o.op);
      row.set_op(op);
      row.row = o;
      if (row.row.recv) row.set_posted_not_read();
      out.push_back(std::move(row));
    }
  }
  if (take) std::vector<LinkReport>().swap(*links);
  return out;
}

// The local addresses of a report's links that none of its NIC rows lists.
size_t count_unlisted_locals(const ProcessReport& rep) {
  std::set<std::string> listed;
  for (const NicReport& nic : rep.nics) listed.insert(nic.locals.begin(), nic.locals.end());
  std::set<std::string> unlisted;
  for (const LinkReport& l : rep.links)
    if (!l.local.empty() && !listed.count(l.local)) unlisted.insert(l.local);
  return unlisted.size();
}

}  // namespace

void stage_rows(ParsedReport* p) {
  if (!p->ok) return;
  p->link_count = p->report.links.size();
  p->unlisted_locals = count_unlisted_locals(p->report);
  p->rows = link_rows_of(p->report.host, p->report.rank, p->report.pid, &p->report.links,
                         /*take=*/true);
}

// Parses the reports on up to `threads` threads (the parse is most of the
// load), each straight into its rows (report_rows.h). Each file's result goes
// in its own slot, so the merge that follows, in file order, is the same
// whatever the number of threads.
std::vector<ParsedReport> parse_reports(const std::vector<std::string>& paths, unsigned threads) {
  std::vector<ParsedReport> out(paths.size());
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<size_t>(threads, paths.size()));
  std::atomic<size_t> next{0};
  const auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < paths.size();) read_report_rows(paths[i], &out[i]);
  };
  if (threads <= 1) {
    work();
    return out;
  }
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back(work);
  for (std::thread& t : pool) t.join();
  return out;
}

std::vector<std::string> Job::hosts() const {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const Rank& r : ranks)
    if (seen.insert(r.host).second) out.push_back(r.host);
  return out;
}

size_t Job::nic_count() const {
  size_t n = 0;
  for (const Rank& r : ranks) n += r.report.nics.size() + r.unlisted_locals;
  return n;
}

size_t Job::distinct_links() const {
  // Names are interned (one copy, one number per value): pairs of their
  // numbers are distinct exactly when the pairs of strings are. While the rows
  // of each local address come in one run (a rank's rows), a remote is new to
  // the run when it is not marked with the run's local; else the pairs are
  // sorted.
  const size_t ids = interned_count();
  std::vector<uint32_t> mark(ids, UINT32_MAX);  // by remote: the local of its last run
  std::vector<char> ran(ids, 0);                // by local: a run of it ended
  size_t n = 0;
  uint32_t run = UINT32_MAX;
  bool runs = true;
  for (const LinkRow& l : links) {
    const uint32_t lo = l.local_id(), re = l.remote_id();
    if (lo != run) {
      if (run != UINT32_MAX) ran[run] = 1;
      if (ran[lo]) {
        runs = false;
        break;
      }
      run = lo;
    }
    if (mark[re] != lo) {
      mark[re] = lo;
      ++n;
    }
  }
  if (runs) return n;
  std::vector<uint64_t> pairs;
  pairs.reserve(links.size());
  for (const LinkRow& l : links) pairs.push_back(uint64_t{l.local_id()} << 32 | l.remote_id());
  std::sort(pairs.begin(), pairs.end());
  return static_cast<size_t>(std::unique(pairs.begin(), pairs.end()) - pairs.begin());
}

Rank make_rank(ProcessReport report, std::string report_path) {
  Rank r;
  r.host = report.host;
  r.rank = report.rank;
  r.pid = report.pid;
  r.providers = report.providers;
  r.start_mono_ns = report.start_mono_ns;
  r.start_wall_ns = report.start_wall_ns;
  r.duration_s = report.duration_s;
  r.report_path = std::move(report_path);
  r.report = std::move(report);
  return r;
}

void mark_outliers(std::vector<LinkRow>* links) {
  // Keyed by the op name's number (interned.h): no string per row. A job has
  // few groups, and rows mostly repeat the previous row's group.
  using Group = std::pair<uint32_t, uint64_t>;
  std::map<Group, size_t> group_of;
  std::vector<std::vector<double>> p99s;
  Group last{UINT32_MAX, 0};
  size_t at = 0;
  const auto group = [&](const LinkRow& l) {
    const Group g{l.op_id(), l.row.bytes};
    if (g != last) {
      const auto it = group_of.emplace(g, p99s.size()).first;
      if (it->second == p99s.size()) p99s.emplace_back();
      at = it->second;
      last = g;
    }
    return at;
  };
  for (const LinkRow& l : *links)
    if (l.row.count > 0) p99s[group(l)].push_back(l.row.p99_ns);
  // The lower middle p99 of each group of two rows or more (nth_element: the
  // value a sort puts there).
  std::vector<double> median(p99s.size(), 0);
  std::vector<char> has_median(p99s.size(), 0);
  for (size_t g = 0; g < p99s.size(); ++g) {
    std::vector<double>& v = p99s[g];
    if (v.size() >= 2) {
      const auto mid = v.begin() + static_cast<std::ptrdiff_t>((v.size() - 1) / 2);
      std::nth_element(v.begin(), mid, v.end());
      median[g] = *mid;
      has_median[g] = 1;
    }
    std::vector<double>().swap(v);
  }
  for (LinkRow& l : *links) {
    l.outlier_ratio = 0;
    if (l.row.count == 0) continue;
    const size_t g = group(l);
    if (!has_median[g]) continue;
    if (median[g] > 0)
      l.outlier_ratio = l.row.p99_ns / median[g];
    else if (l.row.p99_ns > 0)
      l.outlier_ratio = kOutlierRatio * 1000;  // everything else took no measurable time
  }
}

namespace {

// Memory about to be filled for the first time, of a large table: in huge
// pages where the kernel makes them on request (transparent_hugepage
// "madvise", Debian's default), 512 times fewer page faults (a page fault
// here was a fifth of the time of a job of 1M rows).
void advise_huge_pages(void* p, size_t bytes) {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  if (bytes < 2 * kHuge) return;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

double process_cpu_s() {
  rusage u;
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

void add_row_totals(Job* job, const OpStats& o) {
  job->ops = sat_add(job->ops, o.issued());
  job->completed = sat_add(job->completed, o.count);
  if (!o.recv) job->bytes = sat_add(job->bytes, sat_mul(o.bytes, o.count));
  job->errors = sat_add(job->errors, o.errors);
  job->eagain = sat_add(job->eagain, o.eagain);
  job->untimed = sat_add(job->untimed, o.untimed);
  job->unfinished = sat_add(job->unfinished, o.unfinished);
  job->refused = sat_add(job->refused, o.refused);
}

// Where load_job's parsers left the ranks' rows: one vector per rank
// (per_rank[i], those of job->ranks[i]), or one table in file order (range[i]
// of it, those of job->ranks[i]; report_rows_in_order).
struct StagedRows {
  std::vector<std::vector<LinkRow>> per_rank;
  std::vector<LinkRow> table;
  std::vector<std::pair<size_t, size_t>> range;  // offset, count
  bool in_table = false;
};

// build_job_tables; staged, when given, holds each rank's link rows already
// made (load_job's parsing threads made them).
void build_tables(Job* job, bool take_rows, StagedRows* staged) {
  {
    std::vector<size_t> order(job->ranks.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    const std::vector<Rank>& rk = job->ranks;
    std::stable_sort(order.begin(), order.end(), [&rk](size_t ia, size_t ib) {
      const Rank& a = rk[ia];
      const Rank& b = rk[ib];
      if (a.host != b.host) return a.host < b.host;
      if (a.rank != b.rank) return rank_less(a.rank, b.rank);
      return a.pid < b.pid;
    });
    std::vector<Rank> ranks;
    std::vector<std::vector<LinkRow>> rows;
    std::vector<std::pair<size_t, size_t>> range;
    ranks.reserve(order.size());
    for (const size_t i : order) {
      ranks.push_back(std::move(job->ranks[i]));
      if (staged && !staged->in_table) rows.push_back(std::move(staged->per_rank[i]));
      if (staged && staged->in_table) range.push_back(staged->range[i]);
    }
    job->ranks = std::move(ranks);
    if (staged) {
      staged->per_rank = std::move(rows);
      staged->range = std::move(range);
    }
  }
  job->links.clear();
  job->nics.clear();
  job->stalls.clear();
  job->ops = job->bytes = job->errors = job->eagain = job->untimed = job->unfinished = 0;
  job->refused = job->completed = job->ring_full = job->ops_dropped = job->cells_full = 0;
  job->first_wall_ns = job->last_wall_ns = 0;

  size_t rows = 0;
  for (size_t i = 0; i < job->ranks.size(); ++i) {
    Rank& r = job->ranks[i];
    if (staged) {
      rows += staged->in_table ? staged->range[i].second : staged->per_rank[i].size();
      continue;
    }
    if (!take_rows || !r.report.links.empty()) {  // counted before, when the rows were taken
      r.link_count = r.report.links.size();
      r.unlisted_locals = count_unlisted_locals(r.report);
    }
    for (const LinkReport& l : r.report.links) rows += l.rows.size();
  }
  // The table in file order is the job's when the ranks' order is the files'
  // (the parse followed the order the names promised) and holds no rows of a
  // skipped report: then no row is copied.
  bool table_as_is = staged && staged->in_table && rows == staged->table.size();
  for (size_t i = 0, at = 0; table_as_is && i < job->ranks.size(); ++i) {
    table_as_is = staged->range[i].first == at;
    at += staged->range[i].second;
  }
  if (table_as_is) {
    job->links = std::move(staged->table);
  } else {
    job->links.reserve(rows);  // no doubling of a vector of 1M rows while it grows
    advise_huge_pages(job->links.data(), rows * sizeof(LinkRow));
  }
  for (size_t i = 0; i < job->ranks.size(); ++i) {
    Rank& r = job->ranks[i];
    if (r.start_wall_ns) {
      const uint64_t end =
          r.start_wall_ns + static_cast<uint64_t>(std::llround(std::max(0.0, r.duration_s) * 1e9));
      if (!job->first_wall_ns || r.start_wall_ns < job->first_wall_ns)
        job->first_wall_ns = r.start_wall_ns;
      job->last_wall_ns = std::max(job->last_wall_ns, end);
    }
    // Counts are bounded per file (common/input_limits.h); their sums over
    // ranks saturate rather than wrap.
    job->ring_full = sat_add(job->ring_full, r.report.ring_full);
    job->cells_full = sat_add(job->cells_full, r.report.cells_full);
    job->ops_dropped = sat_add(job->ops_dropped, r.oplog_dropped);
    if (table_as_is) {
      const auto [at, n] = staged->range[i];
      for (size_t k = at; k < at + n; ++k) add_row_totals(job, job->links[k].row);
    } else if (staged && staged->in_table) {
      const auto [at, n] = staged->range[i];
      for (size_t k = at; k < at + n; ++k) {
        add_row_totals(job, staged->table[k].row);
        job->links.push_back(std::move(staged->table[k]));
      }
    } else {
      // The rank's rows are freed as soon as they are in the job's table.
      std::vector<LinkRow> mine =
          staged ? std::move(staged->per_rank[i])
                 : link_rows_of(r.host, r.rank, r.pid, &r.report.links, take_rows);
      for (LinkRow& row : mine) {
        add_row_totals(job, row.row);
        job->links.push_back(std::move(row));
      }
    }
    for (const NicReport& n : r.report.nics) job->nics.push_back(NicRow{r.host, r.rank, r.pid, n});
  }
  if (staged) std::vector<LinkRow>().swap(staged->table);
  for (const Rank& r : job->ranks) {
    for (const CqReport& c : r.report.cqs) {
      if (c.polls == 0) continue;
      Stall s;
      s.host = r.host;
      s.rank = r.rank;
      s.pid = r.pid;
      s.cq = c;
      // The gap's end on this rank's monotonic clock, moved onto the wall clock
      // by the rank's own (monotonic, wall) anchor pair.
      const int64_t end_mono = static_cast<int64_t>(r.start_mono_ns) +
                               static_cast<int64_t>(std::llround(c.max_gap_end_s * 1e9));
      s.end_mono_ns = end_mono > 0 ? static_cast<uint64_t>(end_mono) : 0;
      s.end_wall_ns = r.start_wall_ns ? static_cast<uint64_t>(end_mono + r.wall_offset_ns()) : 0;
      s.end_job_s =
          s.end_wall_ns && job->first_wall_ns
              ? static_cast<double>(static_cast<int64_t>(s.end_wall_ns - job->first_wall_ns)) / 1e9
              : c.max_gap_end_s;
      job->stalls.push_back(std::move(s));
    }
  }
  std::stable_sort(job->stalls.begin(), job->stalls.end(), [](const Stall& a, const Stall& b) {
    return a.cq.max_gap_ns > b.cq.max_gap_ns;
  });
  mark_outliers(&job->links);
  join_kernel(job);
}

}  // namespace

void build_job_tables(Job* job, bool take_rows) { build_tables(job, take_rows, nullptr); }

namespace {

// The order the ranks' rows will have in the job's table (host, rank, pid),
// as far as the files' names tell: files are parsed and their rows appended
// to one table in this order, which is then the job's as it is (build_tables
// checks) and not a copy of it.
std::vector<size_t> name_order(const std::vector<std::string>& paths) {
  std::vector<OutputName> names(paths.size());
  std::vector<char> named(paths.size(), 0);
  for (size_t i = 0; i < paths.size(); ++i)
    named[i] = parse_output_name(fs::path(paths[i]).filename().string(), &names[i]);
  std::vector<size_t> order(paths.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t ia, size_t ib) {
    if (named[ia] != named[ib]) return named[ia] > named[ib];
    if (!named[ia]) return false;
    const OutputName &a = names[ia], &b = names[ib];
    if (a.host != b.host) return a.host < b.host;
    if (a.rank != b.rank) return rank_less(a.rank, b.rank);
    return a.pid < b.pid;
  });
  return order;
}

}  // namespace

std::vector<ParsedReport> report_rows_in_order(const std::vector<std::string>& paths,
                                               unsigned threads, std::vector<LinkRow>* table,
                                               std::vector<std::pair<size_t, size_t>>* range,
                                               LoadStats* stats) {
  const size_t n = paths.size();
  std::vector<ParsedReport> out(n);
  range->assign(n, {0, 0});
  table->clear();
  {
    // Room for the rows of reports of at least 256 bytes of text a row (the
    // preload writes about 500): never filled beyond what the rows take, so
    // what is left over is address space, not memory.
    uint64_t bytes = 0;
    for (const std::string& p : paths) {
      std::error_code ec;
      const uint64_t b = fs::file_size(p, ec);
      if (!ec) bytes += std::min<uint64_t>(b, limits::kMaxReportBytes);
    }
    if (stats) stats->report_bytes = bytes;
    const size_t rows = static_cast<size_t>(bytes / 256);
    table->reserve(rows);
    advise_huge_pages(table->data(), rows * sizeof(LinkRow));
  }
  const std::vector<size_t> order = name_order(paths);
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>(threads, n)));
  // Parsers run at most `window` reports ahead of the one appended next, each
  // into a row buffer of a pool (their space is used again, not faulted in
  // afresh for every report).
  const size_t window = 2 * threads + 2;
  std::mutex mu;
  std::condition_variable changed;
  std::vector<char> done(n, 0);  // by place in `order`
  size_t appended = 0;
  std::vector<std::vector<LinkRow>> pool;
  std::atomic<size_t> next{0};
  ParseTimes total;
  const auto add_times = [&](const ParseTimes& t) {  // under mu
    total.open_read_ns += t.open_read_ns;
    total.head_ns += t.head_ns;
    total.rows_ns += t.rows_ns;
    total.fallback_ns += t.fallback_ns;
    total.fallbacks += t.fallbacks;
  };
  const auto parse = [&] {
    ParseTimes mine;
    for (size_t k; (k = next.fetch_add(1)) < n;) {
      ParsedReport& p = out[order[k]];
      {
        std::unique_lock<std::mutex> lock(mu);
        changed.wait(lock, [&] { return k < appended + window; });
        if (!pool.empty()) {
          p.rows = std::move(pool.back());
          pool.pop_back();
        }
      }
      read_report_rows(paths[order[k]], &p, stats ? &mine : nullptr);
      {
        const std::lock_guard<std::mutex> lock(mu);
        done[k] = 1;
      }
      changed.notify_all();
    }
    const std::lock_guard<std::mutex> lock(mu);
    add_times(mine);
  };
  ParseTimes here;  // one thread: this one's
  std::vector<std::thread> pool_threads;
  if (threads > 1)
    for (unsigned t = 0; t < threads; ++t) pool_threads.emplace_back(parse);
  for (size_t k = 0; k < n; ++k) {
    if (threads > 1) {
      std::unique_lock<std::mutex> lock(mu);
      changed.wait(lock, [&] { return done[k] != 0; });
    } else {
      ParsedReport& p = out[order[k]];
      if (!pool.empty()) {
        p.rows = std::move(pool.back());
        pool.pop_back();
      }
      read_report_rows(paths[order[k]], &p, stats ? &here : nullptr);
    }
    ParsedReport& p = out[order[k]];
    (*range)[order[k]] = {table->size(), p.rows.size()};
    table->insert(table->end(), std::make_move_iterator(p.rows.begin()),
                  std::make_move_iterator(p.rows.end()));
    p.rows.clear();
    {
      const std::lock_guard<std::mutex> lock(mu);
      pool.push_back(std::move(p.rows));
      appended = k + 1;
    }
    changed.notify_all();
  }
  for (std::thread& t : pool_threads) t.join();
  add_times(here);
  if (stats) {
    stats->open_read_s = static_cast<double>(total.open_read_ns) / 1e9;
    stats->head_s = static_cast<double>(total.head_ns) / 1e9;
    stats->rows_s = static_cast<double>(total.rows_ns) / 1e9;
    stats->fallback_s = static_cast<double>(total.fallback_ns) / 1e9;
    stats->fallbacks = total.fallbacks;
  }
  return out;
}

bool load_job(const std::string& dir, Job* job, std::string* error) {
  return load_job(dir, LoadOptions(), job, error);
}

bool load_job(const std::string& dir, const LoadOptions& opt, Job* job, std::string* error) {
  *job = Job();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    if (error)
      *error = dir + ": " +
               (ec                ? ec.message()
                : fs::exists(dir) ? "not a directory"
                                  : "no such directory");
    return false;
  }
  {
    const fs::directory_iterator probe(dir, ec);  // can it be listed at all?
    if (ec) {
      if (error) *error = dir + ": " + ec.message();
      return false;
    }
  }
  // Steps timed for LoadOptions::stats: the process's CPU time at each.
  LoadStats* const stats = opt.stats;
  double cpu = stats ? process_cpu_s() : 0;
  const auto lap = [&](double* step) {
    if (!stats) return;
    const double now = process_cpu_s();
    *step = now - cpu;
    cpu = now;
  };
  Found found;
  walk(dir, opt, &found, &job->skipped);
  if (stats) {
    stats->reports = found.reports.size();
    stats->other_files = found.oplogs.size() + found.counters.size() + found.kernel_logs.size();
  }
  lap(stats ? &stats->find_s : nullptr);

  std::vector<ParsedReport> parsed;
  StagedRows staged;
  std::vector<std::pair<size_t, size_t>> range;  // by file: its rows in staged.table
  if (opt.parser) {
    if (!opt.parser(found.reports, &parsed, error)) return false;
    if (parsed.size() != found.reports.size()) {
      if (error) *error = "the report parser returned another number of reports";
      return false;
    }
  } else {
    parsed = report_rows_in_order(found.reports, opt.threads, &staged.table, &range, opt.stats);
    staged.in_table = true;
  }
  lap(stats ? &stats->parse_s : nullptr);
  std::map<Key, size_t> by_key;
  std::set<std::string> json_stems;
  for (size_t i = 0; i < found.reports.size(); ++i) {
    const std::string& path = found.reports[i];
    json_stems.insert(path.substr(0, path.size() - 5));
    ParsedReport p = std::move(parsed[i]);  // freed at the end of this turn when not used
    if (!p.ok) {
      job->skipped.push_back({path, p.why});
      continue;
    }
    const Key key = key_of(p.report.host, p.report.rank, p.report.pid);
    if (const auto it = by_key.find(key); it != by_key.end()) {
      job->skipped.push_back({path, "a second report of the same process (" +
                                        job->ranks[it->second].report_path + " is used)"});
      continue;
    }
    by_key[key] = job->ranks.size();
    job->ranks.push_back(make_rank(std::move(p.report), path));
    job->ranks.back().link_count = p.link_count;
    job->ranks.back().unlisted_locals = p.unlisted_locals;
    if (staged.in_table)
      staged.range.push_back(range[i]);
    else
      staged.per_rank.push_back(std::move(p.rows));
  }
  for (const std::string& path : found.texts)
    if (!json_stems.count(path.substr(0, path.size() - 4)))
      job->skipped.push_back({path,
                              "text report without its JSON twin (the run had FABTRACE_JSON=0?); "
                              "only the JSON is read"});
  for (const std::string& path : found.oplogs) attach_oplog(path, by_key, job);
  for (const std::string& path : found.counters) attach_counters(path, opt, by_key, job);
  load_kernel_logs(found.kernel_logs, job);
  lap(stats ? &stats->attach_s : nullptr);
  build_tables(job, /*take_rows=*/true, &staged);
  lap(stats ? &stats->tables_s : nullptr);
  if (stats) stats->rows = job->links.size();
  if (opt.match_receives)
    opt.match_receives(job);
  else
    match_receives_to_sends(job);
  lap(stats ? &stats->match_s : nullptr);
  return true;
}

}  // namespace fabtrace::report
