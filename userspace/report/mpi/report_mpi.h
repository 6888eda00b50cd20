// `mpirun -np K fabtrace report --mpi DIR`: the report's work on K MPI
// processes, each taking a share of the ranks (report file i, or rank i of the
// job, when i % K is its MPI rank):
//   1. the ranks' reports are parsed and gathered, in file order, by process
//      0, which builds the job (the link rows stay there);
//   2. process 0 broadcasts the job's context (report/job/context.h); every
//      process reads its ranks' per-op timelines for the "posted late"
//      matching, which process 0 does over all of them (gathered in rounds of
//      K ranks, so in rank order, K timelines held at a time);
//   3. every process finds the slowest ops of its ranks' timelines (its top N,
//      gathered and merged under one total order; the ops read, an
//      MPI_Reduce) and, with --trace-per-rank, writes its ranks' Perfetto
//      files (their statistics merged with MPI_Reduce, their file lists and
//      warnings gathered and put in rank order).
// Process 0 writes everything else as the single-process report does, so the
// outputs are the same bytes. A process waiting for another sleeps between
// tests of its nonblocking collectives instead of polling a core. Built only with MPI
// (FABTRACE_HAVE_MPI; userspace/CMakeLists.txt).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "userspace/report/analysis/slowest_ops.h"
#include "userspace/report/job/job.h"
#include "userspace/report/perfetto/perfetto_trace.h"

namespace fabtrace {

// One MPI process of the report. Made after the arguments were parsed, by
// every process; MPI is finalized when it is destroyed.
class MpiReport {
 public:
  MpiReport();
  ~MpiReport();
  MpiReport(const MpiReport&) = delete;
  MpiReport& operator=(const MpiReport&) = delete;

  bool root() const { return rank_ == 0; }
  int size() const { return size_; }

  // ---- process 0
  // Step 1: the parser load_job uses (LoadOptions::parser).
  report::ReportParser parser(unsigned threads);
  // Step 2: LoadOptions::match_receives.
  std::function<void(report::Job*)> matcher();
  // Step 3, once the output directory exists: the slowest ops; then, when
  // per_rank_trace, per_rank_trace() must follow (the others are writing).
  report::SlowestOps slowest_ops(const report::Job& job, size_t n, bool per_rank_trace,
                                 const std::string& out_dir, const report::PerfettoOptions& opt);
  // write_perfetto with split_per_rank, process 0's share; the others' files
  // and warnings merged in, the notes printed as write_perfetto prints them.
  bool per_rank_trace(const report::Job& job, const std::string& out_dir,
                      const report::PerfettoOptions& opt, std::vector<std::string>* files,
                      std::string* error);
  // Lets the other processes go wherever they wait (DIR unreadable, no
  // usable report, no output directory), so that none waits forever.
  void release();

  // ---- every other process: steps 1 to 3 for process 0. Returns the exit code.
  int serve(unsigned threads);

 private:
  bool mine(size_t i) const { return i % static_cast<size_t>(size_) == static_cast<size_t>(rank_); }
  // This process's ranks of the job (indexes in Job::ranks).
  std::vector<uint32_t> ranks_of(const report::Job& job) const;
  int rank_ = 0, size_ = 1;
  int waiting_ = 1;  // process 0: the step the others wait at (4: none)
};

}  // namespace fabtrace
