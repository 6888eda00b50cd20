// `fabtrace diff A B`: two jobs (as load_job reads them) compared figure by
// figure. The runs' addresses differ (ports, hosts), so rows are matched by
// who they are between, not by address:
//   - a process by its rank ("r3"); processes without a rank ("NA") by their
//     order of start; a second process with the same rank gets ".2", ...;
//   - an endpoint by its process, and when the process has several local
//     addresses, by its NIC (domain) and the address's place in that NIC's
//     list ("r3[cxi0#2]");
//   - a remote address by the endpoint of the job that has it as a local
//     address ("r4"), else by the address itself (a peer that was not traced);
//   - a link row by (local endpoint, remote endpoint, op, message size);
//     a NIC by (process, domain); a CQ by (process, CQ number).
// Ratios are B / A. Latencies (p50, p99) go up when B is slower, bandwidth
// goes down: a figure's slowdown is B/A for a latency and A/B for a bandwidth.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "userspace/report/job/job.h"

namespace fabtrace::report {

struct DiffOptions {
  // A figure has changed when its slowdown is >= threshold (slower) or
  // <= 1/threshold (faster).
  double threshold = 1.2;
  // Rows and NICs are compared only when both runs have at least this many
  // completions (ops) in them: the p99 of a handful of ops is noise.
  uint64_t min_ops = 10;
  // A CQ is a stall in a run when its longest poll gap is at least this long.
  double stall_ns = 10e6;
};

// One figure of both runs; valid when both are > 0.
struct FigurePair {
  double a = 0, b = 0;
  bool valid() const { return a > 0 && b > 0; }
  double ratio() const { return valid() ? b / a : 0; }  // B / A
};

// A link row (local endpoint -> remote endpoint, op, size) of either run or both.
struct LinkDiff {
  std::string from, to;  // endpoint labels (see above)
  std::string op;
  uint64_t bytes = 0;
  bool recv = false, size_unknown = false;
  const LinkRow* a = nullptr;  // the row in A; nullptr: only in B
  const LinkRow* b = nullptr;
  bool compared = false;  // in both, with at least min_ops completions in each
  FigurePair p50, p99, gbps;
  // Over the valid figures: the largest and the smallest slowdown (p50 and
  // p99: B/A; gbps: A/B). 0 when not compared.
  double worst = 0, best = 0;
  bool slower = false;  // worst >= threshold
  bool faster = false;  // not slower, best <= 1/threshold
};

// A NIC (a process's libfabric domain): its achieved bandwidth (receives left
// out, as in the report).
struct NicDiff {
  std::string label;  // "r3 cxi0"
  const NicRow* a = nullptr;
  const NicRow* b = nullptr;
  bool compared = false;  // in both, with at least min_ops ops and a bandwidth in each
  FigurePair gbps;
  double slowdown = 0;  // A/B of gbps; 0 when not compared
  bool slower = false, faster = false;
};

// One op (fi_tsend, ...) over the whole job: the op mix and counts.
struct OpTotals {
  uint64_t issued = 0, completed = 0, errors = 0, eagain = 0, bytes = 0;
  double mean_ns = 0;  // over the completions (each row's mean weighted by its count)
};
struct OpDiff {
  std::string op;
  OpTotals a, b;
  bool in_a = false, in_b = false;
  double share_a = 0, share_b = 0;  // of all ops issued in the run, 0..1
  FigurePair issued, mean_ns;       // issued: the counts as figures
  // Only in one run, its count or mean latency changed by the threshold or
  // more, or errors or EAGAIN refusals where there were none.
  bool changed = false;
};

// A CQ whose poll gaps changed: a stall (longest poll gap >= stall_ns) in at
// least one run, or whose gaps of 1 ms or more (the CQ's own count, the
// stalls a fabtrace record session explains) went up or down by the
// threshold, with at least min_ops of them in one run. Kinds, first that
// applies: new (a stall in B only), gone (in A only), more / fewer (gaps of
// 1 ms or more), longer / shorter (the longest gap), both (a stall in both,
// about as long).
struct StallDiff {
  enum class Kind { kNew, kGone, kMore, kFewer, kLonger, kShorter, kBoth };
  std::string label;  // "r0 CQ#1"
  const Stall* a = nullptr;
  const Stall* b = nullptr;
  Kind kind = Kind::kBoth;
  FigurePair gap_ns;     // the longest gap
  FigurePair long_gaps;  // gaps of 1 ms or more
};
// "new", "gone", "more", "fewer", "longer", "shorter", "both"
const char* stall_kind_name(StallDiff::Kind k);

// The CI gate: the figures it looks at are the slowdowns of the compared
// non-receive link rows (p50, p99, per-op bandwidth) and of the compared
// NICs (achieved bandwidth). Receives (their time includes waiting for the
// sender), op counts and mix, stalls and rows in one run only are not gated.
struct Gate {
  size_t figures = 0;       // figures looked at
  size_t over = 0;          // of those, above the limit
  double worst = 0;         // the largest slowdown (0: none looked at)
  std::string worst_where;  // "r0 -> r1 fi_tsend 64 B p99", "NIC r0 lo"
};

struct JobDiff {
  DiffOptions opt;
  std::vector<std::string> ranks_only_a, ranks_only_b;  // process labels
  size_t ranks_both = 0;
  std::vector<LinkDiff> links;  // every row of A then those only in B
  std::vector<NicDiff> nics;
  std::vector<OpDiff> ops;        // by name
  std::vector<StallDiff> stalls;  // new, gone, then the others; longest gap first
  size_t rows_compared = 0, rows_few_ops = 0, rows_only_a = 0, rows_only_b = 0;
};

JobDiff diff_jobs(const Job& a, const Job& b, const DiffOptions& opt);

// The gate over `d`: figures above `limit` (0: none is above).
Gate diff_gate(const JobDiff& d, double limit);

// "r0 -> r1  fi_tsend 64 B" (<- for receives).
std::string link_diff_name(const LinkDiff& l);

// The labels of the job's processes, index for index with job.ranks (see
// above): "r0", "r0.2", "NA", "NA.2".
std::vector<std::string> process_labels(const Job& job);

// ---- what `fabtrace diff` writes (diff/text.cpp, diff/html.cpp) ----

struct DiffOutputOptions {
  std::string dir_a, dir_b;  // as given, for the titles
  size_t top = 10;           // rows per list
  double fail_above = 0;     // the gate's limit (0: no gate)
};
std::string diff_text(const Job& a, const Job& b, const JobDiff& d, const DiffOutputOptions& opt);
std::string diff_html(const Job& a, const Job& b, const JobDiff& d, const DiffOutputOptions& opt);
// "x1.23", "x171", "x0.0058".
std::string fmt_ratio(double r);
// A per-op bandwidth (GB/s, bytes per ns) with 3 significant digits in the
// unit that fits: small messages' are far below 1 GB/s ("35.9 kB/s").
std::string fmt_op_gbps(double gbps);

}  // namespace fabtrace::report
