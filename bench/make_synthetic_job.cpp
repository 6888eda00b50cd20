// Writes a synthetic all-to-all job (fixtures/synthetic_job.h: the
// generator the report tests use) into a directory, for bench/report-scale:
//
//   make_synthetic_job DIR NODES RANKS_PER_NODE [--peers P] [--oplogs] [--counters]
//                      [--ops-per-link K] [--varied] [--recvs] [--chains L [--chain-rounds R]]
//
// Without options only the ranks' report JSONs are written ("reports only"):
// every rank has a fi_tsend row to every other rank, a fi_write row to the next
// and one fi_trecv row, so a job of N ranks has N * (N + 1) link rows.
// --peers P: the sparse shape instead, each rank sending to P peers (its
// neighbours and collective partners: peers_of() in synthetic_job.h), so
// N * (P + 2) link rows.
// --oplogs adds per-op timelines (K fi_tsend records per link, default 10;
// --varied: of differing lengths; --recvs: with the receives from "(any)").
// --chains L plants chains of waits for the wait-state analysis: the ranks in
// chains of L, in each of R rounds (default 20) every rank of a chain waiting
// about 100 ms on its last (per-op timelines of those ops only, without
// --oplogs); it prints the waits planted and their sum.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "fixtures/synthetic_job.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: %s DIR NODES RANKS_PER_NODE [--peers P] [--oplogs] [--counters]\n"
                 "       [--ops-per-link K] [--varied] [--recvs] [--chains L [--chain-rounds R]]\n",
                 argv[0]);
    return 2;
  }
  // Reports alone unless the flags ask for timelines or counters.
  fabtrace::test::SyntheticOptions opt =
      fabtrace::test::reports_only(std::atoi(argv[2]), std::atoi(argv[3]));
  for (int i = 4; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--oplogs")) {
      opt.oplogs = true;
    } else if (!std::strcmp(argv[i], "--counters")) {
      opt.counters = true;
    } else if (!std::strcmp(argv[i], "--varied")) {
      opt.varied_durations = true;
    } else if (!std::strcmp(argv[i], "--recvs")) {
      opt.oplog_recvs = true;
    } else if (!std::strcmp(argv[i], "--peers") && i + 1 < argc) {
      opt.peers = std::atoi(argv[++i]);
      if (opt.peers < 2 || opt.peers > 65535) {
        std::fprintf(stderr, "%s: --peers takes 2 .. 65535\n", argv[0]);
        return 2;
      }
    } else if (!std::strcmp(argv[i], "--chains") && i + 1 < argc) {
      opt.chain_length = std::atoi(argv[++i]);
      if (opt.chain_length < 2 || opt.chain_length > 65536) {
        std::fprintf(stderr, "%s: --chains takes 2 .. 65536\n", argv[0]);
        return 2;
      }
    } else if (!std::strcmp(argv[i], "--chain-rounds") && i + 1 < argc) {
      opt.chain_rounds = std::atoi(argv[++i]);
      if (opt.chain_rounds < 1 || opt.chain_rounds > 25) {
        std::fprintf(stderr, "%s: --chain-rounds takes 1 .. 25\n", argv[0]);
        return 2;
      }
    } else if (!std::strcmp(argv[i], "--ops-per-link") && i + 1 < argc) {
      opt.oplog_ops_per_link = std::atoi(argv[++i]);
      if (opt.oplog_ops_per_link < 1 || opt.oplog_ops_per_link > 100000000) {
        std::fprintf(stderr, "%s: --ops-per-link takes 1 .. 100000000\n", argv[0]);
        return 2;
      }
    } else {
      std::fprintf(stderr, "%s: unknown option '%s'\n", argv[0], argv[i]);
      return 2;
    }
  }
  if (opt.nodes < 1 || opt.ranks_per_node < 1 || opt.nodes * opt.ranks_per_node < 2 ||
      opt.nodes * opt.ranks_per_node > 65536) {
    std::fprintf(stderr, "%s: NODES x RANKS_PER_NODE must be 2 .. 65536\n", argv[0]);
    return 2;
  }
  try {
    const fabtrace::test::SyntheticJob job = fabtrace::test::make_synthetic_job(opt);
    const size_t files = fabtrace::test::write_synthetic_job(job, argv[1]).size();
    size_t rows = 0;
    for (const auto& r : job.reports)
      for (const auto& l : r.links) rows += l.rows.size();
    std::printf("%s: %zu ranks, %zu link rows, %zu files", argv[1], job.reports.size(), rows,
                files);
    if (!job.chain_waits.empty()) {
      double sum = 0;
      for (const auto& w : job.chain_waits) sum += static_cast<double>(w.ns);
      std::printf("; %zu chains, %zu waits planted, %.3f s waited", job.chain_roots.size(),
                  job.chain_waits.size(), sum / 1e9);
    }
    std::printf("\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
  return 0;
}
