// Which job(s) a report is of, from the ranks' own records (common/job_meta.h,
// report format 3): the launcher's job ids, the command lines, the first
// start, the libfabric versions and providers, and the fabtrace versions that
// wrote the ranks. The summary opens with it, the HTML report's header and
// footer show it, the Perfetto trace and the OTF2 archive carry it, and
// manifest.json lists it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "userspace/report/job/job.h"

namespace fabtrace::report {

// A value and the number of ranks that have it, most ranks first.
using Tally = std::vector<std::pair<std::string, size_t>>;

struct JobIdentity {
  Tally jobs;                        // "slurm job 12 step 0"; ranks without one are not counted
  Tally commands;                    // command lines
  Tally libfabrics;                  // "1.17"
  Tally providers;                   // "tcp;ofi_rxm"
  Tally versions;                    // the fabtrace versions that wrote the ranks ("" before 0.9.0)
  uint64_t first_start_wall_ns = 0;  // the earliest process start (0: none known)
};

JobIdentity job_identity(const Job& job);

// "a (3 ranks), b (1 rank)"; only "a" when every rank of the job has it.
// At most `max` values, then "and N more".
std::string tally_text(const Tally& t, size_t ranks, size_t max = 3);

// One line when the ranks were written by more than one fabtrace version
// ("the ranks were written by 2 fabtrace versions: ..."), else "".
std::string versions_note(const JobIdentity& id, size_t ranks);

// The label of a rank's fabtrace version: the version, or "before 0.9.0".
std::string version_label(const std::string& v);

}  // namespace fabtrace::report
