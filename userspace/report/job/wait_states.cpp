#include "userspace/report/job/wait_states.h"

#include <algorithm>
#include <climits>

namespace fabtrace::report {

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
