// The USDT probe sites and their semaphores, in one translation unit:
// <sys/sdt.h> switches a whole unit to semaphore-carrying notes.
#include "preload/probes.h"

#include <cstring>
#include <string>

#include "bpf/fabtrace_events.h"
#include "common/clock.h"
#include "preload/names.h"

#if FABTRACE_HAVE_SDT
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
#if defined(__x86_64__) && FABTRACE_USDT_NOP5
// Each probe site a 5-byte nop instead of <sys/sdt.h>'s 1-byte one. Since 6.18
// the kernel turns a uprobe on this exact nop (0f 1f 44 00 00, x86's nop5)
// into a call to a trampoline instead of a trap: a cheaper probe hit while a
// session is attached (docs/performance.md). Unattached, either nop costs the
// same. The note's layout is unchanged (it records the site's address, not its
// length), so libbpf, bpftool and readelf read it as before. Spelled as bytes:
// the assembler shortens `nopl 0(%rax,%rax,1)` to a 4-byte nop. The macro
// expands where each probe is written, so redefining it here is enough.
// (-DFABTRACE_USDT_NOP5=OFF builds the 1-byte form, the A side of the
// benchmark.)
// clang-format off
#undef _SDT_NOP
#define _SDT_NOP .byte 0x0f; .byte 0x1f; .byte 0x44; .byte 0x00; .byte 0x00
// clang-format on
#endif
#define FT_PROBE0(n) DTRACE_PROBE(fabtrace, n)
#define FT_PROBE1(n, a) DTRACE_PROBE1(fabtrace, n, a)
#define FT_PROBE2(n, a, b) DTRACE_PROBE2(fabtrace, n, a, b)
#define FT_PROBE3(n, a, b, c) DTRACE_PROBE3(fabtrace, n, a, b, c)
#define FT_PROBE6(n, a, b, c, d, e, f) DTRACE_PROBE6(fabtrace, n, a, b, c, d, e, f)
#define FT_PROBE7(n, a, b, c, d, e, f, g) DTRACE_PROBE7(fabtrace, n, a, b, c, d, e, f, g)
#else  // no <sys/sdt.h> on the build host: the semaphores stay 0, nothing fires
#define FT_PROBE0(n) ((void)0)
#define FT_PROBE1(n, a) ((void)(a))
#define FT_PROBE2(n, a, b) ((void)(a), (void)(b))
#define FT_PROBE3(n, a, b, c) ((void)(a), (void)(b), (void)(c))
#define FT_PROBE6(n, a, b, c, d, e, f) \
  ((void)(a), (void)(b), (void)(c), (void)(d), (void)(e), (void)(f))
#define FT_PROBE7(n, a, b, c, d, e, f, g) \
  ((void)(a), (void)(b), (void)(c), (void)(d), (void)(e), (void)(f), (void)(g))
#endif

// In ".probes", where SystemTap and libbpf expect USDT semaphores; the kernel
// increments them in every process that maps this library while a probe is
// attached (uprobe reference counters).
extern "C" {
FT_USDT_PROBES(FT_USDT_SEMAPHORE_DEFINE)
}

namespace fabtrace {
namespace probes {

namespace {

// Set once by configure(), before any thread fires (runtime_activate runs under
// a once flag before the first data-path op); read only afterwards.
double g_ns_per_tick = 1.0;
uint64_t g_poll_run_ticks = FT_POLL_RUN_NS;
const char* g_rank = "";

// Ticks of the past to CLOCK_MONOTONIC ns, anchored on a clock read taken now:
// only the span since `ticks` depends on the tick rate, so a long run's drift
// between the two clocks does not move the window against the kernel's events.
struct Anchor {
  uint64_t mono = mono_ns();
  uint64_t ticks = now_ticks();
  uint64_t at(uint64_t t) const {
    const double back = t < ticks ? static_cast<double>(ticks - t) * g_ns_per_tick : 0.0;
    const uint64_t b = static_cast<uint64_t>(back);
    return b < mono ? mono - b : 0;
  }
};

}  // namespace

void configure(double ns_per_tick, const char* rank) {
  g_ns_per_tick = ns_per_tick;
  if (ns_per_tick > 0)
    g_poll_run_ticks = static_cast<uint64_t>(static_cast<double>(FT_POLL_RUN_NS) / ns_per_tick);
  g_rank = rank ? rank : "";
}

void fire_thread_start() {
  // In a register: a global read straight into the probe's argument becomes a
  // RIP-relative operand ("8@sym(%rip)"), which libbpf's USDT parser refuses.
  const char* rank = g_rank;
  asm volatile("" : "+r"(rank));
  FT_PROBE1(thread_start, rank);
}

void fire_cq_stall(uint32_t cq, uint64_t start_ticks, uint64_t end_ticks) {
  const Anchor a;
  const uint64_t cq_index = cq, start = a.at(start_ticks), end = a.at(end_ticks);
  FT_PROBE3(cq_stall, cq_index, start, end);
}

void fire_slow_op(const OpRecord* rec, uint64_t bytes, uint64_t now) {
  const Anchor a;
  const uint32_t op = static_cast<uint32_t>(rec->kind);
  const uint64_t start = a.at(rec->start), end = a.at(now);
  // Never waits for a name lock: a busy one leaves the name empty.
  const std::string local = local_label(rec->ep, /*wait=*/false);
  const std::string remote = remote_label(rec->ep, rec->peer, /*wait=*/false);
  const char* l = local.c_str();
  const char* r = remote.c_str();
  FT_PROBE6(slow_op, op, bytes, start, end, l, r);
}

void fire_op_error(const OpRecord* rec, uint64_t now, int err) {
  const Anchor a;
  const uint32_t op = static_cast<uint32_t>(rec->kind);
  const uint64_t bytes = rec->bytes, start = a.at(rec->start), end = a.at(now);
  const int32_t e = err;
  const std::string local = local_label(rec->ep, /*wait=*/false);
  const std::string remote = remote_label(rec->ep, rec->peer, /*wait=*/false);
  const char* l = local.c_str();
  const char* r = remote.c_str();
  FT_PROBE7(op_error, op, bytes, start, end, e, l, r);
}

void fire_poll_runs(const PollRun* runs, uint32_t n) {
  if (n > kPollBatch) n = kPollBatch;
  const Anchor a;
  ft_poll_run out[kPollBatch];
  for (uint32_t i = 0; i < n; ++i) {
    const PollRun& r = runs[i];
    out[i].cq = r.cq;
    out[i].polls = r.polls;
    out[i].ret = r.ret;
    out[i].start = a.at(r.start);
    out[i].end = a.at(r.end);
    out[i].busy_ns = static_cast<uint64_t>(static_cast<double>(r.busy) * g_ns_per_tick);
  }
  const ft_poll_run* p = out;
  const uint64_t count = n;
  // The probe's operands are the pointer and the count: without this the
  // compiler may drop the stores to `out`, which only the kernel reads.
  asm volatile("" : : "r"(p) : "memory");
  FT_PROBE2(poll, p, count);
}

uint64_t poll_run_ticks() { return g_poll_run_ticks; }

void fire_mark(const char* name) { FT_PROBE1(mark, name); }

void fire_phase_begin(const char* name) { FT_PROBE1(phase_begin, name); }

void fire_phase_end() { FT_PROBE0(phase_end); }

}  // namespace probes
}  // namespace fabtrace
