// What load_job (loader.cpp) and the building of the job's tables
// (job_tables.cpp) share: the ranks' order, the rows the parsing threads staged,
// and huge pages for the large tables.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "userspace/report/job/job.h"

namespace fabtrace::report::load {

// Ranks sort numerically when they are numbers ("2" before "10"), "NA" and
// other names after the numbers.
bool rank_less(const std::string& a, const std::string& b);

// Memory about to be filled for the first time, of a large table: in huge
// pages where the kernel makes them on request (transparent_hugepage
// "madvise", Debian's default), 512 times fewer page faults (a page fault
// here was a fifth of the time of a job of 1M rows).
void advise_huge_pages(void* p, size_t bytes);

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
void build_tables(Job* job, bool take_rows, StagedRows* staged);

}  // namespace fabtrace::report::load
