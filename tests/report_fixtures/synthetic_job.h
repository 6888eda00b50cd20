// A synthetic multi-node, multi-rank job for the tests of `fabtrace report`,
// with known answers: per-rank reports (written with the preload's own JSON
// writer), per-op timelines (OplogFileWriter) and NIC counter CSVs (the
// sampler's documented format).
//
// Shape: `nodes` hosts "node01", "node02", ... with `ranks_per_node` ranks
// each (global rank = node * ranks_per_node + local rank), one NIC address per
// rank. Each host has its own CLOCK_MONOTONIC: node k's reads 1000 s +
// k * 48000 s when its first rank starts, so only the wall anchors line ranks
// up. The job starts at 2026-01-01 00:00:00 UTC; node k starts 0.5 * k s
// later, its local rank l l ms after that; every rank runs 10 s.
//
// Traffic of every rank to each of its peers: fi_tsend of 64 KiB (1000 ops,
// p99 about 20 us), fi_write of 1 MiB to the next rank (100 ops, p99 about
// 200 us), and fi_trecv of 64 KiB from "(any)". A rank's peers are every other
// rank (all-to-all), or with `peers` set the sparse shape of a large machine:
// its neighbours on a ring and a few collective partners (peers_of()).
//
// Planted:
//   - a slow link: the last rank's fi_tsend to rank 0, p99 900 us (the only
//     outlier, and the slowest row by p99);
//   - a stall: the CQ#1 of the first rank of the second node: a 250 ms poll
//     gap ending 3.25 s after that rank's start (3.75 s into the job);
//   - rank 1's fi_trecv: 90% completed within 50 us of posting (others 5%);
//     the timelines hold no receives (unless oplog_recvs), so no "posted
//     late" verdict;
//   - errors: 3 fi_tsend completions in error on rank 1 (to rank 0);
//     EAGAIN: 120 on rank 0's fi_tsend to rank 1; 2 unfinished fi_write on the
//     last rank; 7 timeline records dropped on rank 1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/report_model.h"

namespace fabtrace::test {

struct SyntheticOptions {
  int nodes = 2;
  int ranks_per_node = 2;
  bool oplogs = true;
  bool counters = true;
  int counter_samples = 50;  // every 100 ms from each rank's start
  // Timeline records per link (fi_tsend, 1 ms apart).
  int oplog_ops_per_link = 10;
  // The k-th fi_tsend of a link lasts 20 us + ((k * 7 + global rank) % 13) us
  // instead of 20 us, so that the slowest ops differ.
  bool varied_durations = false;
  // Each rank's timeline also holds its fi_trecv receives from "(any)": the
  // k-th send of every other rank to it, posted 5 us before that send was
  // issued for even k, 5 us after it (late) for odd k.
  bool oplog_recvs = false;
  // 0: every rank sends to every other rank. Else at most this many peers
  // per rank (peers_of()). A rank has a link row per peer and two more.
  int peers = 0;
};

// The ranks that rank g of n sends to (and receives from: the relation is
// symmetric), in rank order. All the others when peers is 0 or n - 1 or more;
// else the h nearest ranks on each side on a ring (g +- 1 .. h) and, beyond
// them, the recursive-doubling partners g XOR 2^k below n (a collective's
// partners), h the largest with 2h + partners <= peers: 8192 ranks with 64
// peers have 56 neighbours and 8 partners. Every rank has the same count
// when n is a power of two.
std::vector<int> peers_of(int g, int n, int peers);

struct SyntheticJob {
  SyntheticOptions opt;
  std::vector<ProcessReport> reports;  // in rank order

  // Known answers.
  uint64_t first_wall_ns = 0, last_wall_ns = 0;
  uint64_t ops = 0, completed = 0, bytes = 0, errors = 0, eagain = 0, unfinished = 0;
  uint64_t ops_dropped = 0;
  std::string slow_host, slow_rank, slow_local, slow_remote;
  double slow_p99_ns = 0, tsend_median_p99_ns = 0;
  std::string stall_host, stall_rank;
  uint32_t stall_cq = 0;
  double stall_gap_ns = 0;
  uint64_t stall_end_wall_ns = 0;
  double stall_end_job_s = 0;
  std::string late_host, late_rank;
  uint64_t late_imm = 0, late_count = 0;
  uint64_t oplog_ops_per_rank = 0;  // rank 0's (every rank's when all have as many peers)
  double octets_rate_per_s = 0;     // of every rank's cxiN:hni_sts_tx_ok_octets

  static std::string address(int global_rank);  // "fi_addr_cxi://0x..."
  static std::string host(int node);            // "node01", ...
};

SyntheticJob make_synthetic_job(const SyntheticOptions& opt = SyntheticOptions());

// Writes the job's files into dir (created if missing); node k's files go in
// dir/<host>/ when `per_node_dirs`. Returns the paths written.
std::vector<std::string> write_synthetic_job(const SyntheticJob& job, const std::string& dir,
                                             bool per_node_dirs = false);

// The JSON text the preload's writer makes of a report.
std::string report_json_text(const ProcessReport& r);
// The text report the preload's writer makes of it.
std::string report_text(const ProcessReport& r);

// A new empty directory under $TMPDIR (or /tmp), and its removal.
std::string make_fixture_dir(const std::string& tag);
void remove_tree(const std::string& dir);

// The file names the preload would give a rank's outputs.
std::string report_name(const ProcessReport& r);   // fabtrace.<host>.r<rank>.p<pid>.json
std::string oplog_name(const ProcessReport& r);    // fabtrace_ops.<...>.oplog
std::string counter_name(const ProcessReport& r);  // fabtrace_nic.<...>.csv

}  // namespace fabtrace::test
