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
//                          kind and N well-formed ones; prints what it fired
//   swap A B S             exchanges paths A and B (renameat2) for S seconds
// Exit 3: no session attached in time.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" {
int hostile_attached();
void hostile_thread_start(const char* rank);
void hostile_mark(const char* name);
void hostile_cq_stall(uint64_t cq, uint64_t start, uint64_t end);
void hostile_op_error(uint32_t op, uint64_t bytes, uint64_t start, uint64_t end, int32_t err);
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

int usage() {
  std::fprintf(stderr,
               "usage: hostile_usdt idle S | mark-when-attached S | flood S | malformed N | "
               "swap A B S\n");
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
    }
    std::printf("fired %ld malformed x4, %ld well-formed x2\n", count, count);
    return 0;
  }
  return usage();
}
