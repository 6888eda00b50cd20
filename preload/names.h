// Readable link labels (local NIC address, peer address) from what the
// control path recorded. Takes the containers' name locks: never on the data path.
#pragma once

#include <rdma/fabric.h>

#include <string>

#include "preload/objects.h"

namespace fabtrace {

std::string local_label(const EpWrap* ep);
std::string remote_label(const EpWrap* ep, fi_addr_t peer);

}  // namespace fabtrace
