// Reads completion queues in any fi_cq_format with fi_cq_read, fi_cq_readfrom or
// fi_cq_sread, turning error entries (fi_cq_readerr) into Completion records.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_eq.h>

#include <vector>

#include "context.h"

namespace ftapp {

enum class CqMethod { kRead, kReadFrom, kSRead };

const char* cq_method_name(CqMethod m);

// Reads what is available (fi_cq_sread: waits up to sread_timeout_ms) and appends to
// *out. Returns the number of entries appended. Throws FamilyError on CQ failure.
size_t read_cq(fid_cq* cq, fi_cq_format fmt, CqMethod method, int sread_timeout_ms,
               std::vector<Completion>* out);

}  // namespace ftapp
