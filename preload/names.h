// Readable link labels (local NIC address, peer address) from what the
// control path recorded. Takes the containers' name locks: never on the data
// path, except with wait = false (the probes of rare events), where a lock held
// by another thread gives "" instead of a wait.
#pragma once

#include <rdma/fabric.h>

#include <string>

#include "preload/objects.h"

namespace fabtrace {

std::string local_label(const EpWrap* ep, bool wait = true);
std::string remote_label(const EpWrap* ep, fi_addr_t peer, bool wait = true);

}  // namespace fabtrace
