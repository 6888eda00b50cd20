// An unprivileged user's tools against a `fabtrace record` session, for the
// security tests (tests/integration/test_security.cpp). It maps the
// libfabtrace.so of hostile_probes.cpp (found by its run path, or first in
// LD_LIBRARY_PATH: a copy anywhere) and:
//   idle S                 maps it for S seconds
//   mark-when-attached S   waits up to S seconds for a session to attach to
//                          its copy, then registers and fires one mark
//   flood S                once attached: registers, then fires marks for S
//                          seconds; prints "fired N"
//   malformed N            once attached: fires N probes of each malformed
//                          kind and N well-formed ones (polls too: a session
//                          with --polls sees them); prints what it fired
//   swap A B S             exchanges paths A and B (renameat2) for S seconds
//   threads N S CQ         once attached: starts N threads that wake every
//                          100 ms for S seconds; the main thread, then the
//                          last thread started, each sleep 50 ms inside a CQ
//                          stall window they report (cq CQ, then CQ + 1);
//                          prints "threads N"
// Exit 3: no session attached in time.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <pthread.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bpf/fabtrace_events.h"

extern "C" {
int hostile_attached();
void hostile_thread_start(const char* rank);
void hostile_mark(const char* name);
void hostile_cq_stall(uint64_t cq, uint64_t start, uint64_t end);
void hostile_op_error(uint32_t op, uint64_t bytes, uint64_t start, uint64_t end, int32_t err);
void hostile_poll(const void* runs, uint64_t n);
void hostile_others(uint64_t v);
}

namespace {

uint64_t mono_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ULL + static_cast<uint64_t>(t.tv_nsec);
}

bool wait_attached(double seconds) {
  const uint64_t end = mono_ns() + static_cast<uint64_t>(seconds * 1e9);
  while (!hostile_attached()) {
    if (mono_ns() > end) return false;
    usleep(10000);
  }
  return true;
}

// A stall window of cq `cq` with 50 ms asleep inside it.
void sleep_in_stall(uint64_t cq) {
  const uint64_t start = mono_ns();
  usleep(50000);
  hostile_cq_stall(cq, start, mono_ns());
}

struct Threads {
  uint64_t end_ns = 0;
  uint64_t cq = 0;
  std::atomic<int> started{0};
  std::atomic<bool> plant{false};
};

// Each thread: one sleep at once (its first event), then a wake every 100 ms.
void* thread_main(void* arg) {
  auto* t = static_cast<Threads*>(arg);
  usleep(1000);
  t->started.fetch_add(1);
  while (mono_ns() < t->end_ns) usleep(100000);
  return nullptr;
}

// The last one started: the same, and its stall window once the main thread says so.
void* last_thread_main(void* arg) {
  auto* t = static_cast<Threads*>(arg);
  usleep(1000);
  t->started.fetch_add(1);
  while (!t->plant.load()) usleep(10000);
  sleep_in_stall(t->cq + 1);
  while (mono_ns() < t->end_ns) usleep(100000);
  return nullptr;
}

int many_threads(int n, double seconds, uint64_t cq) {
  if (n < 1) return 2;
  if (!wait_attached(60)) return 3;
  hostile_thread_start("threads");
  usleep(200000);  // the collector's scan registers the process too
  Threads t;
  t.end_ns = mono_ns() + static_cast<uint64_t>(seconds * 1e9);
  t.cq = cq;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  std::vector<pthread_t> ids;
  for (int i = 0; i < n; ++i) {
    pthread_t id;
    if (pthread_create(&id, &attr, i + 1 == n ? last_thread_main : thread_main, &t) != 0) {
      std::fprintf(stderr, "pthread_create failed after %d threads\n", i);
      t.end_ns = 0;
      t.plant = true;
      for (pthread_t j : ids) pthread_join(j, nullptr);
      return 4;
    }
    ids.push_back(id);
  }
  while (t.started.load() < n) usleep(10000);
  usleep(200000);  // every thread has slept once: each has its place, or was refused
  sleep_in_stall(cq);
  t.plant = true;
  for (pthread_t j : ids) pthread_join(j, nullptr);
  std::printf("threads %d\n", n);
  return 0;
}

int usage() {
  std::fprintf(stderr,
               "usage: hostile_usdt idle S | mark-when-attached S | flood S | malformed N | "
               "swap A B S | threads N S CQ\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage();
  const char* mode = argv[1];
  if (!std::strcmp(mode, "idle")) {
    sleep(static_cast<unsigned>(std::atoi(argv[2])));
    if (argc > 99) hostile_others(0);  // never: keeps the library linked
    return 0;
  }
  if (!std::strcmp(mode, "swap")) {
    if (argc < 5) return usage();
    const uint64_t end = mono_ns() + static_cast<uint64_t>(std::atof(argv[4]) * 1e9);
    uint64_t n = 0;
    while (mono_ns() < end)
      if (syscall(SYS_renameat2, AT_FDCWD, argv[2], AT_FDCWD, argv[3], RENAME_EXCHANGE) == 0) ++n;
    std::printf("swapped %llu times\n", static_cast<unsigned long long>(n));
    return 0;
  }
  if (!std::strcmp(mode, "mark-when-attached")) {
    if (!wait_attached(std::atof(argv[2]))) return 3;
    hostile_thread_start("mark");
    usleep(200000);  // the collector's scan registers the process too
    hostile_mark("attached");
    std::printf("marked\n");
    return 0;
  }
  if (!std::strcmp(mode, "flood")) {
    if (!wait_attached(60)) return 3;
    hostile_thread_start("flood");
    const uint64_t end = mono_ns() + static_cast<uint64_t>(std::atof(argv[2]) * 1e9);
    uint64_t n = 0;
    while (mono_ns() < end) {
      for (int i = 0; i < 1000; ++i) hostile_mark("flood");
      n += 1000;
    }
    std::printf("fired %llu\n", static_cast<unsigned long long>(n));
    return 0;
  }
  if (!std::strcmp(mode, "threads")) {
    if (argc < 5) return usage();
    return many_threads(std::atoi(argv[2]), std::atof(argv[3]),
                        std::strtoull(argv[4], nullptr, 10));
  }
  if (!std::strcmp(mode, "malformed")) {
    const long count = std::atol(argv[2]);
    if (!wait_attached(60)) return 3;
    hostile_thread_start("malformed");
    usleep(200000);
    for (long i = 0; i < count; ++i) {
      const uint64_t now = mono_ns();
      hostile_cq_stall(1, now, now - 1000000);                  // reversed
      hostile_cq_stall(2, now - 1000, now + 3600000000000ULL);  // ends an hour from now
      hostile_cq_stall(3, 1, now);                              // starts before any session
      hostile_op_error(1, 64, now - 1000000, now, INT32_MIN);   // not an error code
      hostile_op_error(1, 64, now - 1000000, now, 5);           // well-formed
      hostile_cq_stall(4, now - 2000000, now);                  // well-formed
      // Runs of polls: a batch it cannot read, one of too many runs, and one
      // of three malformed runs and a well-formed one.
      ft_poll_run runs[FT_POLL_BATCH + 1] = {};
      hostile_poll(reinterpret_cast<const void*>(16), 1);
      hostile_poll(runs, FT_POLL_BATCH + 1);
      runs[0] = {5, 1, 1, now - 1000, now + 3600000000000ULL, 0};  // ends an hour from now
      runs[1] = {5, 1, 1, now - 1000, now, 2000};                  // busier than its span
      runs[2] = {5, 0, 1, now - 1000, now, 0};                     // no poll
      runs[3] = {6, 3, 1, now - 3000, now, 2000};                  // well-formed: 3 polls, 3 us
      hostile_poll(runs, 4);
    }
    std::printf("fired %ld malformed x9, %ld well-formed x3\n", count, count);
    return 0;
  }
  return usage();
}
