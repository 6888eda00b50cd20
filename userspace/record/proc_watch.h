// The collector's /proc scan every half second (proc_scan.h), made cheap on a
// node where little changes: reading every process's maps, and each traced
// process's TCP table, at every scan took 45 ms of the collector's CPU per
// scan on a development VM with 300 processes (9 % of a core), far more than
// its events. So:
//
// - a kernel thread is inspected once: it never maps a library (most of a
//   node's pids; rechecking them was most of a session's first seconds);
// - a process is inspected (its maps read) when it is new, or when it is no
//   longer the one it was (its start time or its name in /proc/PID/stat
//   changed: an exec, a pid reused); where the kernel tells which processes
//   began or exec'ed since the last scan (the session's programs do), only
//   theirs is read: reading every process's stat at every scan was a third of
//   the collector's CPU beside a pair (a process gone and its pid reused by a
//   fork, or an exec, is among those told); one that maps neither library is looked
//   at again after 0.5 s, then twice as long each time, up to 8 s (a library
//   loaded later, as MPI loads libfabric, is found that late at most); where
//   the kernel tells of files mapped executable too, a process is inspected
//   again when it loaded one, and its rechecks grow up to every 64 s (they
//   stay: a library whose path is renamed under the scan can look like
//   another file at one inspection and be found at the next); where
//   it tells of ends too, the scan does not list /proc at all (listing it was
//   most of what an idle session cost);
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

#include "userspace/record/proc_changes.h"
#include "userspace/record/proc_scan.h"

namespace fabtrace {

class ProcWatch {
 public:
  explicit ProcWatch(std::string root = "/proc") : root_(root), scanner_(std::move(root)) {}

  // Every process (but `self`) that maps the preload or libfabric: the new and
  // changed ones as inspected now, the others as last inspected. `told`: what
  // the kernel says changed since the last scan, when the caller knows (null:
  // every process listed and its identity read). Told, the others known are
  // taken as they were, unread; told of library loads too, those that map
  // neither library are inspected again when they load one, their rechecks
  // growing up to every kMaxRecheckToldNs instead of kMaxRecheckNs; told of
  // ends too, /proc is not listed (but at the first scan).
  std::vector<ScannedProcess> scan(pid_t self, uint64_t now_ns, const ProcChanges* told = nullptr);
  // The TCP connections of traced process `pid` the first time it is asked
  // for (by process: a pid reused is another); empty afterwards. The processes
  // of one network namespace asked for after one scan share one read of its
  // tables (a job's ranks, found together: one walk of the kernel's TCP hash
  // table, about 1.7 ms on a 2-core VM, instead of one per rank).
  std::vector<ScannedConn> new_tcp_conns(pid_t pid);
  const ProcScanner& scanner() const { return scanner_; }

  // Inspections and TCP table reads so far (for the tests).
  uint64_t inspections() const { return inspections_; }
  uint64_t tcp_reads() const { return tcp_reads_; }                    // asked for
  uint64_t tcp_table_reads() const { return scanner_.table_reads(); }  // read
  uint64_t identity_reads() const { return identity_reads_; }

  static constexpr uint64_t kFirstRecheckNs = 500000000ULL;
  static constexpr uint64_t kMaxRecheckNs = 8000000000ULL;
  static constexpr uint64_t kMaxRecheckToldNs = 64000000000ULL;

 private:
  struct Seen {
    std::string identity;  // name and start time
    bool maps_library = false;
    ScannedProcess last;  // when it maps one
    uint64_t next_ns = 0, every_ns = kFirstRecheckNs;
    bool conns_read = false;  // its TCP connections, from /proc
    bool kthread = false;     // a kernel thread: never rechecked
    uint64_t scan = 0;        // the last scan it was there
  };
  // "comm starttime" ("" when unreadable, or, with `zombie_gone`, when the
  // process has ended and awaits its parent's wait); *kthread: a kernel thread.
  std::string identity_of(pid_t pid, bool zombie_gone, bool* kthread) const;
  // One process looked at, in the scan numbered scans_: `listed` (found in
  // /proc's list, else told of or due), `due` (its recheck: read afresh).
  void visit(pid_t pid, uint64_t now_ns, const ProcChanges* told, bool listed, bool due);

  std::string root_;
  ProcScanner scanner_;
  std::map<pid_t, Seen> seen_;
  std::set<pid_t> other_conns_read_;  // --pid processes the scan does not know
  ProcScanner::TcpTables tables_;     // read since the last scan
  uint64_t scans_ = 0, inspections_ = 0, tcp_reads_ = 0;
  mutable uint64_t identity_reads_ = 0;
};

}  // namespace fabtrace
