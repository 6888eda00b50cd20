#include "userspace/report/job/job.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <set>
#include <utility>

#include "common/printable.h"
#include "userspace/report/job/interned.h"

namespace fabtrace::report {

std::vector<int64_t> job_clock_offsets(const Job& job) {
  std::map<std::string, int64_t> by_host;
  std::vector<int64_t> out(job.ranks.size(), 0);
  for (size_t i = 0; i < job.ranks.size(); ++i)
    out[i] = by_host.try_emplace(job.ranks[i].host(), job.ranks[i].wall_offset_ns()).first->second;
  return out;
}

std::string who(const std::string& host, const std::string& rank, long pid) {
  std::string s = printable(host) + " r" + printable(rank);
  if (rank == "NA" || rank.empty()) s += " p" + std::to_string(pid);
  return s;
}

std::string rank_name(const Job& job, uint32_t r) {
  const Rank& k = job.ranks[r];
  return who(k.host(), k.rank(), k.pid());
}

std::vector<std::string> Job::hosts() const {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const Rank& r : ranks)
    if (seen.insert(r.host()).second) out.push_back(r.host());
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

}  // namespace fabtrace::report
