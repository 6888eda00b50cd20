// The copies of libfabtrace.so whose USDT probes a session attaches. Their
// paths come from other users' processes (/proc/PID/maps), so such a path is
// never opened: the file is reached through /proc/PID/map_files/START-END, the
// very file the process maps (a rename, a link or a FIFO swapped in at the path
// changes nothing, and nothing can block the open), and held open; libbpf and
// the kernel are given /proc/self/fd/N, which names that open file.
//
// Only regular ELF files with the fabtrace USDT notes are taken, once per
// (device, inode) however many paths and processes name it. Not once per
// build-id: a uprobe (and so a USDT probe) is attached to an inode, so the
// probes of one copy never fire in a process that maps another copy of the
// same build; de-duplicating by build-id would leave that process untraced.
// Each copy costs its own spec ids and uprobes, so each counts against the
// bounds; a copy of a build already taken is named as such (copy_of). The files are
// bounded in number, in all and per user (the owner of the process that maps
// them), so that one user's copies cannot take every place; the probes' specs
// are counted per file, so that the session can keep within libbpf's budget
// (BpfSession::attach_usdt_mapped).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <deque>
#include <map>
#include <set>
#include <string>

namespace fabtrace {

struct UsdtFile {
  int fd = -1;
  dev_t dev = 0;
  ino_t ino = 0;
  uid_t user = 0;        // the owner of the process it was found in (0: the collector's own)
  std::string shown;     // the path as the process named it (for messages only)
  std::string build_id;  // GNU build-id, hex ("" when none)
  // The first file taken with the same (non-empty) build-id, "" when none: the
  // same build at another inode, attached apart (see above).
  std::string copy_of;
  // Per probe name of the "fabtrace" provider: its distinct argument specs
  // (what libbpf gives one spec id each, per attach).
  std::map<std::string, size_t> specs;
  std::string attach_path() const { return "/proc/self/fd/" + std::to_string(fd); }
};

// The fabtrace USDT notes of an ELF file (section .note.stapsdt): per probe
// name, the number of distinct argument specs; and its GNU build-id. False with
// *why for a file that is not a readable ELF or has no fabtrace probe.
bool read_usdt_notes(int fd, std::map<std::string, size_t>* specs, std::string* build_id,
                     std::string* why);

class UsdtLibraries {
 public:
  // At most `max_files` files, `max_per_user` of them brought by one user.
  UsdtLibraries(size_t max_files, size_t max_per_user)
      : max_files_(max_files), max_per_user_(max_per_user) {}
  ~UsdtLibraries();
  UsdtLibraries(const UsdtLibraries&) = delete;
  UsdtLibraries& operator=(const UsdtLibraries&) = delete;

  // The file process `pid` maps at `range` ("start-end" of its maps line) and
  // names `path`, through `proc_root`/PID/map_files. nullptr when it is already
  // known (*known set), or refused or over a bound (*why: one line; said once
  // per user and bound by the caller).
  const UsdtFile* add_mapped(const std::string& proc_root, pid_t pid, const std::string& range,
                             const std::string& path, uid_t user, bool* known, std::string* why);
  // The collector's own copy (FABTRACE_PRELOAD, root's choice): opened
  // without waiting (a FIFO is refused), a regular file only.
  const UsdtFile* add_own(const std::string& path, bool* known, std::string* why);

  size_t size() const { return files_.size(); }
  size_t refused_over_bound() const { return over_bound_; }

 private:
  const UsdtFile* add_fd(int fd, const std::string& shown, uid_t user, bool* known,
                         std::string* why);

  size_t max_files_, max_per_user_;
  std::deque<UsdtFile> files_;  // stable addresses
  std::map<uid_t, size_t> per_user_;
  size_t over_bound_ = 0;
};

}  // namespace fabtrace
