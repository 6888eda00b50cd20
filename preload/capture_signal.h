// The signal that toggles the per-op timeline's capture at run time
// (FABTRACE_OPS_SIGNAL, SIGUSR2 by default), so that an operator can capture
// "now" on a long job: `kill -USR2 <pid>` on, again off.
//
// Installed with sigaction at the first fabric activity, and only when the
// application has no handler of its own for that signal then (default
// disposition). An application that installs one later wins: fabtrace does not
// fight it. The handler only reads the clock and moves the window (relaxed
// atomics, async-signal-safe); the writer thread records the change.
#pragma once

#include <string>

namespace fabtrace {

class Timeline;

// Whether `signo` is free for us. Returns the note the oplog keeps:
// "SIGUSR2", or why there is no toggle ("none", "SIGUSR2 not used: the
// application handles it").
std::string capture_signal_check(int signo, bool* free);
// Installs the toggle for `t` (call once, after t has started).
bool capture_signal_install(int signo, Timeline* t);

}  // namespace fabtrace
