// The root causes of waiting (analysis/root_causes.h) in words: the
// summary's section and the lines under a stall, and the lists the HTML
// report's table shows.
#pragma once

#include <cstddef>
#include <string>

#include "userspace/report/analysis/root_causes.h"

namespace fabtrace::report {

struct Job;

// The summary's "root causes of waiting" (at most `top` roots of at least
// kMinRootCostNs); "" when there is none.
std::string root_causes_text(const Job& job, const WaitAnalysis& wa, size_t top);
// "; also preempted 9.1 s, in transit 2.0 s": a root's classes after its
// first (at most `max`), "" when it has one.
std::string classes_text(const RootCause& rc, size_t max = 4);
// Who waited on a root, longest first: "h r2 200.1 ms, h r1 199.8 ms" (at
// most `max`, then "+N more").
std::string waiters_text(const Job& job, const RootCause& rc, size_t max);
// The line under stall i of the summary ("" when nothing is known).
std::string stall_wait_text(const Job& job, const WaitAnalysis& wa, size_t i);

}  // namespace fabtrace::report
