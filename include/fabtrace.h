/* fabtrace.h: phase marks from the application, for the fabtrace tracer.
 *
 *   #include <fabtrace.h>
 *   fabtrace_mark("iteration 12");   // an instant on the rank's timeline
 *   fabtrace_begin("allreduce");     // a phase: from here ...
 *   ...
 *   fabtrace_end();                  // ... to here (closes the innermost open phase)
 *
 * Header only, C and C++, no link-time dependency: the first call looks the
 * functions up in the process (dlsym(RTLD_DEFAULT)). Under the fabtrace
 * preload (LD_PRELOAD=libfabtrace.so, or `fabtrace run`) they land in the
 * per-op timeline and fire USDT probes that a `fabtrace record` session sees;
 * without it every call returns at once. Names are copied (at most 255 bytes
 * are kept); calls are thread-safe and never block on a lock.
 *
 * The lookup needs dlsym: glibc 2.34 and later have it in libc; on older
 * systems link with -ldl. Define FABTRACE_DISABLE to compile every call out.
 */
#ifndef FABTRACE_H
#define FABTRACE_H

#ifdef __cplusplus
extern "C" {
#endif

#ifndef FABTRACE_DISABLE

#include <dlfcn.h>
/* RTLD_DEFAULT needs _GNU_SOURCE, which the application may not define; it
 * is the null handle on glibc and musl. */
#ifdef RTLD_DEFAULT
#define FABTRACE_RTLD_DEFAULT_ RTLD_DEFAULT
#else
#define FABTRACE_RTLD_DEFAULT_ ((void*)0)
#endif

typedef void (*fabtrace_name_fn_)(const char*);
typedef void (*fabtrace_void_fn_)(void);

static inline void fabtrace_none_name_(const char* name) { (void)name; }
static inline void fabtrace_none_void_(void) {}

/* The preload's function `sym`, or the fallback: looked up on the first call
 * (per translation unit), then one load per call. dlsym's void* becomes a
 * function pointer as POSIX allows (__extension__: no -Wpedantic warning). */
#define FABTRACE_RESOLVE_(type, sym, fallback)                                   \
  static type cache_;                                                            \
  type fn_ = __atomic_load_n(&cache_, __ATOMIC_ACQUIRE);                         \
  if (__builtin_expect(fn_ == 0, 0)) {                                           \
    void* p_ = dlsym(FABTRACE_RTLD_DEFAULT_, sym);                               \
    fn_ = p_ ? __extension__(type) p_ : fallback;                                \
    __atomic_store_n(&cache_, fn_, __ATOMIC_RELEASE);                            \
  }

static inline void fabtrace_mark(const char* name) {
  FABTRACE_RESOLVE_(fabtrace_name_fn_, "fabtrace_mark_v1", fabtrace_none_name_)
  fn_(name);
}

static inline void fabtrace_begin(const char* name) {
  FABTRACE_RESOLVE_(fabtrace_name_fn_, "fabtrace_begin_v1", fabtrace_none_name_)
  fn_(name);
}

static inline void fabtrace_end(void) {
  FABTRACE_RESOLVE_(fabtrace_void_fn_, "fabtrace_end_v1", fabtrace_none_void_)
  fn_();
}

#undef FABTRACE_RESOLVE_

#else /* FABTRACE_DISABLE */

static inline void fabtrace_mark(const char* name) { (void)name; }
static inline void fabtrace_begin(const char* name) { (void)name; }
static inline void fabtrace_end(void) {}

#endif /* FABTRACE_DISABLE */

#ifdef __cplusplus
}
#endif

#endif /* FABTRACE_H */
