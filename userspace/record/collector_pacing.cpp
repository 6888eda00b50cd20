// The collector's own priority: in the background (SCHED_BATCH, nice 19) while
// the traced ranks run, at the priority it was started with while a flood of
// records outruns it, and what it cost (its CPU, its wall time, its raises).
#include <dirent.h>
#include <sched.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "common/clock.h"
#include "userspace/record/collector.h"

namespace fabtrace {

uint64_t Collector::cpu_ns() const {
  struct rusage u {};
  if (::getrusage(RUSAGE_SELF, &u) != 0) return 0;
  auto ns = [](const timeval& t) {
    return static_cast<uint64_t>(t.tv_sec) * 1000000000ULL +
           static_cast<uint64_t>(t.tv_usec) * 1000ULL;
  };
  return ns(u.ru_utime) + ns(u.ru_stime);
}

uint64_t Collector::run_wall_ns() const { return mono_ns() - (run_t0_ ? run_t0_ : start_ns_); }

std::string Collector::background() {
  run_cpu0_ = cpu_ns();
  run_t0_ = mono_ns();
  errno = 0;
  const int before = ::getpriority(PRIO_PROCESS, 0);
  if (errno == 0) nice_before_ = before;
  size_t threads = 0, failed = 0;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (struct dirent* e = ::readdir(d)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      const pid_t tid = static_cast<pid_t>(std::strtol(e->d_name, nullptr, 10));
      // The live view's thread keeps its priority: it wakes only for a stall
      // or a slow op, and it is there to show them at once (live_thread.h).
      if (tid == live_.tid()) continue;
      ++threads;
      const sched_param p{};
      // Per thread: nice 19 and no wakeup preemption (SCHED_BATCH).
      if (::sched_setscheduler(tid, SCHED_BATCH, &p) != 0 ||
          ::setpriority(PRIO_PROCESS, static_cast<id_t>(tid), 19) != 0)
        ++failed;
    }
    ::closedir(d);
  }
  if (threads == 0 || failed == threads) return "";
  sched_ = "SCHED_BATCH, nice 19";
  return sched_;
}

// The calling thread in the background (SCHED_BATCH, nice 19) or at the
// priority the collector was started with.
void Collector::set_own_priority(bool background) {
  const sched_param p{};
  ::sched_setscheduler(0, background ? SCHED_BATCH : SCHED_OTHER, &p);
  ::setpriority(PRIO_PROCESS, 0, background ? 19 : nice_before_);
}

// Behind: the programs woke the collector (their ring half full), or a pass
// drained half a ring or more (a pass that ended at its budget, a whole ring,
// with records left, among them). At nice 19 beside a busy
// loop the collector gets about 1.5% of a core, and a flood outruns it (the records lost in the
// kernel, counted): the draining thread then runs at the priority it was started with, until it has
// kept up for kCaughtUpNs.
void Collector::pace(uint64_t now) {
  const BpfSession::PollTurn& t = session_.last_poll();
  const uint64_t ring = session_.ring_bytes();
  const bool behind = t.woken || (ring && t.bytes * 2 >= ring);
  if (behind) last_behind_ = now;
  if (sched_.empty()) return;  // never lowered
  if (behind && !raised_) {
    set_own_priority(false);
    raised_ = true;
    raised_at_ = now;
    ++raises_;
  } else if (!behind && raised_ && now - last_behind_ >= kCaughtUpNs) {
    set_own_priority(true);
    raised_ = false;
    raised_ns_ += now - raised_at_;
  }
}

std::string Collector::sched_line() const {
  if (sched_.empty() || !raises_) return sched_;
  const uint64_t ns = raised_ns_ + (raised_ ? mono_ns() - raised_at_ : 0);
  char b[128];
  std::snprintf(b, sizeof(b), " (its own priority while behind a flood: %llu times, %.2f s)",
                static_cast<unsigned long long>(raises_), static_cast<double>(ns) / 1e9);
  return sched_ + b;
}

}  // namespace fabtrace
