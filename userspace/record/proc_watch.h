// The collector's /proc scan every half second (proc_scan.h), made cheap on a
// node where little changes: reading every process's maps, and each traced
// process's TCP table, at every scan took 45 ms of the collector's CPU per
// scan on a development VM with 300 processes (9 % of a core), far more than
// its events. So:
//
// - a process is inspected (its maps read) when it is new, or when it is no
//   longer the one it was (its start time or its name in /proc/PID/stat
//   changed: an exec, a pid reused); one that maps neither library is looked
//   at again after 0.5 s, then twice as long each time, up to 8 s (a library
//   loaded later, as MPI loads libfabric, is found that late at most);
// - a traced process's TCP connections are read from /proc once, at the scan
//   that starts tracing it: the programs see every connection it makes (or
//   accepts, or listens on) from then on, so /proc only tells those made
//   before. A read walks the whole TCP hash table (a cond_resched per bucket,
//   empty or not): re-reading it whenever a process held a new socket was a
//   quarter of the collector's CPU beside a tcp;ofi_rxm pair.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "userspace/record/proc_scan.h"

namespace fabtrace {

class ProcWatch {
 public:
  explicit ProcWatch(std::string root = "/proc") : root_(root), scanner_(std::move(root)) {}

  // Every process (but `self`) that maps the preload or libfabric: the new and
  // changed ones as inspected now, the others as last inspected.
  std::vector<ScannedProcess> scan(pid_t self, uint64_t now_ns);
  // The TCP connections of traced process `pid` the first time it is asked
  // for (by process: a pid reused is another); empty afterwards.
  std::vector<ScannedConn> new_tcp_conns(pid_t pid);
  const ProcScanner& scanner() const { return scanner_; }

  // Inspections and TCP table reads so far (for the tests).
  uint64_t inspections() const { return inspections_; }
  uint64_t tcp_reads() const { return tcp_reads_; }

  static constexpr uint64_t kFirstRecheckNs = 500000000ULL;
  static constexpr uint64_t kMaxRecheckNs = 8000000000ULL;

 private:
  struct Seen {
    std::string identity;  // name and start time
    bool maps_library = false;
    ScannedProcess last;  // when it maps one
    uint64_t next_ns = 0, every_ns = kFirstRecheckNs;
    bool conns_read = false;  // its TCP connections, from /proc
    uint64_t scan = 0;        // the last scan it was there
  };
  std::string identity_of(pid_t pid) const;

  std::string root_;
  ProcScanner scanner_;
  std::map<pid_t, Seen> seen_;
  std::set<pid_t> other_conns_read_;  // --pid processes the scan does not know
  uint64_t scans_ = 0, inspections_ = 0, tcp_reads_ = 0;
};

}  // namespace fabtrace
