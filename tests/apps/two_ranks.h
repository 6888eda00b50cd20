// The two-rank launcher of ft_app (tests/apps/main.cpp) and bench/fi_bw: one
// process forks into two ranks that talk over libfabric and coordinate over a
// socketpair. Rank 0 (the initiator) stays in the caller; rank 1 (the target)
// is a child that dies with its parent. RANK is set in each. A small library
// both link, independent of the tracer.
#pragma once

#include <sys/types.h>

namespace tworanks {

struct Rank {
  int rank = 0;     // 0 in the parent, 1 in the child
  int fd = -1;      // this rank's end of the socketpair
  pid_t child = 0;  // rank 1's pid (in rank 0)
};

// Forks. Call before any thread exists (the preload starts its threads on the
// first fabric call, which comes later), so the child may allocate freely.
// False after perror("<name>: socketpair"/"fork") when it cannot.
bool fork_two_ranks(const char* name, Rank* out);

// Rank 0: waits for rank 1 up to timeout_s, checking every poll_ms; kills it
// after that. Its exit code (128+signal if killed by a signal, 1 on timeout).
int wait_rank1(const char* name, pid_t pid, int timeout_s, int poll_ms);

}  // namespace tworanks
