// The live snapshot's seqlock (common/live_format.h): one writer, the process's
// publisher thread, and any number of readers in other processes, which never
// block it and never write. The sequence is odd while the body is being
// written; a reader's copy is whole when it read the same even sequence before
// and after it.
//
// The body goes word by word through release stores and acquire loads (plain
// moves on x86-64), which order the words against the sequence: the odd
// sequence before any word the reader may see, every word before the second
// read of the sequence (a seqlock without fences, which ThreadSanitizer checks:
// Boehm, "Can seqlocks get along with programming language memory models?",
// 2012). A reader in another process copies with pread(2) between two reads of
// the sequence (read_seqlocked_fd): it never maps a file its owner could
// truncate under it.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

namespace fabtrace {
namespace live {

// Writes n words of src into dst under the sequence *seq.
inline void write_seqlocked(uint64_t* seq, uint64_t* dst, const uint64_t* src, size_t n) {
  const uint64_t s = __atomic_load_n(seq, __ATOMIC_RELAXED);
  __atomic_store_n(seq, s + 1, __ATOMIC_RELAXED);
  // Each word a release: the odd sequence before it.
  for (size_t i = 0; i < n; ++i) __atomic_store_n(dst + i, src[i], __ATOMIC_RELEASE);
  __atomic_store_n(seq, s + 2, __ATOMIC_RELEASE);  // every word before the even one
}

// Copies n words of src into dst when no write overlapped the copy; up to
// `tries` attempts. Returns the sequence copied (even, > 0), or 0 when every
// attempt met a write (or nothing was ever published).
inline uint64_t read_seqlocked(const uint64_t* seq, const uint64_t* src, uint64_t* dst, size_t n,
                               int tries) {
  for (int t = 0; t < tries; ++t) {
    const uint64_t s1 = __atomic_load_n(seq, __ATOMIC_ACQUIRE);
    if (s1 & 1 || s1 == 0) continue;
    // Each word an acquire: every word before the second read of the sequence.
    for (size_t i = 0; i < n; ++i) dst[i] = __atomic_load_n(src + i, __ATOMIC_ACQUIRE);
    if (__atomic_load_n(seq, __ATOMIC_RELAXED) == s1) return s1;
  }
  return 0;
}

namespace detail {
// Orders this thread's reads of a file (pread's copies) one after another.
// ThreadSanitizer models no fence, and GCC refuses them under it; it cannot
// see another process's writes either, so there it is the compiler's barrier
// only.
inline void acquire_fence() {
#if defined(__SANITIZE_THREAD__)
  __atomic_signal_fence(__ATOMIC_ACQUIRE);
#else
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
#endif
}

inline bool pread_all(int fd, void* buf, size_t n, off_t off) {
  char* p = static_cast<char*>(buf);
  while (n) {
    const ssize_t r = ::pread(fd, p, n, off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
    off += r;
  }
  return true;
}
}  // namespace detail

// The same from a file: the sequence at seq_off, n words of body at body_off.
// The body's pread is bracketed by the sequence's, with acquire fences between
// them (the kernel's loads are this thread's too), as the writer's stores are
// by its fences. Returns the sequence, 0 when
// every try met a write, nothing was published, or a read failed (a file
// shorter than it says).
inline uint64_t read_seqlocked_fd(int fd, off_t seq_off, off_t body_off, uint64_t* dst, size_t n,
                                  int tries) {
  for (int t = 0; t < tries; ++t) {
    uint64_t s1 = 0, s2 = 0;
    if (!detail::pread_all(fd, &s1, sizeof(s1), seq_off)) return 0;
    if (s1 & 1 || s1 == 0) {
      if (t + 1 < tries) ::usleep(50);  // the writer is inside its copy: a few microseconds
      continue;
    }
    detail::acquire_fence();
    if (!detail::pread_all(fd, dst, n * sizeof(uint64_t), body_off)) return 0;
    detail::acquire_fence();
    if (!detail::pread_all(fd, &s2, sizeof(s2), seq_off)) return 0;
    if (s1 == s2) return s1;
  }
  return 0;
}

}  // namespace live
}  // namespace fabtrace
