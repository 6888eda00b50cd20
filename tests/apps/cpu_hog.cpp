// cpu_hog CPU MS [PRIO]: spins on CPU for MS milliseconds at real-time priority
// PRIO (SCHED_FIFO, default 10), then exits. The node-wide session's tests plant
// it beside a traced poller pinned to the same CPU: a preemption with a known
// culprit (this pid, comm "cpu_hog") and a known length.
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: cpu_hog CPU MS [PRIO]\n");
    return 2;
  }
  const int cpu = std::atoi(argv[1]);
  const long ms = std::atol(argv[2]);
  const int prio = argc > 3 ? std::atoi(argv[3]) : 10;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0) {
    std::perror("cpu_hog: sched_setaffinity");
    return 1;
  }
  sched_param sp{};
  sp.sched_priority = prio;
  if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
    std::perror("cpu_hog: sched_setscheduler");
    return 1;
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  volatile unsigned long spins = 0;
  while (std::chrono::steady_clock::now() < end) ++spins;
  return 0;
}
