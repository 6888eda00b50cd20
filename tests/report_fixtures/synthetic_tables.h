// The Job the report builds of a synthetic job's reports (synthetic_job.h):
// its ranks and tables, as load_job makes them of the report files, without
// reading timelines or counters.
#pragma once

#include "tests/report_fixtures/synthetic_job.h"
#include "userspace/report/job.h"

namespace fabtrace::test {

inline report::Job job_of(const SyntheticJob& sj) {
  report::Job job;
  for (const ProcessReport& r : sj.reports) job.ranks.push_back(report::make_rank(r));
  report::build_job_tables(&job);
  return job;
}

}  // namespace fabtrace::test
