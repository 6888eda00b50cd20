// The Perfetto trace (perfetto_trace.h): the run over every rank and node
// with a kernel log, and the files it is written in (parts under
// max_file_bytes). A rank's ops and marks are in perfetto/ops.cpp, its series
// in perfetto/series.cpp, its waits in perfetto/waits.cpp.
#include "userspace/report/perfetto/perfetto_trace.h"

#include "common/safe_output.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unordered_set>

#include "common/printable.h"
#include "userspace/report/perfetto/builder.h"

namespace fabtrace::report {

namespace perfetto_build {

namespace {

// pids <= 0 (unknown) get a synthetic one above Linux's pid_max (4194304).
constexpr int32_t kSyntheticPidBase = 0x40000000;

// A file-name-safe rendering of a rank string.
std::string file_token(const std::string& s) {
  std::string out;
  for (char c : s) {
    const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    c == '-' || c == '_';
    out += ok ? c : '_';
  }
  return out.empty() ? "NA" : out;
}

}  // namespace

std::string rank_label(const Rank& r) {
  std::string s = "rank " + (r.rank().empty() ? std::string("NA") : r.rank());
  if (!r.host().empty()) s += " (" + r.host() + ")";
  return s;
}

bool Builder::open_base(const std::string& base, uint64_t snapshot_ns) {
  base_ = base;
  part_ = -1;
  snapshot_ns_ = snapshot_ns;
  return open_part();
}

bool Builder::open_part() {
  const std::string path =
      part_ < 0 ? base_ + ".pftrace" : base_ + "." + std::to_string(part_) + ".pftrace";
  std::string err;
  if (!w_.open(path, snapshot_ns_, &err)) return fail(err);
  w_.process_ordering_explicit();
  preamble_bytes_ = w_.bytes();
  return true;
}

bool Builder::finish_file() {
  if (!w_.is_open()) return true;
  const std::string path =
      part_ < 0 ? base_ + ".pftrace" : base_ + "." + std::to_string(part_) + ".pftrace";
  std::string err;
  if (!w_.close(&err)) return fail(err);
  files_->push_back(path);
  return true;
}

// Starts the next part when `bound` more bytes would not fit in the current
// file (a file holding nothing but its preamble is never left: content larger
// than max_file_bytes still goes somewhere).
bool Builder::next_part(size_t bound) {
  if (!w_.is_open()) return false;
  if (w_.bytes() + bound <= opt_.max_file_bytes || w_.bytes() <= preamble_bytes_) return true;
  std::string err;
  if (!w_.close(&err)) return fail(err);
  if (part_ < 0) {
    const std::string from = base_ + ".pftrace", to = base_ + ".0.pftrace";
    if (std::rename(from.c_str(), to.c_str()) != 0)
      return fail("cannot rename " + from + " to " + to + ": " + std::strerror(errno));
    files_->push_back(to);
    part_ = 1;
  } else {
    files_->push_back(base_ + "." + std::to_string(part_) + ".pftrace");
    ++part_;
  }
  return open_part();
}

bool Builder::write_kernel(const KernelNode& n, int32_t order,
                           const std::vector<RankTrack>& ranks) {
  KernelTraceContext ctx;
  ctx.w = &w_;
  ctx.room = [this](size_t bound) { return room(bound); };
  ctx.next_uuid = &next_uuid_;
  ctx.pid = kSyntheticPidBase / 2 + order;
  ctx.order = order;
  ctx.wall_offset = static_cast<int64_t>(n.meta.real_ns) - static_cast<int64_t>(n.meta.mono_ns);
  for (const RankTrack& r : ranks)
    if (r.rank->host() == n.host && r.rank->start_wall_ns()) {
      ctx.wall_offset = r.wall_offset;
      break;
    }
  KernelTraceStats ks;
  const bool ok = write_kernel_tracks(n, job_, ctx, &ks, &stats_->warnings);
  stats_->kernel_tracks += ks.tracks;
  stats_->kernel_slices += ks.slices;
  stats_->kernel_instants += ks.instants;
  stats_->kernel_flows += ks.flows;
  return ok;
}

bool Builder::write_rank(RankTrack& r) {
  if (!room(r.name.size() + kDescriptorBytes)) return false;
  need_process(r);
  ++stats_->ranks;
  if (!r.rank->oplog_path.empty() && !write_ops(r)) return false;
  if (!write_stalls(r)) return false;
  if (!write_waits(r)) return false;
  if (!r.rank->counters_path.empty() && !write_counters(r)) return false;
  if (!write_nic_bins(r)) return false;
  if (r.dropped > 0) {
    // Say on the rank's own track that ops are missing from the picture.
    if (!room(kEventBytes + r.name.size() + kDescriptorBytes)) return false;
    need_process(r);
    const std::string msg = std::to_string(r.dropped) + " ops not drawn: more than " +
                            std::to_string(kPerfettoMaxLanes) +
                            " overlapping on one link (see the link tables)";
    w_.instant_named(to_u64_ts(r.last_ts), r.uuid, msg, nullptr, 0);
  }
  return true;
}

bool Builder::run(std::string* error) {
  if (dir_.empty()) dir_ = ".";
  if (::mkdir(held_path(dir_).c_str(), 0755) != 0 && errno != EEXIST) {
    *error = "cannot create " + dir_ + ": " + std::strerror(errno);
    return false;
  }
  for (const Stall& s : job_.stalls) stalls_by_rank_[s.host + '\n' + s.rank].push_back(&s);

  std::vector<RankTrack> ranks(job_.ranks.size());
  uint64_t first_wall = job_.first_wall_ns;
  for (size_t i = 0; i < job_.ranks.size(); ++i) {
    const Rank& rk = job_.ranks[i];
    RankTrack& r = ranks[i];
    r.rank = &rk;
    r.name = rank_label(rk);
    r.pid = rk.pid() > 0 && rk.pid() <= std::numeric_limits<int32_t>::max()
                ? static_cast<int32_t>(rk.pid())
                : kSyntheticPidBase + static_cast<int32_t>(i);
    r.order = static_cast<int32_t>(i);
    r.uuid = next_uuid_++;
    r.gap_uuid = next_uuid_++;
    r.wall_offset = rk.wall_offset_ns();
    r.last_ts = static_cast<int64_t>(rk.start_wall_ns());
    if (rk.start_wall_ns() != 0 && (first_wall == 0 || rk.start_wall_ns() < first_wall))
      first_wall = rk.start_wall_ns();
  }
  // The clock snapshot's instant: any will do (both clocks are equal), the job's start reads best.
  const uint64_t snap = first_wall != 0 ? first_wall : 1;

  const std::string prefix = dir_ + (dir_.back() == '/' ? "" : "/") + "trace";
  bool ok = true;
  if (!opt_.split_per_rank) {
    index_waits();
    ok = open_base(prefix, snap);
    for (size_t i = 0; ok && i < ranks.size(); ++i) ok = write_rank(ranks[i]);
    for (size_t i = 0; ok && i < job_.kernel.size(); ++i)
      ok = write_kernel(job_.kernel[i], static_cast<int32_t>(ranks.size() + i), ranks);
    if (ok) ok = finish_file();
  } else {
    std::unordered_set<std::string> used;
    for (size_t i = 0; ok && i < ranks.size(); ++i) {
      const Rank& rk = *ranks[i].rank;
      std::string base = prefix + ".r" + file_token(rk.rank());
      if (used.count(base)) base += ".p" + std::to_string(rk.pid());
      for (int k = 2; used.count(base); ++k) base += "." + std::to_string(k);
      used.insert(base);
      if (!mine(i)) continue;
      next_uuid_ = (uint64_t{i} + 1) << 32;
      ok = open_base(base, rk.start_wall_ns() != 0 ? rk.start_wall_ns() : snap);
      if (ok) ok = write_rank(ranks[i]);
      if (ok) ok = finish_file();
      mark_item(i);
    }
    // Each node's kernel tracks in a file of their own.
    for (size_t i = 0; ok && i < job_.kernel.size(); ++i) {
      std::string base = prefix + ".kernel." + file_token(job_.kernel[i].host);
      for (int k = 2; used.count(base); ++k) base += "." + std::to_string(k);
      used.insert(base);
      const size_t item = ranks.size() + i;
      if (!mine(item)) continue;
      next_uuid_ = (uint64_t{item} + 1) << 32;
      ok = open_base(base, snap);
      if (ok) ok = write_kernel(job_.kernel[i], static_cast<int32_t>(item), ranks);
      if (ok) ok = finish_file();
      mark_item(item);
    }
  }
  if (!ok) {
    if (w_.is_open()) {
      std::string ignored;
      w_.close(&ignored);
    }
    *error = error_.empty() ? "writing the Perfetto trace failed" : error_;
    return false;
  }
  return true;
}

}  // namespace perfetto_build

bool write_perfetto_stats(const report::Job& job, const std::string& out_dir,
                          const PerfettoOptions& opt, std::vector<std::string>* files_written,
                          PerfettoStats* stats, std::string* error) {
  std::vector<std::string> files_local;
  PerfettoStats stats_local;
  std::string error_local;
  if (!files_written) files_written = &files_local;
  if (!stats) stats = &stats_local;
  if (!error) error = &error_local;
  files_written->clear();
  *stats = PerfettoStats();
  perfetto_build::Builder b(job, out_dir, opt, files_written, stats);
  return b.run(error);
}

bool write_perfetto(const report::Job& job, const std::string& out_dir, const PerfettoOptions& opt,
                    std::vector<std::string>* files_written, std::string* error) {
  PerfettoStats stats;
  const bool ok = write_perfetto_stats(job, out_dir, opt, files_written, &stats, error);
  print_perfetto_notes(stats);
  return ok;
}

void print_perfetto_notes(const PerfettoStats& stats) {
  for (const std::string& w : stats.warnings)
    std::fprintf(stderr, "fabtrace: perfetto: %s\n", printable(w).c_str());
  if (stats.bad_times > 0)
    std::fprintf(stderr,
                 "fabtrace: perfetto: %llu ops with impossible times (ending before they start, "
                 "or beyond any clock)\n",
                 static_cast<unsigned long long>(stats.bad_times));
  if (stats.overlap_dropped > 0)
    std::fprintf(stderr,
                 "fabtrace: perfetto: %llu ops not drawn: more than %u overlapping on one link\n",
                 static_cast<unsigned long long>(stats.overlap_dropped), kPerfettoMaxLanes);
}

}  // namespace fabtrace::report
