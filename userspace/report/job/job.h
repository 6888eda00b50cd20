// The whole job as `fabtrace report` sees it: every rank's outputs found under
// a directory, merged. Built by load_job() (job/loader.cpp), consumed by the
// summary, the tables, the HTML report and the Perfetto trace writers.
//
// Per-op records and counter samples are NOT held here: they are streamed from
// their files (oplog_file.h, cxi_counters.h readers) by the writers that need
// them, so memory does not grow with the number of ops. What a Rank keeps of
// its files is bounded: the oplog's totals, and a few counter series reduced
// to at most kCounterPlotPoints points each (CounterTrack) for the HTML plots.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/report_model.h"
#include "userspace/report/job/interned.h"
#include "userspace/report/job/kernel_node.h"
#include "userspace/report/job/wait_states.h"

namespace fabtrace::report {

// A NIC counter of one rank reduced for plotting (read from the rank's counter
// CSV by load_job; at most kCounterTracksPerDevice per device, each at most
// kCounterPlotPoints points).
struct CounterTrack {
  std::string device;      // "cxi0"
  std::string name;        // the column without "<device>:": "hni_sts_tx_ok_octets", "rh:nacks"
  bool cumulative = true;  // plotted as a rate (per second); else as sampled
  uint64_t changes = 0;    // sample intervals in which the value changed (activity)
  uint64_t increase = 0;   // cumulative: the increase over the run (resets skipped)
  std::vector<uint64_t> wall_ns;  // point times on the wall clock (rank-aligned)
  std::vector<double> values;     // per point: rate per second since the previous point, or value
};
constexpr size_t kCounterTracksPerDevice = 4;
constexpr size_t kCounterPlotPoints = 400;

// One process (rank) of the job.
struct Rank {
  // Who and when, as the rank's own report says (report's fields, not copies).
  const std::string& host() const { return report.host; }
  const std::string& rank() const { return report.rank; }  // "NA" when unknown
  long pid() const { return report.pid; }
  const std::string& providers() const { return report.providers; }
  // First fabric activity, on the rank's CLOCK_MONOTONIC and CLOCK_REALTIME.
  uint64_t start_mono_ns() const { return report.start_mono_ns; }
  uint64_t start_wall_ns() const { return report.start_wall_ns; }
  double duration_s() const { return report.duration_s; }
  // wall_ns = mono_ns + wall_offset_ns: how this rank's monotonic times align
  // with the other nodes' (ranks on one host share CLOCK_MONOTONIC).
  int64_t wall_offset_ns() const {
    return static_cast<int64_t>(start_wall_ns()) - static_cast<int64_t>(start_mono_ns());
  }
  std::string report_path;    // fabtrace.<host>.r<rank>.p<pid>.json
  std::string oplog_path;     // fabtrace_ops.<...>.oplog, empty when none
  std::string counters_path;  // fabtrace_nic.<...>.csv, empty when none
  ProcessReport report;       // the rank's own report, as read back
  // Of report.links, set by build_job_tables (load_job then moves the rows
  // into Job::links and empties report.links): how many links the report has,
  // and how many of its links' local addresses no NIC row lists.
  size_t link_count = 0;
  size_t unlisted_locals = 0;
  // From the oplog's end record and a scan of its blocks (0/false without one).
  uint64_t oplog_ops = 0;      // ops in the file's whole blocks
  uint64_t oplog_dropped = 0;  // ops the tracer dropped (its writer fell behind)
  bool oplog_truncated = false, oplog_ended = false;
  // From the counter CSV (empty without one).
  std::vector<std::string> counter_devices;
  uint64_t counter_samples = 0;
  std::vector<CounterTrack> counter_tracks;
};

// For a receive row: whether its receives were posted before or after the
// send of their message, as far as the per-op timelines tell (post_evidence.h).
struct PostEvidence {
  uint64_t logged = 0;        // receives of the row in the rank's per-op timeline
  uint64_t matched = 0;       // paired with the send of their message
  uint64_t late = 0;          // of those, posted after the send was issued
  double late_median_ns = 0;  // how long after, the median of the late ones
  // Why receives of the row have no verdict ("" when all matched): one of a
  // few sentences, held once (interned.h).
  const std::string& unknown() const { return unknown_.str(); }
  void set_unknown(Interned why) { unknown_ = why; }
  void set_unknown(std::string_view why) { unknown_ = intern(why); }

 private:
  Interned unknown_;
};

// What few link rows have, held apart from the row (LinkRow::extra_): the
// "posted late" evidence of a receive row matched against the per-op
// timelines, and the TCP retransmits and drops of a link from its node's
// kernel log. A row without them is 176 bytes instead of 232 (a job of 4M rows
// holds 235 MB less).
// A receive row's PostEvidence::unknown() when the timelines were not read,
// and when its rank has none: the reasons of most receive rows, held once.
constexpr const char* kPostedNotRead = "the per-op timelines were not read";
constexpr const char* kPostedNoTimeline = "no per-op timeline of this rank";
struct LinkExtra {
  PostEvidence posted;
  uint64_t retrans = 0, drops = 0;
};
static_assert(alignof(LinkExtra) >= 4, "LinkRow keeps two flags in a LinkExtra's address");

// One row of the job-wide link table: a link (local NIC -> remote NIC) x (op, size).
// Its names (the local side's host, rank and pid, the addresses, the op) are
// shared with the other rows (interned.h): a job of 1M rows holds a few
// thousand distinct names, not 1M copies of each.
struct LinkRow {
  LinkRow() = default;
  LinkRow(const RowOwner& owner, Interned local, Interned remote, Interned op)
      : owner_(&owner), local_(local), remote_(remote), op_(op) {}
  LinkRow(const LinkRow& o) : row(o.row), outlier_ratio(o.outlier_ratio) {
    copy_names(o), copy_extra(o);
  }
  LinkRow(LinkRow&& o) noexcept : row(o.row), outlier_ratio(o.outlier_ratio) {
    copy_names(o);
    extra_ = o.extra_;
    o.extra_ = 0;
  }
  LinkRow& operator=(const LinkRow& o) {
    if (this != &o) {
      row = o.row;
      outlier_ratio = o.outlier_ratio;
      copy_names(o);
      free_extra();
      copy_extra(o);
    }
    return *this;
  }
  LinkRow& operator=(LinkRow&& o) noexcept {
    if (this != &o) {
      row = o.row;
      outlier_ratio = o.outlier_ratio;
      copy_names(o);
      free_extra();
      extra_ = o.extra_;
      o.extra_ = 0;
    }
    return *this;
  }
  ~LinkRow() { free_extra(); }

  const std::string& host() const { return owner_->host; }  // host of the local side
  const std::string& rank() const { return owner_->rank; }  // rank that owns the local endpoint
  long pid() const { return owner_->pid; }
  const std::string& local() const { return local_.str(); }
  const std::string& remote() const { return remote_.str(); }
  const std::string& op() const { return op_.str(); }  // "fi_tsend"
  // The names' numbers (Interned::id()): equal exactly when the names are.
  uint32_t local_id() const { return local_.id(); }
  uint32_t remote_id() const { return remote_.id(); }
  uint32_t op_id() const { return op_.id(); }
  void set_owner(const RowOwner& o) { owner_ = &o; }  // o from intern_owner()
  void set_owner(std::string_view host, std::string_view rank, long pid) {
    owner_ = &intern_owner(host, rank, pid);
  }
  void set_link(Interned local, Interned remote) {
    local_ = local;
    remote_ = remote;
  }
  void set_link(std::string_view local, std::string_view remote) {
    set_link(intern(local), intern(remote));
  }
  void set_op(Interned op) { op_ = op; }
  void set_op(std::string_view op) { op_ = intern(op); }

  // Receive rows only: how their receives were posted (post_evidence.h).
  const PostEvidence& posted() const { return extra() ? extra()->posted : no_extra().posted; }
  PostEvidence& posted_mut() { return own_extra()->posted; }
  // posted_mut().set_unknown(why), without holding anything for the row when
  // it has no other evidence and `why` is kPostedNotRead or kPostedNoTimeline.
  void set_posted_unknown(std::string_view why);
  void set_posted_not_read() { set_posted_unknown(kPostedNotRead); }
  void clear_posted();  // no evidence, no reason
  // From the node's kernel log: TCP segments retransmitted and packets dropped on
  // this link's connections over the run (kernel_logged: the host had a session).
  bool kernel_logged() const { return (extra_ & kKernelLogged) != 0; }
  uint64_t retrans() const { return extra() ? extra()->retrans : 0; }
  uint64_t drops() const { return extra() ? extra()->drops : 0; }
  void set_kernel(bool logged, uint64_t retrans, uint64_t drops);

  OpStats row;               // counts and latency of that rank's row
  double outlier_ratio = 0;  // p99 / median p99 of the rows of the same (op, size); 0 if alone

 private:
  // extra_: a LinkExtra this row owns (kOwned), a shared one, or none (0);
  // kernel_logged in its lowest bit (LinkExtras are aligned to 8).
  static constexpr uintptr_t kKernelLogged = 1, kOwned = 2, kTags = 3;
  static const LinkExtra& no_extra();  // no evidence, no reason, no counts
  // Shared: posted().unknown() kPostedNotRead (0), kPostedNoTimeline (1).
  static const LinkExtra& shared_extra(int which);
  const LinkExtra* extra() const { return reinterpret_cast<const LinkExtra*>(extra_ & ~kTags); }
  bool owns_extra() const { return (extra_ & kOwned) != 0; }
  LinkExtra* own_extra();
  void free_extra() {
    if (owns_extra()) delete extra();
    extra_ &= kKernelLogged;
  }
  void copy_names(const LinkRow& o) {
    owner_ = o.owner_;
    local_ = o.local_;
    remote_ = o.remote_;
    op_ = o.op_;
  }
  void copy_extra(const LinkRow& o) {
    extra_ = o.owns_extra()
                 ? reinterpret_cast<uintptr_t>(new LinkExtra(*o.extra())) | (o.extra_ & kTags)
                 : o.extra_;
  }

  const RowOwner* owner_ = &no_owner();
  Interned local_, remote_, op_;
  uintptr_t extra_ = 0;
};

struct NicRow {
  std::string host, rank;
  long pid = 0;
  NicReport nic;
};

// A poll gap worth naming: a CQ's largest gap, with when it ended on the wall clock.
struct Stall {
  std::string host, rank;
  long pid = 0;
  CqReport cq;
  uint64_t end_mono_ns = 0;  // the gap's end on its host's CLOCK_MONOTONIC
  uint64_t end_wall_ns = 0;
  double end_job_s = 0;  // seconds since the job's first activity (first_wall_ns)
  // From the node's kernel log (fabtrace record), when there is one: the
  // kernel's breakdown of the gap. kernel_logged: the host had a session;
  // has_cause: it explained this gap (a gap under FABTRACE_STALL_US has none).
  bool kernel_logged = false, has_cause = false;
  KernelExplanation cause;
};

struct Skipped {
  std::string path;
  std::string why;  // one line: corrupt, truncated, foreign, unreadable
};

struct Job {
  std::vector<Rank> ranks;     // sorted by (host, numeric rank, pid)
  std::vector<LinkRow> links;  // every link row of every rank
  std::vector<NicRow> nics;
  std::vector<Stall> stalls;       // one per CQ with polls, worst first
  std::vector<Skipped> skipped;    // files under DIR that could not be used
  std::vector<Skipped> partial;    // files used, but with a caveat (cut short, no end record)
  std::vector<KernelNode> kernel;  // one per node that ran fabtrace record (its kernel log)
  WaitStates waits;                // who waited on whom (the receive matcher, wait_states.h)
  // Totals. ops: every op accepted (OpRow::issued()); bytes: completed non-receive
  // ops (count x size), so a transfer traced on both sides counts once.
  uint64_t ops = 0, bytes = 0, errors = 0, eagain = 0, untimed = 0, unfinished = 0;
  uint64_t refused = 0, completed = 0;  // refused: other immediate refusals; completed: timed ok
  uint64_t ring_full = 0, ops_dropped = 0;
  uint64_t cells_full = 0;                       // ops not aggregated (a rank's row table was full)
  uint64_t first_wall_ns = 0, last_wall_ns = 0;  // the job's span on the wall clock
  std::vector<std::string> hosts() const;
  // NICs: one per NIC row (a domain of a rank, whatever its number of
  // endpoint addresses), plus, for ranks of version 1 reports that wrote no
  // row for a domain that only received, each local address of that rank's
  // links that none of its rows lists.
  size_t nic_count() const;
  // Distinct (local, remote) pairs of the link rows (by the names' numbers:
  // no copy of a million addresses, no sort where each local address's rows
  // come together).
  size_t distinct_links() const;
};

// Reads every fabtrace output under dir (recursively). Unusable files are
// listed in job.skipped with a reason, never fatal. Returns false only when
// dir itself cannot be read.
bool load_job(const std::string& dir, Job* job, std::string* error);

struct ParsedReport;  // parsed_report.h
// load_job's parsing step, replaceable (LoadOptions::parser): fills out[i]
// with the result of paths[i] (report/mpi/report_mpi.cpp spreads it over MPI processes).
// False, with *error, when it could not be done.
using ReportParser = std::function<bool(const std::vector<std::string>& paths,
                                        std::vector<ParsedReport>* out, std::string* error)>;

// Where load_job's time went, when LoadOptions::stats asks for it
// (bench/report_phases): CPU time of the process (all threads: user + system)
// by step, and the parsing threads' own CPU time by part of a report.
struct LoadStats {
  size_t reports = 0, other_files = 0;  // report JSONs; timelines, counters, kernel logs
  size_t rows = 0;
  uint64_t report_bytes = 0;
  double find_s = 0;    // walking DIR: directories listed, names told apart
  double parse_s = 0;   // reading and parsing the reports (the parsing threads)
  double attach_s = 0;  // the ranks merged in file order; timelines, counters, kernel logs
  double tables_s = 0;  // the job's tables: ranks sorted, rows, NICs, stalls, outliers
  double match_s = 0;   // receives matched to sends (the timelines)
  // Within parse_s, summed over the parsing threads (their thread CPU time):
  double open_read_s = 0;  // open, fstat, read, close of each report
  double head_s = 0;       // a report's own fields, NICs and CQs parsed (per file)
  double rows_s = 0;       // its link rows parsed (per row)
  double fallback_s = 0;   // reports the one pass did not take, parsed whole
  size_t fallbacks = 0;
};

struct LoadOptions {
  // Directories under dir not to walk (the report's own output directory).
  std::vector<std::string> exclude_dirs;
  bool read_counters = true;  // reduce the counter CSVs into Rank::counter_tracks
  // Threads that parse the ranks' reports (0: one per core). The job is the
  // same whatever the number.
  unsigned threads = 0;
  // When set, parses the reports instead of parse_reports(paths, threads).
  ReportParser parser;
  // When set, called instead of match_receives_to_sends(job) once the job's
  // tables are built (report/mpi/report_mpi.cpp: the timelines read by every process).
  std::function<void(Job*)> match_receives;
  // When set, filled with where the time went (costs a few system calls a report).
  LoadStats* stats = nullptr;
};
bool load_job(const std::string& dir, const LoadOptions& opt, Job* job, std::string* error);

// A Rank for a report read back (host, rank, pid, providers, anchors and
// duration taken from it; no files attached).
Rank make_rank(ProcessReport report, std::string report_path = "");

// Fills links, nics, stalls, the totals and the span from job->ranks
// (sorting the ranks first). load_job calls it; tests that build ranks in
// memory call it too. take_rows: the ranks' link rows are moved into
// job->links and each rank's report.links is emptied (a job of 1M rows then
// holds them once, not twice); without it they are copied.
void build_job_tables(Job* job, bool take_rows = false);

// Sets outlier_ratio on every row (see kOutlierRatio): the median is taken over
// the rows of the same (op, bytes) with count > 0, the lower middle one for an
// even number of rows; 0 when the row is alone or has no completions.
void mark_outliers(std::vector<LinkRow>* links);

// The outlier threshold: a link row is an outlier when its p99 is at least this
// many times the median p99 of the rows with the same (op, size).
constexpr double kOutlierRatio = 3.0;

// A rank as the report names it: "node1 r3" (the pid is added when the rank
// is NA). Host and rank are made printable (common/printable.h).
std::string who(const std::string& host, const std::string& rank, long pid);
// Rank r of the job (an index in Job::ranks), named so.
std::string rank_name(const Job& job, uint32_t r);
// Per rank: the offset from its CLOCK_MONOTONIC to the job's clock, the same
// for every rank of one host (its first rank's wall anchor), so that the ranks
// of a host keep their exact order.
std::vector<int64_t> job_clock_offsets(const Job& job);

}  // namespace fabtrace::report
