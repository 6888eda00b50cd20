// A job of one node with a kernel log (fabtrace record), with known answers for
// the report's join: two ranks on "node01" over TCP addresses, and a kernel
// log written by the real writer (KernelLogWriter) holding
//   - rank 0's CQ#0 gap (50.2 ms): preempted by stress-ng[4312] for 48.1 ms,
//     on CPU 2.1 ms; an off-CPU interval of rank 0's thread inside it (flows);
//   - rank 1's CQ#0 gap (10.0 ms): blocked in futex for 9.8 ms;
//   - a retransmit burst on rank 0's connection to rank 1: 7 retransmitted
//     segments in 6 records (one skb of two segments) and 2 drops (TC_EGRESS);
//     3 retransmits on a connection of no traced process;
//   - a slow fi_tsend of rank 0 (4 KiB, 12 ms, 300 page faults);
//   - hard IRQs on CPU 1 while rank 0 ran (2 x 50 us).
#pragma once

#include <cstdint>
#include <string>

#include "tests/report_fixtures/synthetic_job.h"

namespace fabtrace::test {

struct KernelFixture {
  SyntheticJob job;  // the ranks' reports (TCP addresses, the two gaps)
  std::string klog;  // the kernel log's path
  long pid0 = 0, pid1 = 0;
  std::string addr0, addr1;  // rank 0's and rank 1's addresses
  double gap0_ns = 50.2e6, gap1_ns = 10.0e6;
  uint64_t retrans = 7, drops = 2, untraced_retrans = 3;
};

// Writes the job's files and the kernel log into dir.
KernelFixture write_kernel_fixture(const std::string& dir);

}  // namespace fabtrace::test
