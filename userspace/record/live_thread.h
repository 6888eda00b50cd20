// The live view's side of `fabtrace record` (`fabtrace top`, `fabtrace
// metrics`): a thread of its own that sleeps on the live ring (probes.bpf.c's
// live_events: each stall and slow op, sent a second time) and publishes each
// one into its user's live stalls file (common/live_stalls.h) at once.
//
// Why a thread: the collector's draining thread runs at nice 19 and drains
// on a timer. On a busy node it gets a CPU seconds after it asked for one, and
// the main ring holds seconds of raw events ahead of a stall: the view lagged
// by many refreshes. This thread keeps the priority the collector was started
// with and wakes only when a stall or a slow op comes (the processes' record
// budget bounds them) or a file that the rewrite limit held back is due; never
// on a timer otherwise.
//
// It shares with the collector's thread only what the /proc scan found of
// each process (known()), under a mutex held for a map lookup or insert:
// nothing of a traced process ever waits on it.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "bpf/fabtrace_events.h"
#include "common/live_stalls.h"

namespace fabtrace {

class BpfSession;

class LiveThread {
 public:
  LiveThread() = default;
  ~LiveThread() { close(); }
  LiveThread(const LiveThread&) = delete;
  LiveThread& operator=(const LiveThread&) = delete;

  // The live directory (StallsPublisher::open); false with *why: the session
  // runs on without live stalls.
  bool open(const std::string& dir, std::string* why);
  bool is_open() const { return pub_.is_open(); }
  // Starts the thread on `session`'s live ring (which must outlive close());
  // false when it cannot (no live ring: the programs that send it did not
  // load), and nothing is shown live.
  bool start(BpfSession* session, const std::string& proc_root);
  // The thread's id, 0 when none runs: the collector leaves it at its priority.
  pid_t tid() const { return tid_.load(std::memory_order_acquire); }
  // What the scan found of a process: its owner and its rank ("" unknown yet).
  void known(pid_t pid, uid_t uid, const std::string& rank);
  // Stops the thread and removes the session's live files.
  void close();

 private:
  void run(BpfSession* session);
  void publish(const void* data, size_t size);  // one record of the live ring

  live::StallsPublisher pub_;  // the thread's alone while it runs
  std::string proc_root_;
  std::thread thread_;
  int stop_fd_ = -1;  // an eventfd: close() ends the thread's wait
  std::atomic<pid_t> tid_{0};
  bool told_ = false;  // a write error, said once
  std::mutex mu_;      // guards procs_
  struct Proc {
    uid_t uid = 0;
    std::string rank;
  };
  std::map<pid_t, Proc> procs_;
};

}  // namespace fabtrace
