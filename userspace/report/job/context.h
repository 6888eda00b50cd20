// What every process of `fabtrace report --mpi` needs of the job to read its
// share of the ranks' per-op timelines and write their Perfetto files, without
// the link rows (the largest part, which only process 0 holds): the ranks
// (their reports without links, their files and anchors), the poll stalls
// (what the trace draws of them: no kernel breakdown beyond its verdict) and
// the job's span. Process 0 broadcasts its byte form.
#pragma once

#include <cstddef>
#include <string>

#include "userspace/report/job/job.h"

namespace fabtrace::report {

void encode_job_context(const Job& job, std::string* out);
// Fills job->ranks, stalls, first_wall_ns and last_wall_ns. False on bytes
// that are not an encoded context.
bool decode_job_context(const char* bytes, size_t size, Job* job);

}  // namespace fabtrace::report
