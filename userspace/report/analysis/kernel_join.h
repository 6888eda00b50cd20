// The kernel logs of a job (job/kernel_node.h), joined with the ranks'
// outputs: by host, by process and thread id (the kernel's records carry the
// ranks' own pids and tids), and by CLOCK_MONOTONIC time, exactly: both sides
// read that clock on the same host, so no fitting.
#pragma once

#include <cstdint>
#include <string>

#include "userspace/report/job/kernel_node.h"

namespace fabtrace::report {

// The kernel's explanation of a rank's longest gap on CQ `cq`: the stall record
// of process `pid` and that CQ whose window ends nearest `end_mono_ns`, if its
// length is within 1% (or 50 us) of `gap_ns`. nullptr when the log has none.
const KernelExplanation* stall_cause(const KernelNode& n, long pid, uint32_t cq,
                                     uint64_t end_mono_ns, uint64_t gap_ns);

// "ip:port" parts of a libfabric address as fabtrace prints it
// ("fi_sockaddr_in://10.0.0.1:5000", "fi_sockaddr_in6://[::1]:5000",
// "10.0.0.1:5000"). False for other formats (cxi addresses, names).
bool parse_ip_port(const std::string& addr, int* family, uint8_t ip[16], uint16_t* port);

// Retransmits and drops on a rank's link: the connections owned by `pid` that
// join its local address to its remote one (either side may have connected: the
// remote's listening port, or ours with the remote's address).
struct LinkNet {
  uint64_t retrans = 0, drops = 0;
};
LinkNet link_net(const KernelNode& n, long pid, const std::string& local,
                 const std::string& remote);

struct Job;
// Joins the job's kernel logs into its stalls (the kernel's breakdown of each
// CQ's longest gap) and link rows (retransmits and drops). build_job_tables
// calls it; without kernel logs it changes nothing.
void join_kernel(Job* job);

// The node log of `host`, or nullptr.
const KernelNode* kernel_node(const Job& job, const std::string& host);

struct Stall;
// The "why:" line of a stall: the kernel's verdict on its gap, or what the
// kernel log says of a gap it has no record of ("" without a log).
std::string stall_why(const Stall& s);

}  // namespace fabtrace::report
