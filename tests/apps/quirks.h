// Known provider bugs in the installed libfabric (1.17) that the workload steps
// around instead of failing on. Set FT_APP_NO_QUIRKS=1 to exercise them anyway.
#pragma once

#include <string>

#include "options.h"

namespace ftapp {

// Non-empty reason if calling `fn` on this provider is known to break the process.
std::string known_broken(const Options& opt, const std::string& fn);

// sockets: receives matched from the unexpected-message queue lose the
// FI_REMOTE_CQ_DATA completion flag (the data value is still delivered).
bool quirk_lost_remote_cq_data_flag(const Options& opt);

}  // namespace ftapp
