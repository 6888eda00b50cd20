// A libfabtrace.so of an attacker's making, for the security tests
// (tests/integration/test_security.cpp): it carries the preload's USDT probes
// (provider "fabtrace", the same names, semaphores in ".probes") and fires
// them with whatever arguments it is given. A session attaches to every file
// of that name that a process maps, so any user can bring one.
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#include <cstdint>

#include "preload/probe_list.h"

extern "C" {
FT_USDT_PROBES(FT_USDT_SEMAPHORE_DEFINE)

// A session has attached the probes to this file (the kernel raised a semaphore).
__attribute__((visibility("default"))) int hostile_attached() {
  return fabtrace_thread_start_semaphore != 0 && fabtrace_mark_semaphore != 0;
}

__attribute__((visibility("default"))) void hostile_thread_start(const char* rank) {
  DTRACE_PROBE1(fabtrace, thread_start, rank);
}

__attribute__((visibility("default"))) void hostile_mark(const char* name) {
  DTRACE_PROBE1(fabtrace, mark, name);
}

__attribute__((visibility("default"))) void hostile_cq_stall(uint64_t cq, uint64_t start,
                                                             uint64_t end) {
  DTRACE_PROBE3(fabtrace, cq_stall, cq, start, end);
}

__attribute__((visibility("default"))) void hostile_op_error(uint32_t op, uint64_t bytes,
                                                             uint64_t start, uint64_t end,
                                                             int32_t err) {
  const char* local = "attacker";
  const char* remote = "victim";
  DTRACE_PROBE7(fabtrace, op_error, op, bytes, start, end, err, local, remote);
}

__attribute__((visibility("default"))) void hostile_poll(const void* runs, uint64_t n) {
  DTRACE_PROBE2(fabtrace, poll, runs, n);
}

// The other probes, so that the file costs a session what the preload does.
__attribute__((visibility("default"))) void hostile_others(uint64_t v) {
  const char* s = "x";
  DTRACE_PROBE6(fabtrace, slow_op, static_cast<uint32_t>(v), v, v, v, s, s);
  DTRACE_PROBE1(fabtrace, phase_begin, s);
  DTRACE_PROBE(fabtrace, phase_end);
}
}
