// Root causes of waiting: each wait (wait_states.h) followed along its chain
// to the first rank whose delay was not itself a wait on another rank.
//
// A wait of A on B over [s, e] is split by B's own waits in that time: the part
// where B waited on C is charged on through C (and so on), the rest to B, the
// root. A rank met again on a chain is not followed round: two ranks of a
// ping-pong each wait on the other; where B waited for a message A had sent
// (the ping, while A waited for the pong), B is the root, "receiving a
// message in transit" (the provider, the network, or B not progressing). After B sent, the message
// was A's to take: where A's own kernel record says it was kept from running then (stopped,
// preempted, paging in), that part is A's own delay, not B's. A root's cause is what the kernel log
// says of it in that time (a stall or slow op record of its process covering most of it), else
// "late to post". Each root's cost is the time all ranks waited because of it (Scalasca's delay
// cost); the costs of the roots add up to the waits. Linear in waits times the chains' length (at
// most kMaxChain hops).
//
// Without timelines (no wait known) a rank's poll gap that overlaps a poll gap
// of a rank it has links with is said to overlap it: weaker evidence, labelled
// so, and never followed further.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace fabtrace::report {

struct Job;

constexpr size_t kMaxChain = 16;
// A root costing less is not named in the summary (the protocol's own waits
// and a rank's few microseconds between receiving and sending on).
constexpr int64_t kMinRootCostNs = 1000000;  // 1 ms

struct RootCause {
  uint32_t rank = 0;  // index in Job::ranks
  std::string cause;  // the words of the longest part of its costliest class
  // The classes of its causes (breakdown_cause's words, "late to post", "in
  // transit") with their time, costliest first.
  std::vector<std::pair<std::string, int64_t>> classes;
  bool weak = false;  // overlapping poll gaps only (no timelines)
  int64_t cost_ns = 0;
  uint64_t waits = 0;                     // waits charged to it (wholly or in part)
  std::map<uint32_t, int64_t> by_waiter;  // who waited on it, how long
};

// What a stall (Job::stalls[i]) waited on, when known.
struct StallWait {
  bool known = false, weak = false;
  uint32_t on = 0, root = 0;
  std::string cause;  // the root's
};

// What a wait (Job::waits.list[i]) is charged to: the root that carries most
// of it and that root's delay, for the Perfetto trace's flow from the wait to
// its root cause.
struct WaitRoot {
  bool known = false;
  uint32_t root = 0;
  // The root's delay on the job's clock: its stall or slow op record that
  // names the cause, else the part of the wait charged to it.
  int64_t delay_start = 0, delay_end = 0;
  std::string cause;
};

struct WaitAnalysis {
  std::vector<RootCause> roots;                             // costliest first
  std::vector<StallWait> stalls;                            // per Job::stalls
  std::vector<WaitRoot> waits;                              // per Job::waits.list
  std::map<std::pair<uint32_t, uint32_t>, int64_t> matrix;  // (waiter, on) -> ns waited
};

WaitAnalysis analyze_waits(const Job& job);

}  // namespace fabtrace::report
