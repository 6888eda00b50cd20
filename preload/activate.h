// The first fabric activity of a process starts everything else: the clock's
// calibration, the in-flight ring, the per-op timeline and its capture toggle,
// the NIC counter sampler, the live snapshot, and the fork and exit hooks.
// Kept apart from runtime.cpp, the process-wide state that every part
// includes, so that the state includes none of the parts it starts.
#pragma once

namespace fabtrace {

// First fabric activity of this process: clock, ring, exit hook. Idempotent.
void runtime_activate();

}  // namespace fabtrace
