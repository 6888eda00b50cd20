// The preload's USDT probes (provider "fabtrace"), one X(name) each: the
// preload declares and defines their semaphores from this list, and so does
// the security tests' look-alike library (tests/apps/hostile_probes.cpp),
// which must carry the same probes. Their arguments: bpf/fabtrace_events.h.
#pragma once

#define FT_USDT_PROBES(X) \
  X(thread_start)         \
  X(cq_stall)             \
  X(slow_op)              \
  X(op_error)             \
  X(poll)                 \
  X(mark)                 \
  X(phase_begin)          \
  X(phase_end)

// A probe's semaphore, named as <sys/sdt.h> expects (<provider>_<probe>_semaphore),
// in ".probes", where SystemTap and libbpf look for USDT semaphores.
#define FT_USDT_SEMAPHORE_DEFINE(name)     \
  __attribute__((section(".probes"), used, \
                 visibility("default"))) volatile unsigned short fabtrace_##name##_semaphore = 0;
#define FT_USDT_SEMAPHORE_DECLARE(name) extern volatile unsigned short fabtrace_##name##_semaphore;
