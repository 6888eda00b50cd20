// JSON result of one rank.
#pragma once

#include <string>

#include "options.h"
#include "stats.h"

namespace ftapp {

// One-line JSON object. `unsupported` is non-empty when no family could run.
std::string result_json(const Options& opt, int rank, const Stats& stats,
                        const std::string& unsupported);

// Writes `json` to <prefix>.r<rank>.json; returns false on I/O error.
bool write_result_file(const std::string& prefix, int rank, const std::string& json);

}  // namespace ftapp
