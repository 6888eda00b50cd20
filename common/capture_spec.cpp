#include "common/capture_spec.h"

#include <signal.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fabtrace {

namespace {

// A finite, non-negative number of seconds, the whole string.
bool parse_seconds(const std::string& s, double* out) {
  if (s.empty() || s.size() > 32) return false;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (errno || !end || *end || end == s.c_str() || !std::isfinite(v) || v < 0 || v > 1e9)
    return false;
  if (s.find_first_of("xXpPnN") != std::string::npos) return false;  // hex, inf, nan
  *out = v;
  return true;
}

std::string seconds_text(double v) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

struct Named {
  const char* name;
  int signo;
};
constexpr Named kSignals[] = {
    {"USR1", SIGUSR1},     {"USR2", SIGUSR2}, {"HUP", SIGHUP},     {"INT", SIGINT},
    {"QUIT", SIGQUIT},     {"TERM", SIGTERM}, {"ALRM", SIGALRM},   {"PIPE", SIGPIPE},
    {"CHLD", SIGCHLD},     {"CONT", SIGCONT}, {"TSTP", SIGTSTP},   {"TTIN", SIGTTIN},
    {"TTOU", SIGTTOU},     {"URG", SIGURG},   {"XCPU", SIGXCPU},   {"XFSZ", SIGXFSZ},
    {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH}, {"IO", SIGIO},
    {"PWR", SIGPWR},       {"SYS", SIGSYS},   {"TRAP", SIGTRAP},   {"ABRT", SIGABRT},
};

bool refused(int signo) {
  return signo == SIGKILL || signo == SIGSTOP || signo == SIGSEGV || signo == SIGBUS ||
         signo == SIGFPE || signo == SIGILL;
}

}  // namespace

std::string CaptureSpec::text() const {
  switch (kind) {
    case kWhole:
      return "";
    case kTime:
      return duration_s < 0 ? seconds_text(start_s)
                            : seconds_text(start_s) + ":" + seconds_text(duration_s);
    case kMark:
      return "mark:" + mark;
    case kSignal:
      return "signal";
  }
  return "";
}

bool parse_capture_spec(const std::string& value, CaptureSpec* out, std::string* why) {
  CaptureSpec w;
  if (value.empty() || value == "all") {
    *out = w;
    return true;
  }
  if (value == "signal") {
    w.kind = CaptureSpec::kSignal;
    *out = w;
    return true;
  }
  if (value.rfind("mark:", 0) == 0) {
    w.kind = CaptureSpec::kMark;
    w.mark = value.substr(5);
    if (w.mark.empty()) {
      *why = "mark: needs a mark name";
      return false;
    }
    if (w.mark.size() > 255) {
      *why = "a mark name is at most 255 bytes";
      return false;
    }
    *out = w;
    return true;
  }
  w.kind = CaptureSpec::kTime;
  const size_t colon = value.find(':');
  if (!parse_seconds(value.substr(0, colon), &w.start_s)) {
    *why = "expected START[:DURATION] in seconds, mark:NAME or signal";
    return false;
  }
  if (colon != std::string::npos) {
    if (!parse_seconds(value.substr(colon + 1), &w.duration_s) || w.duration_s <= 0) {
      *why = "DURATION must be a number of seconds above 0";
      return false;
    }
  }
  *out = w;
  return true;
}

int parse_capture_signal(const std::string& value, std::string* why) {
  if (value.empty() || value == "none" || value == "off" || value == "0") return 0;
  std::string v = value;
  if (v.rfind("SIG", 0) == 0) v = v.substr(3);
  for (const Named& n : kSignals)
    if (v == n.name) {
      if (refused(n.signo)) break;
      return n.signo;
    }
  char* end = nullptr;
  errno = 0;
  const long num = std::strtol(v.c_str(), &end, 10);
  if (!errno && end && !*end && end != v.c_str() && num >= 1 && num <= 64 &&
      !refused(static_cast<int>(num)))
    return static_cast<int>(num);
  *why = "expected a signal name (USR2, USR1, ...), a number, or none";
  return -1;
}

std::string capture_signal_name(int signo) {
  for (const Named& n : kSignals)
    if (n.signo == signo) return std::string("SIG") + n.name;
  return "signal " + std::to_string(signo);
}

}  // namespace fabtrace
