#include "preload/capture_signal.h"

#include <signal.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "common/capture_spec.h"
#include "common/clock.h"
#include "common/env.h"
#include "preload/timeline.h"

namespace fabtrace {

namespace {

std::atomic<Timeline*> g_toggled{nullptr};

void on_toggle(int) {
  const int saved = errno;
  Timeline* t = g_toggled.load(std::memory_order_acquire);
  if (t && t->on()) t->toggle_capture(now_ticks());
  errno = saved;
}

}  // namespace

std::string capture_signal_check(int signo, bool* free) {
  *free = false;
  if (signo <= 0) return "none";
  struct sigaction old;
  std::memset(&old, 0, sizeof(old));
  if (sigaction(signo, nullptr, &old) != 0)
    return capture_signal_name(signo) + " not used: " + std::strerror(errno);
  const bool has_own = (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL;
  if (has_own) return capture_signal_name(signo) + " not used: the application handles it";
  *free = true;
  return capture_signal_name(signo);
}

bool capture_signal_install(int signo, Timeline* t) {
  g_toggled.store(t, std::memory_order_release);
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_toggle;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(signo, &sa, nullptr) != 0) {
    log_line("warning: cannot install the capture toggle on %s: %s",
             capture_signal_name(signo).c_str(), std::strerror(errno));
    return false;
  }
  return true;
}

}  // namespace fabtrace
