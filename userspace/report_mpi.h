// `mpirun -np K fabtrace report --mpi DIR`: the ranks' reports are parsed by K
// MPI processes (file i by process i % K) and gathered, in file order, by
// process 0, which builds the job and writes every output as the
// single-process report does (so the outputs are the same bytes).
// Built only with MPI (FABTRACE_HAVE_MPI; userspace/CMakeLists.txt).
#pragma once

#include <string>

#include "userspace/report/job.h"

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

  // Process 0: the parser load_job uses (LoadOptions::parser). It sends the
  // file list to the other processes, parses its own share on `threads`
  // threads and gathers theirs.
  report::ReportParser parser(unsigned threads);
  // Process 0, after load_job: lets the other processes go when load_job
  // returned before it parsed (DIR unreadable), so that none waits forever.
  void release();
  // Every other process: parses its share of the list process 0 sends and
  // sends the results back. Returns the process's exit code.
  int serve(unsigned threads);

 private:
  int rank_ = 0, size_ = 1;
  bool sent_ = false;
};

}  // namespace fabtrace
