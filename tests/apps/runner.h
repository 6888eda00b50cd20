// Runs test families on one rank: capability probing, agreement with the peer,
// setup, the family body, teardown and resynchronisation.
#pragma once

#include <string>

#include "options.h"

namespace ftapp {

// Runs the selected test(s) as `rank` talking to the peer over `fd`. Returns the
// exit code (0 ok, 1 failed, 77 unsupported), the one-line JSON in *json and, for
// 77, why in *skip_reason.
int run_rank(const Options& opt, int rank, int fd, std::string* json, std::string* skip_reason);

}  // namespace ftapp
