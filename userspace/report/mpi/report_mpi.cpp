// fabtrace report --mpi (report/mpi/report_mpi.h): MPI collectives only. Byte forms
// (parsed reports, the job's context, timelines, slowest-op parts, trace file
// lists) are broadcast or gathered with MPI_Bcast/MPI_Gatherv in rounds of at
// most kChunk bytes per process (MPI counts are ints); counts are merged with
// MPI_Reduce.
#include "userspace/report/mpi/report_mpi.h"

#include "common/safe_output.h"

#include <mpi.h>

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "userspace/report/analysis/post_evidence.h"
#include "userspace/report/job/byte_form.h"
#include "userspace/report/job/context.h"
#include "userspace/report/job/parsed_report.h"

namespace fabtrace {

namespace {

constexpr uint64_t kNoList = std::numeric_limits<uint64_t>::max();  // "stop": nothing to parse
constexpr size_t kChunk = size_t{1} << 30;

// Waits for a nonblocking collective without spinning: a process waiting
// for another (process 0 writing the tables, the others reading their
// timelines) would otherwise burn a core that the working one could use, as
// Open MPI's blocking collectives poll.
void wait_idle(MPI_Request* req) {
  int done = 0;
  for (unsigned spins = 0;; ++spins) {
    MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (done) return;
    if (spins > 100) {
      const timespec nap{0, 200 * 1000};
      nanosleep(&nap, nullptr);
    }
  }
}

uint64_t sum_on_root(uint64_t v) {
  uint64_t total = 0;
  MPI_Request req;
  MPI_Ireduce(&v, &total, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD, &req);
  wait_idle(&req);
  return total;
}

// Process 0's *bytes to every process, in rounds of kChunk.
void bcast_bytes(std::string* bytes) {
  uint64_t size = bytes->size();
  MPI_Bcast(&size, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  bytes->resize(size);
  for (uint64_t at = 0; at < size; at += kChunk)
    MPI_Bcast(&(*bytes)[at], static_cast<int>(std::min<uint64_t>(kChunk, size - at)), MPI_CHAR, 0,
              MPI_COMM_WORLD);
}

// Process 0's word at the start of steps 2 and 3: go on, or stop (the job
// ended early; nothing more follows).
constexpr uint64_t kGo = 1, kStop = 0;
uint64_t bcast_word(uint64_t v) {
  MPI_Request req;
  MPI_Ibcast(&v, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD, &req);
  wait_idle(&req);
  return v;
}

// Bytes that cannot be decoded come from a process of another build or a
// broken transport: the job cannot be reported, and every process ends.
[[noreturn]] void unreadable(const char* what, int from) {
  std::fprintf(stderr, "fabtrace report: --mpi: unreadable %s from process %d\n", what, from);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

// What process 0 says the others do in step 3.
struct Plan {
  uint64_t top = 10;
  bool per_rank_trace = false;
  std::string out_dir;
  uint64_t out_ino = 0;  // process 0's held output directory (safe_output.h)
  uint64_t max_file_bytes = 0;
  double long_gap_ms = 0;
};

void bcast_plan(Plan* p) {
  std::string bytes;
  report::byte_form::Writer w(&bytes);
  w.num(p->top);
  w.flag(p->per_rank_trace);
  w.str(p->out_dir);
  w.num(p->out_ino);
  w.num(p->max_file_bytes);
  w.num(p->long_gap_ms);
  bcast_bytes(&bytes);
  report::byte_form::Reader r(bytes.data(), bytes.size(), 0);
  p->top = r.num<uint64_t>();
  p->per_rank_trace = r.flag();
  p->out_dir = r.str();
  p->out_ino = r.num<uint64_t>();
  p->max_file_bytes = r.num<uint64_t>();
  p->long_gap_ms = r.num<double>();
  if (!r.ok()) unreadable("plan", 0);
}

// The counts of a trace's statistics (merged with MPI_SUM; max_lanes apart, MPI_MAX).
std::vector<uint64_t*> counts_of(report::PerfettoStats* s) {
  return {&s->ranks,           &s->link_tracks,     &s->lane_tracks,    &s->slices,
          &s->error_instants,  &s->overlap_dropped, &s->late_ops,       &s->bad_times,
          &s->stall_instants,  &s->marks,           &s->counter_tracks, &s->counter_values,
          &s->nic_tracks,      &s->nic_values,      &s->kernel_tracks,  &s->kernel_slices,
          &s->kernel_instants, &s->kernel_flows,    &s->wait_slices,    &s->root_instants,
          &s->wait_flows};
}

void reduce_stats(report::PerfettoStats* s, int rank) {
  const std::vector<uint64_t*> c = counts_of(s);
  std::vector<uint64_t> mine(c.size()), sum(c.size());
  for (size_t i = 0; i < c.size(); ++i) mine[i] = *c[i];
  MPI_Request req[2];
  MPI_Ireduce(mine.data(), sum.data(), static_cast<int>(mine.size()), MPI_UINT64_T, MPI_SUM, 0,
              MPI_COMM_WORLD, &req[0]);
  uint32_t lanes = s->max_lanes, most = 0;
  MPI_Ireduce(&lanes, &most, 1, MPI_UINT32_T, MPI_MAX, 0, MPI_COMM_WORLD, &req[1]);
  wait_idle(&req[0]);
  wait_idle(&req[1]);
  if (rank != 0) return;
  for (size_t i = 0; i < c.size(); ++i) *c[i] = sum[i];
  s->max_lanes = most;
}

// One process's trace files: whether it went right, and its files and
// warnings by item (perfetto_trace.h).
struct TraceShare {
  bool ok = true;
  std::string error;
  std::vector<std::pair<uint32_t, std::string>> files, warnings;
};

void encode_share(const TraceShare& t, std::string* out) {
  report::byte_form::Writer w(out);
  w.flag(t.ok);
  w.str(t.error);
  for (const auto* list : {&t.files, &t.warnings}) {
    w.num<uint64_t>(list->size());
    for (const auto& [item, s] : *list) {
      w.num(item);
      w.str(s);
    }
  }
}

bool decode_share(const std::string& b, TraceShare* t) {
  report::byte_form::Reader r(b.data(), b.size(), 0);
  t->ok = r.flag();
  t->error = r.str();
  for (auto* list : {&t->files, &t->warnings}) {
    list->resize(r.count(sizeof(uint32_t) + sizeof(uint64_t)));
    for (auto& [item, s] : *list) {
      item = r.num<uint32_t>();
      s = r.str();
    }
  }
  return r.ok() && r.pos() == b.size();
}

// This process's trace, for the gather.
TraceShare trace_share(const std::vector<std::string>& files, const report::PerfettoStats& st,
                       bool ok, const std::string& error) {
  TraceShare t;
  t.ok = ok;
  t.error = error;
  for (size_t i = 0; i < files.size(); ++i)
    t.files.emplace_back(i < st.file_items.size() ? st.file_items[i] : 0xFFFFFFFFu, files[i]);
  for (size_t i = 0; i < st.warnings.size(); ++i)
    t.warnings.emplace_back(i < st.warning_items.size() ? st.warning_items[i] : 0xFFFFFFFFu,
                            st.warnings[i]);
  return t;
}

// The options of a per-rank trace written by this process: its ranks, and
// (process 0) the nodes' kernel files.
report::PerfettoOptions share_options(report::PerfettoOptions opt, size_t ranks, int rank,
                                      int size) {
  opt.split_per_rank = true;
  opt.mine = [ranks, rank, size](size_t item) {
    return item < ranks ? item % static_cast<size_t>(size) == static_cast<size_t>(rank) : rank == 0;
  };
  return opt;
}

// The file list, from process 0 to all. False when process 0 sent "stop"
// (load_job returned before it parsed).
bool bcast_list(std::vector<std::string>* paths, bool stop) {
  std::string bytes;
  uint64_t n = stop ? kNoList : paths->size();
  report::byte_form::Writer w(&bytes);
  for (size_t i = 0; !stop && i < paths->size(); ++i) w.str((*paths)[i]);
  MPI_Bcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (n == kNoList) return false;
  bcast_bytes(&bytes);
  report::byte_form::Reader r(bytes.data(), bytes.size(), 0);
  paths->clear();
  for (uint64_t i = 0; i < n && r.ok(); ++i) paths->push_back(r.str());
  if (!r.ok() || r.pos() != bytes.size()) unreadable("file list", 0);
  return true;
}

// This process's share of the list: files i with i % size == rank.
std::vector<std::string> share_of(const std::vector<std::string>& paths, int rank, int size) {
  std::vector<std::string> mine;
  for (size_t i = static_cast<size_t>(rank); i < paths.size(); i += static_cast<size_t>(size))
    mine.push_back(paths[i]);
  return mine;
}

// Gathers every process's `mine` on process 0 (into *all, one buffer per
// process), in rounds of at most chunk bytes from each, chunk chosen so that a
// round's total and displacements fit MPI's int counts.
void gather_bytes(const std::string& mine, int rank, int size, std::vector<std::string>* all) {
  const size_t chunk = std::min(
      kChunk, static_cast<size_t>(std::numeric_limits<int>::max()) / static_cast<size_t>(size));
  uint64_t rounds = (mine.size() + chunk - 1) / chunk, most = 0;
  MPI_Request req;
  MPI_Iallreduce(&rounds, &most, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD, &req);
  wait_idle(&req);
  if (rank == 0) all->assign(static_cast<size_t>(size), std::string());
  const size_t n = static_cast<size_t>(size);
  for (uint64_t r = 0; r < most; ++r) {
    const size_t from = std::min<size_t>(mine.size(), r * chunk);
    const int count = static_cast<int>(std::min(chunk, mine.size() - from));
    std::vector<int> counts(rank == 0 ? n : 0), displs(rank == 0 ? n : 0);
    MPI_Igather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
    wait_idle(&req);
    std::string buf;
    if (rank == 0) {
      int total = 0;
      for (size_t q = 0; q < n; ++q) {
        displs[q] = total;
        total += counts[q];
      }
      buf.resize(static_cast<size_t>(total));
    }
    MPI_Igatherv(mine.data() + from, count, MPI_CHAR, buf.data(), counts.data(), displs.data(),
                 MPI_CHAR, 0, MPI_COMM_WORLD, &req);
    wait_idle(&req);
    if (rank == 0)
      for (size_t q = 0; q < n; ++q)
        (*all)[q].append(buf, static_cast<size_t>(displs[q]), static_cast<size_t>(counts[q]));
  }
}

}  // namespace

std::vector<uint32_t> MpiReport::ranks_of(const report::Job& job) const {
  std::vector<uint32_t> share;
  for (uint32_t r = 0; r < job.ranks.size(); ++r)
    if (mine(r)) share.push_back(r);
  return share;
}

MpiReport::MpiReport() {
  MPI_Init(nullptr, nullptr);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiReport::~MpiReport() {
  // MPI_Finalize waits for every process, polling: the processes done first
  // wait here without spinning.
  MPI_Request req;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  wait_idle(&req);
  MPI_Finalize();
}

report::ReportParser MpiReport::parser(unsigned threads) {
  return [this, threads](const std::vector<std::string>& paths,
                         std::vector<report::ParsedReport>* out, std::string* error) {
    waiting_ = 2;
    std::vector<std::string> list = paths;
    bcast_list(&list, false);
    std::vector<report::ParsedReport> own =
        report::parse_reports(share_of(paths, 0, size_), threads);
    std::vector<std::string> bytes;
    gather_bytes(std::string(), 0, size_, &bytes);
    out->assign(paths.size(), report::ParsedReport());
    for (size_t k = 0; k < own.size(); ++k)
      (*out)[k * static_cast<size_t>(size_)] = std::move(own[k]);
    for (int q = 1; q < size_; ++q) {
      std::string b = std::move(bytes[static_cast<size_t>(q)]);  // freed once decoded
      size_t pos = 0;
      for (size_t i = static_cast<size_t>(q); i < paths.size(); i += static_cast<size_t>(size_)) {
        if (!report::decode_parsed_report(b.data(), b.size(), &pos, &(*out)[i])) {
          if (error) *error = "--mpi: process " + std::to_string(q) + " sent unreadable reports";
          return false;
        }
      }
      if (pos != b.size()) {
        if (error) *error = "--mpi: process " + std::to_string(q) + " sent more than it parsed";
        return false;
      }
    }
    return true;
  };
}

std::function<void(report::Job*)> MpiReport::matcher() {
  return [this](report::Job* job) {
    bcast_word(kGo);
    std::string ctx;
    report::encode_job_context(*job, &ctx);
    bcast_bytes(&ctx);
    waiting_ = 3;
    // In rounds of K ranks, so that process 0 holds K timelines at a time,
    // not all: ranks first .. first + K - 1, rank first + q read by process q.
    const report::EvidenceOptions opt;
    report::ReceiveMatcher m(job, opt);
    const size_t k = static_cast<size_t>(size_);
    for (size_t first = 0; first < job->ranks.size(); first += k) {
      report::RankTimeline own;
      if (!job->ranks[first].oplog_path.empty())
        own = report::read_rank_timeline(*job, static_cast<uint32_t>(first), opt);
      std::vector<std::string> theirs;
      gather_bytes(std::string(), 0, size_, &theirs);
      for (size_t q = 0; q < k && first + q < job->ranks.size(); ++q) {
        if (job->ranks[first + q].oplog_path.empty()) continue;
        if (q == 0) {
          m.add(own);
          continue;
        }
        report::RankTimeline t;
        size_t pos = 0;
        const std::string& b = theirs[q];
        if (!report::decode_rank_timeline(b.data(), b.size(), &pos, &t) || pos != b.size() ||
            t.rank != first + q)
          unreadable("timeline", static_cast<int>(q));
        m.add(t);
      }
    }
    m.finish();
  };
}

report::SlowestOps MpiReport::slowest_ops(const report::Job& job, size_t n, bool per_rank_trace,
                                          const std::string& out_dir,
                                          const report::PerfettoOptions& opt) {
  bcast_word(kGo);
  Plan plan;
  plan.top = n;
  plan.per_rank_trace = per_rank_trace;
  plan.out_dir = out_dir;
  dev_t dev = 0;
  ino_t ino = 0;
  if (held_dir_identity(out_dir, &dev, &ino)) plan.out_ino = ino;
  plan.max_file_bytes = opt.max_file_bytes;
  plan.long_gap_ms = opt.long_gap_ms;
  bcast_plan(&plan);
  waiting_ = 4;
  const std::vector<uint32_t> share = ranks_of(job);
  report::SlowestPart part = report::slowest_part(job, share, n);
  std::vector<std::string> theirs;
  gather_bytes(std::string(), 0, size_, &theirs);
  const uint64_t total = sum_on_root(part.ops_seen);
  for (int q = 1; q < size_; ++q) {
    const std::string& b = theirs[static_cast<size_t>(q)];
    report::SlowestPart p;
    size_t pos = 0;
    if (!report::decode_slowest_part(b.data(), b.size(), &pos, &p) || pos != b.size())
      unreadable("slowest ops", q);
    report::merge_slowest_parts(&part, std::move(p), n);
  }
  part.ops_seen = total;
  return report::finish_slowest(job, n, std::move(part));
}

bool MpiReport::per_rank_trace(const report::Job& job, const std::string& out_dir,
                               const report::PerfettoOptions& opt, std::vector<std::string>* files,
                               std::string* error) {
  report::PerfettoStats stats;
  std::string err;
  std::vector<std::string> own;
  const bool ok = report::write_perfetto_stats(
      job, out_dir, share_options(opt, job.ranks.size(), 0, size_), &own, &stats, &err);
  std::vector<std::string> theirs;
  gather_bytes(std::string(), 0, size_, &theirs);
  reduce_stats(&stats, 0);
  std::vector<TraceShare> shares{trace_share(own, stats, ok, err)};
  for (int q = 1; q < size_; ++q) {
    shares.emplace_back();
    if (!decode_share(theirs[static_cast<size_t>(q)], &shares.back())) unreadable("trace files", q);
  }
  // Item order, as one process writes them; a process's own order within an item.
  std::vector<std::pair<uint32_t, std::string>> all_files, all_warnings;
  bool all_ok = true;
  for (TraceShare& s : shares) {
    all_files.insert(all_files.end(), s.files.begin(), s.files.end());
    all_warnings.insert(all_warnings.end(), s.warnings.begin(), s.warnings.end());
    if (!s.ok && all_ok) {
      all_ok = false;
      *error = s.error;
    }
  }
  const auto by_item = [](const auto& a, const auto& b) { return a.first < b.first; };
  std::stable_sort(all_files.begin(), all_files.end(), by_item);
  std::stable_sort(all_warnings.begin(), all_warnings.end(), by_item);
  files->clear();
  for (auto& f : all_files) files->push_back(std::move(f.second));
  stats.warnings.clear();
  for (auto& w : all_warnings) stats.warnings.push_back(std::move(w.second));
  report::print_perfetto_notes(stats);
  return all_ok;
}

void MpiReport::release() {
  if (rank_ != 0) return;
  if (waiting_ == 1) {
    std::vector<std::string> none;
    bcast_list(&none, true);
  } else if (waiting_ == 2 || waiting_ == 3) {
    bcast_word(kStop);
  }
  waiting_ = 4;
}

int MpiReport::serve(unsigned threads) {
  // Step 1: the reports.
  std::vector<std::string> paths;
  if (!bcast_list(&paths, false)) return 0;
  {
    std::string bytes;
    for (const report::ParsedReport& p :
         report::parse_reports(share_of(paths, rank_, size_), threads))
      report::encode_parsed_report(p, &bytes);
    gather_bytes(bytes, rank_, size_, nullptr);
  }
  // Step 2: the job's context, and this process's timelines for the matching.
  if (bcast_word(kGo) == kStop) return 0;
  report::Job job;
  {
    std::string ctx;
    bcast_bytes(&ctx);
    if (!report::decode_job_context(ctx.data(), ctx.size(), &job)) unreadable("job context", 0);
  }
  const report::EvidenceOptions evidence;
  for (size_t first = 0; first < job.ranks.size(); first += static_cast<size_t>(size_)) {
    const size_t r = first + static_cast<size_t>(rank_);
    std::string bytes;
    if (r < job.ranks.size() && !job.ranks[r].oplog_path.empty())
      report::encode_rank_timeline(
          report::read_rank_timeline(job, static_cast<uint32_t>(r), evidence), &bytes);
    gather_bytes(bytes, rank_, size_, nullptr);
  }
  // Step 3: the slowest ops of this process's ranks, and their trace files.
  if (bcast_word(kGo) == kStop) return 0;
  Plan plan;
  bcast_plan(&plan);
  const std::vector<uint32_t> share = ranks_of(job);
  {
    const report::SlowestPart part = report::slowest_part(job, share, plan.top);
    std::string bytes;
    report::encode_slowest_part(part, &bytes);
    gather_bytes(bytes, rank_, size_, nullptr);
    sum_on_root(part.ops_seen);
  }
  if (!plan.per_rank_trace) return 0;
  report::PerfettoOptions opt;
  opt.max_file_bytes = plan.max_file_bytes;
  opt.long_gap_ms = plan.long_gap_ms;
  report::PerfettoStats stats;
  std::string err;
  std::vector<std::string> files;
  // The directory process 0 holds, opened here once too and held while this
  // process writes: the very one, or nothing is written (by inode: a network
  // file system's device number differs between the nodes that mount it).
  OutputDir out;
  bool ok = out.open(plan.out_dir, false, &err);
  if (ok && out.ino() != plan.out_ino) {
    ok = false;
    err = plan.out_dir + " is no longer the output directory process 0 opened: nothing written";
  }
  if (ok)
    ok = report::write_perfetto_stats(job, plan.out_dir,
                                      share_options(opt, job.ranks.size(), rank_, size_), &files,
                                      &stats, &err);
  std::string bytes;
  encode_share(trace_share(files, stats, ok, err), &bytes);
  gather_bytes(bytes, rank_, size_, nullptr);
  reduce_stats(&stats, rank_);
  return 0;
}

}  // namespace fabtrace
