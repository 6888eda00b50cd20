// The calling thread's id, as the kernel knows it (gettid once per thread),
// for the per-op timeline's rows and the marks.
#pragma once

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace fabtrace {

extern __thread uint32_t t_tid __attribute__((tls_model("initial-exec")));
inline uint32_t my_tid() {
  if (__builtin_expect(t_tid == 0, 0)) t_tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return t_tid;
}

// In a forked child: the thread that forked has a new id, asked again on its
// next use.
inline void reset_thread_id() { t_tid = 0; }

}  // namespace fabtrace
