// FABTRACE_OPS_WINDOW and FABTRACE_OPS_SIGNAL: which part of a run the per-op
// timeline captures, and the signal that toggles it at run time. Parsed here,
// apart from the preload, so that the unit tests check every form.
#pragma once

#include <string>

namespace fabtrace {

struct CaptureSpec {
  enum Kind {
    kWhole,   // unset: the whole run
    kTime,    // START[:DURATION] seconds after the first fabric activity
    kMark,    // mark:NAME: from the mark (or phase begin) NAME to the next mark (or its end)
    kSignal,  // signal: nothing until the toggle signal turns it on
  };
  Kind kind = kWhole;
  double start_s = 0;
  double duration_s = -1;  // < 0: to the end of the run
  std::string mark;
  // The canonical text ("" for kWhole): "2.5:1", "2.5", "mark:iteration 12", "signal".
  std::string text() const;
};

// Parses FABTRACE_OPS_WINDOW's value. False (with *why) on a bad value.
bool parse_capture_spec(const std::string& value, CaptureSpec* out, std::string* why);

// FABTRACE_OPS_SIGNAL's value: "USR2", "SIGUSR1", "none", "off", "0", a number
// (1..64). Returns the signal number, 0 for none, -1 (with *why) when bad.
// SIGKILL, SIGSTOP and the signals that report faults (SEGV, BUS, FPE, ILL)
// are refused.
int parse_capture_signal(const std::string& value, std::string* why);
// "SIGUSR2" for 12, "signal 40" for a real-time one.
std::string capture_signal_name(int signo);

}  // namespace fabtrace
