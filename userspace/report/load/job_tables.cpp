// The job's tables from its ranks' reports: the ranks in order, their link
// rows in one table (moved, not copied, from what the parsers staged), the
// job's totals, the outliers marked and the kernel's join.
#include "userspace/report/load/job_tables.h"

#include <sys/mman.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <set>

#include "common/input_limits.h"
#include "userspace/report/analysis/kernel_join.h"
#include "userspace/report/job/interned.h"
#include "userspace/report/job/parsed_report.h"

namespace fabtrace::report {

namespace {

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

}  // namespace

namespace load {

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
      if (a.host() != b.host()) return a.host() < b.host();
      if (a.rank() != b.rank()) return rank_less(a.rank(), b.rank());
      return a.pid() < b.pid();
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
    if (r.start_wall_ns()) {
      const uint64_t end = r.start_wall_ns() +
                           static_cast<uint64_t>(std::llround(std::max(0.0, r.duration_s()) * 1e9));
      if (!job->first_wall_ns || r.start_wall_ns() < job->first_wall_ns)
        job->first_wall_ns = r.start_wall_ns();
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
                 : link_rows_of(r.host(), r.rank(), r.pid(), &r.report.links, take_rows);
      for (LinkRow& row : mine) {
        add_row_totals(job, row.row);
        job->links.push_back(std::move(row));
      }
    }
    for (const NicReport& n : r.report.nics)
      job->nics.push_back(NicRow{r.host(), r.rank(), r.pid(), n});
  }
  if (staged) std::vector<LinkRow>().swap(staged->table);
  for (const Rank& r : job->ranks) {
    for (const CqReport& c : r.report.cqs) {
      if (c.polls == 0) continue;
      Stall s;
      s.host = r.host();
      s.rank = r.rank();
      s.pid = r.pid();
      s.cq = c;
      // The gap's end on this rank's monotonic clock, moved onto the wall clock
      // by the rank's own (monotonic, wall) anchor pair.
      const int64_t end_mono = static_cast<int64_t>(r.start_mono_ns()) +
                               static_cast<int64_t>(std::llround(c.max_gap_end_s * 1e9));
      s.end_mono_ns = end_mono > 0 ? static_cast<uint64_t>(end_mono) : 0;
      s.end_wall_ns = r.start_wall_ns() ? static_cast<uint64_t>(end_mono + r.wall_offset_ns()) : 0;
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

}  // namespace load

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
void build_job_tables(Job* job, bool take_rows) { load::build_tables(job, take_rows, nullptr); }

}  // namespace fabtrace::report
