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
#include "userspace/report/analysis/kernel_join.h"
#include "userspace/report/analysis/post_evidence.h"
#include "userspace/report/job/job.h"
#include "userspace/report/job/parsed_report.h"
#include "userspace/report/job/report_reader.h"
#include "userspace/report/job/report_rows.h"
#include "userspace/report/load/job_tables.h"

namespace fabtrace::report {

namespace fs = std::filesystem;

namespace {

using load::rank_less;

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
    for (const Rank& r : job->ranks) host_has_ranks = host_has_ranks || r.host() == n.host;
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

}  // namespace

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

namespace {

using load::advise_huge_pages;
using load::rank_less;
using load::StagedRows;

double process_cpu_s() {
  rusage u;
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

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
  load::build_tables(job, /*take_rows=*/true, &staged);
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
