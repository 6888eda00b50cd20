// Reading the live snapshots (common/live_format.h) of the node's traced
// processes, for `fabtrace top` and `fabtrace metrics`.
//
// Every file is hostile until checked: opened relative to the directory's
// descriptor, never through a link, never mapped (its owner could truncate it
// under a mapping); its owner must be the caller (root may read every user's),
// the name, the head and the live process must agree on who it is (pid, user,
// start time), and the process must hold the file's lock (preload/live.h). A
// file that fails is skipped with its reason; a stale one (its process gone,
// or another program in its place) is skipped as stale.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/live_format.h"

namespace fabtrace {
namespace live {

struct Link {
  uint64_t c[kLinkFields] = {};
  std::string local, remote;  // as the writer put them (print through printable())
};

struct Cq {
  uint64_t c[kCqFields] = {};
};

struct Snapshot {
  std::string name;  // the file's name in its directory
  uid_t owner = 0;   // the file's owner, checked against the process's
  uint64_t head[kHeadFields] = {};
  std::string host, rank, job, comm;
  uint64_t proc[kProcessFields] = {};
  std::vector<Link> links;
  std::vector<Cq> cqs;
  pid_t pid() const { return static_cast<pid_t>(head[kh_pid]); }
};

struct ReadOptions {
  std::string dir = kDefaultDir;  // FABTRACE_LIVE_DIR
  std::string proc_root = "/proc";
  uid_t caller = 0;  // whose files are read: all of them for 0 (root)
  int tries = 200;   // seqlock attempts per file (50 us apart while the writer writes)
};
// The caller's effective uid, and the directory from FABTRACE_LIVE_DIR.
ReadOptions default_read_options();

struct Skipped {
  std::string name, why;
  bool stale = false;  // a file left by a process that is gone (not an error)
};

// Every snapshot in opt.dir the caller may see, sorted by (rank, pid). The
// files passed over are in *skipped when it is not null. False with *error
// when the directory cannot be read.
bool read_snapshots(const ReadOptions& opt, std::vector<Snapshot>* out,
                    std::vector<Skipped>* skipped, std::string* error);

// One file, opened relative to dirfd. False with the reason in *why
// (*stale when its process is gone).
bool read_snapshot(int dirfd, const std::string& name, const ReadOptions& opt, Snapshot* out,
                   std::string* why, bool* stale);

// The owner of /proc/PID (the process's effective user); false when it is gone.
bool process_owner(pid_t pid, const std::string& proc_root, uid_t* uid);
// The state letter of /proc/PID/stat ('R', 'S', 'T' stopped, 't' traced, ...);
// 0 when gone.
char process_state(pid_t pid, const std::string& proc_root = "/proc");

}  // namespace live
}  // namespace fabtrace
