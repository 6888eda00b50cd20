// What the kernel told of the node's processes since the collector last looked
// (sched.bpf.c's proc_changes map, taken by BpfSession::take_proc_changes): the
// input that lets the /proc scan read only what changed (proc_watch.h).
#pragma once

#include <sys/types.h>

#include <set>

namespace fabtrace {

struct ProcChanges {
  // The processes that began (a fork that is not a thread), exec'ed, and, as
  // the flags say, mapped a file executable or ended.
  std::set<pid_t> pids;
  bool loads = false;  // a library loaded (dlopen among them) is told
  bool ends = false;   // a process's end is told
  // Every change is told: the scan need not list /proc.
  bool whole() const { return loads && ends; }
};

}  // namespace fabtrace
