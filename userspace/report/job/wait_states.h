// Wait states: who made whom wait, from the per-op timelines.
//
// A rank A waited for a receive from rank B (post_evidence.h pairs each
// receive with its send) from the later of the receive's post and A's last
// other op event before the receive completed (A had nothing else to do: it
// was waiting for this receive) until the receive completed. The wait is on B.
// The part before B issued the send is a late sender (Scalasca's term); the
// part after it, the message in transit (the provider, the network, or B not
// progressing: "waiting on a peer" with an op pending with it). Waits shorter
// than kMinWaitNs are not kept: every message of a ping-pong makes its receiver
// wait a few microseconds, and that is the protocol, not a delay. The ops are
// the timelines' sends and receives (other kinds are not in RankTimeline).
//
// A late receiver: a send that completed only after its receive was posted,
// late (a rendezvous), its rank idle from the later of the send's issue and its
// last other op event until then, is a wait of the sender on the receiver
// (the part before the receive was posted is the receiver's lateness). The
// "posted late" evidence of the receive rows (PostEvidence) stays as it was.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fabtrace::report {

constexpr int64_t kMinWaitNs = 1000000;  // 1 ms

// Times on the job's clock: ns of CLOCK_REALTIME, the ranks of one host
// sharing one offset from their CLOCK_MONOTONIC (job_clock_offsets).
struct Wait {
  uint32_t rank = 0;           // who waited (index in Job::ranks)
  uint32_t on = 0;             // on whom
  int64_t start = 0, end = 0;  // end: the receive completed
  int64_t sent = 0;            // when `on` issued the send (a late receiver: posted the receive)
  uint64_t bytes = 0;          // the message's size
  bool late_receiver = false;  // a send's wait (else a receive's)
  int64_t length() const { return end - start; }
  // The late-sender part (before the send was issued).
  int64_t late_ns() const { return sent > start ? (sent < end ? sent : end) - start : 0; }
};

// A send matched to its receive, for the Perfetto trace's flow arrows and the
// OTF2 archive's message events: each side by its rank and its op's times on
// the rank's CLOCK_MONOTONIC. At most kMaxMessages are kept (40 bytes each);
// the rest are counted.
struct Message {
  uint32_t send_rank = 0, recv_rank = 0;
  int64_t send_start = 0, recv_start = 0, recv_end = 0;
  uint64_t bytes = 0;
};
constexpr size_t kMaxMessages = size_t{1} << 20;

struct WaitStates {
  bool from_timelines = false;  // the timelines were matched (else: no wait is known)
  std::vector<Wait> list;       // in the order the matcher found them
  std::vector<Message> messages;
  uint64_t messages_over = 0;  // matched pairs past kMaxMessages
};

// The last op event (issue or completion) of a rank strictly before `t`, for
// each t of `at`, over the ranks' events `events` (any order; sorted here).
// INT64_MIN where there is none. O((n + m) log n).
std::vector<int64_t> last_event_before(std::vector<int64_t> events, const std::vector<int64_t>& at);

}  // namespace fabtrace::report
