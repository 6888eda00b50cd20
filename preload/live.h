// The live snapshot (common/live_format.h): a thread of the preload's own wakes
// once per interval, folds every thread's shard as the exit report does (the
// shards are only read: the data path gains no store, no lock and no system
// call), and publishes the result under a seqlock into a shared-memory file
// that `fabtrace top` and `fabtrace metrics` read.
//
// The file is created at the process's first fabric activity, in
// FABTRACE_LIVE_DIR (default /dev/shm), new (O_CREAT|O_EXCL|O_NOFOLLOW, 0600),
// and removed at exit. While the process lives it holds an OFD read lock on it
// (F_OFD_SETLK, on a descriptor closed at exec and in a forked child): a file
// whose lock is free is stale (its process was killed, or exec'd another
// program), whatever pid now has its number; readers ignore it, and the next
// process of this user with that pid replaces it.
#pragma once

#include <cstdint>
#include <string>

namespace fabtrace {

struct LiveConfig {
  bool on = true;                // FABTRACE_LIVE
  uint64_t interval_ms = 1000;   // FABTRACE_LIVE_INTERVAL_MS
  std::string dir = "/dev/shm";  // FABTRACE_LIVE_DIR
  uint64_t link_cap = 256;       // FABTRACE_LIVE_LINKS: (link, op) rows kept
};
LiveConfig live_config_from_env();

// Creates the file and starts the publisher (once; at the first fabric
// activity). False, after one line on stderr, when the file cannot be made:
// the process runs on without a live snapshot.
bool live_start(const LiveConfig& cfg);
// Stops the publisher and removes the file (at exit). Idempotent. A forked
// child has neither: the parent's thread did not come along, and its copies of
// the descriptor and mapping are dropped at the fork, so that the parent's
// lock ends with the parent.
void live_stop();

// Whether the publisher runs; the file's path ("" when none).
bool live_running();
std::string live_path();
// Publishes one snapshot now on the calling thread (the thread's interval
// ends here too). For tests and benchmarks; false when there is no file.
bool live_publish_now();
// Pauses (true) or resumes the publisher thread without removing the file,
// and sets its interval: the benchmark's A/B of the thread's cost to the
// data path (bench/bench_overhead.cpp).
void live_pause(bool paused);
void live_set_interval_ms(uint64_t ms);

}  // namespace fabtrace
