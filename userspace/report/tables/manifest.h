// OUTDIR/manifest.json: what `fabtrace report` wrote and from what. The
// tables (links, nics, stalls, kernel_events, slowest_ops as CSV and JSON)
// stay plain for pandas (pd.read_csv, pd.read_json), so their writer's
// version and the job they are of are here, beside them:
//   {"format": "fabtrace-report-manifest", "version": 1,
//    "fabtrace_version": "0.9.0 (git ...)", "dir": DIR, "ranks": N,
//    "job": {"launchers": [[text, ranks], ...], "commands": [...], "libfabric": [...],
//            "providers": [...], "rank_versions": [...], "first_start_wall_ns": ns},
//    "outputs": ["report.html", "links.csv", ...]}
// (each list of [value, ranks] pairs, most ranks first: job/identity.h).
#pragma once

#include <string>
#include <vector>

#include "userspace/report/job/job.h"

namespace fabtrace::report {

constexpr const char* kManifestFormat = "fabtrace-report-manifest";
constexpr int kManifestVersion = 1;

// Writes out_dir/manifest.json (replacing an earlier one). `outputs`: the
// paths written, listed by their names. False with *error on failure.
bool write_manifest(const Job& job, const std::string& dir, const std::string& out_dir,
                    const std::vector<std::string>& outputs, std::string* error);

}  // namespace fabtrace::report
