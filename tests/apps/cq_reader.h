// Reads completion queues in any fi_cq_format with fi_cq_read, fi_cq_readfrom or
// fi_cq_sread, turning error entries (fi_cq_readerr) into Completion records.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_eq.h>

#include <cstdint>
#include <vector>

#include "context.h"

namespace ftapp {

enum class CqMethod { kRead, kReadFrom, kSRead };

const char* cq_method_name(CqMethod m);

// Reads what is available (fi_cq_sread: waits up to sread_timeout_ms) and appends to
// *out. Returns the number of entries appended. Throws FamilyError on CQ failure.
size_t read_cq(fid_cq* cq, fi_cq_format fmt, CqMethod method, int sread_timeout_ms,
               std::vector<Completion>* out);

// fi_cq_read / fi_cq_readfrom / fi_cq_sread calls this process made (every
// thread): the program's own count of its CQ polls, to hold a tracer's poll
// count against.
uint64_t cq_polls_made();

// The same per CQ, with the longest gap between two of its polls (by any
// thread) and the number of gaps of 1 ms or more, each poll stamped as a
// tracer stamps it: a read when it returns, a blocking read (fi_cq_sread)
// when it starts. A JSON list, one object per CQ in the order of their first
// polls: [{"polls":N,"max_gap_ns":G,"long_gaps":L},...].
std::string cq_poll_stats_json();

// The calling thread's page faults so far (minor and major, getrusage).
uint64_t thread_faults();

// The calling thread's faults just before and just after its latest CQ read,
// once it called track_read_faults() (two getrusage calls per read from then
// on): the program's own bounds on the faults between two of its polls, from
// the end of one to the start of the next (inside) and from the start of one
// to the end of the next (around), whichever instants a tracer stamps.
struct ReadFaults {
  uint64_t before = 0, after = 0;
};
void track_read_faults();
ReadFaults last_read_faults();

}  // namespace ftapp
