// Was a receive posted before or after the send of its message? Only both
// ranks' per-op timelines can tell: a receive that completes quickly after it
// was posted may have found its message waiting (posted late) or have been
// posted just in time on a fast path; the completion time alone cannot tell
// the two apart.
//
// The matching key (what both sides can compute): per link sender address S
// -> receiver address R and per message family (tagged: fi_tsend* with
// fi_trecv*; untagged: fi_send* with fi_recv*), the k-th send S issued to R
// (by issue time) carries the message of the k-th receive completed at R from
// S (by completion time). That holds for a sender whose messages are delivered
// in order and received in order (what fi_pingpong, MPI and every ft_app family
// do). Receives whose source is unknown ("(any)": fi_cq_read, not readfrom)
// are matched only when a single sender's timeline has sends to R. The
// pairing is checked: the numbers of sends and receives must be equal and
// each pair's sizes too (the received size, or a posted size at least the
// sent one when the CQ had no length); a link that fails a check gets no
// verdict at all. So do links with injects (not in the timeline), records
// below the timeline's byte floor on one side only, or dropped records.
//
// A matched receive was posted late when its post time is after the send's
// issue time on the aligned clock (one host: CLOCK_MONOTONIC as is; other
// hosts: each rank's monotonic/wall anchor pair, so the verdict is as good as
// the nodes' wall-clock agreement), by more than the two timelines' clock-fit
// residuals.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "userspace/report/job/job.h"

namespace fabtrace::report {

struct EvidenceOptions {
  // Send and receive records held at once (about 40 bytes each); past it the
  // receives get no verdict, and say why.
  size_t max_records = size_t{8} << 20;
};

// Fills LinkRow::posted of every receive row of job->links from the ranks'
// per-op timelines (Rank::oplog_path). Rows of ranks without one, or whose
// senders have none, say so in posted.unknown.
void match_receives_to_sends(Job* job, const EvidenceOptions& opt = EvidenceOptions());

// The same in two steps, so that the timelines can be read by other processes
// (fabtrace report --mpi): what the matching takes from one rank's timeline
// (read_rank_timeline, needing only job.ranks), then the matching over every
// rank's, added in rank order.
struct RankTimeline {
  uint32_t rank = 0;  // index in Job::ranks
  bool read = false;  // opened and read to its end
  double residual_ns = 0;
  uint64_t records = 0;  // ops counted against max_records (no more kept past it)
  struct Link {
    uint32_t id = 0;
    std::string local, remote;
  };
  std::vector<Link> links;
  struct Op {  // a send or a receive not in error, times on the rank's CLOCK_MONOTONIC
    uint32_t link = 0;
    uint8_t kind = 0;
    bool size_unknown = false;
    int64_t start = 0, end = 0;
    uint64_t bytes = 0;
  };
  std::vector<Op> ops;
};
RankTimeline read_rank_timeline(const Job& job, uint32_t rank, const EvidenceOptions& opt);

class ReceiveMatcher {
 public:
  ReceiveMatcher(Job* job, const EvidenceOptions& opt);
  ~ReceiveMatcher();
  // The timeline of every rank with an oplog, in rank order.
  void add(const RankTimeline& t);
  void finish();

 private:
  struct State;
  Job* job_;
  EvidenceOptions opt_;
  std::unique_ptr<State> st_;
};

// The byte form of a RankTimeline (post_evidence_codec.cpp), between MPI processes.
void encode_rank_timeline(const RankTimeline& t, std::string* out);
bool decode_rank_timeline(const char* bytes, size_t size, size_t* pos, RankTimeline* t);

}  // namespace fabtrace::report
