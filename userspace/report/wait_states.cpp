#include "userspace/report/wait_states.h"

#include <algorithm>
#include <climits>
#include <map>
#include <string>

#include "userspace/report/job.h"

namespace fabtrace::report {

std::vector<int64_t> job_clock_offsets(const Job& job) {
  std::map<std::string, int64_t> by_host;
  std::vector<int64_t> out(job.ranks.size(), 0);
  for (size_t i = 0; i < job.ranks.size(); ++i)
    out[i] = by_host.try_emplace(job.ranks[i].host, job.ranks[i].wall_offset_ns()).first->second;
  return out;
}

std::vector<int64_t> last_event_before(std::vector<int64_t> events,
                                       const std::vector<int64_t>& at) {
  std::sort(events.begin(), events.end());
  std::vector<int64_t> out(at.size(), INT64_MIN);
  for (size_t i = 0; i < at.size(); ++i) {
    const auto it = std::lower_bound(events.begin(), events.end(), at[i]);
    if (it != events.begin()) out[i] = *(it - 1);
  }
  return out;
}

}  // namespace fabtrace::report
