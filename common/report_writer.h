// Writing a ProcessReport: the human text (the seed's layout, with p50/p99 and
// the extra columns) and the JSON for tools.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "common/report_model.h"

namespace fabtrace {

void write_report_text(std::FILE* out, const ProcessReport& r);

// "fabtrace 0.9.0, libfabric 1.17, slurm job 12 step 0, started 2025-06-01
// 12:00:00 UTC, fabtrace run 1a2b...": the text report's second line (what is
// unknown is left out), the job report's opening too.
std::string job_line(const ProcessReport& r);
// ", fabtrace run <id>" as job_line writes it: what `fabtrace run` looks for.
std::string run_id_text(const std::string& id);
// "2025-06-01 12:00:00 UTC".
std::string utc_time_text(uint64_t wall_ns);
void write_report_json(std::FILE* out, const ProcessReport& r);

}  // namespace fabtrace
