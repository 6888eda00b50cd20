// The node's one `fabtrace record` session: an exclusive flock(2) on
// /run/fabtrace/record.lock. The kernel releases it when the collector exits,
// however it dies (kill -9 included), so a dead session never blocks the next.
// The directory is root's alone (mode 0700), and neither it nor the file may
// be a link or belong to anyone else: another user can neither take the lock
// nor make the collector open something else in its place.
//
// Who holds the lock is read from /proc/locks, which takes nothing: the tests
// ask it before they start a session of their own (tests/integration/harness.h).
#pragma once

#include <string>

namespace fabtrace {

constexpr const char* kSessionLockDir = "/run/fabtrace";
constexpr const char* kSessionLockName = "record.lock";

class SessionLock {
 public:
  SessionLock() = default;
  ~SessionLock();  // releases it
  SessionLock(const SessionLock&) = delete;
  SessionLock& operator=(const SessionLock&) = delete;

  // Takes the lock, creating `dir` (0700) and the file when missing. False with
  // one line in *error: another session holds it (named by its pid), or the
  // directory or file is not root's own.
  bool acquire(std::string* error, const std::string& dir = kSessionLockDir);
  void release();
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// The pid of the process holding the lock in `dir`, 0 when nobody does (or
// there is no lock file).
long session_lock_holder(const std::string& dir = kSessionLockDir);

}  // namespace fabtrace
