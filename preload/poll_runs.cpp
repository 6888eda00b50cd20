#include "preload/poll_runs.h"

#include <pthread.h>

#include <rdma/fi_errno.h>
#include <cstdlib>

#include "preload/probes.h"

namespace fabtrace {
namespace poll_runs {

namespace {

// The CQs a thread keeps an open run for at once: a transmit and a receive CQ,
// polled in turn, each keep theirs. A fifth CQ ends the oldest run.
constexpr int kOpen = 4;

struct ThreadRuns {
  probes::PollRun open[kOpen];  // polls == 0: a free slot
  probes::PollRun ended[probes::kPollBatch];
  uint32_t n_ended;
};

// Allocated at the thread's first poll under --polls and freed at its end:
// the 800 bytes stay out of the static TLS block of every thread of every
// preloaded process (the library's thread-locals are initial-exec, and a
// dlopen would have to find room for all of them).
thread_local ThreadRuns* t_runs = nullptr;

pthread_key_t g_key;
pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
Sink g_sink = probes::fire_poll_runs;

void hand_over(ThreadRuns& t) {
  if (!t.n_ended) return;
  g_sink(t.ended, t.n_ended);
  t.n_ended = 0;
}

void end_run(ThreadRuns& t, probes::PollRun& r) {
  if (t.n_ended == probes::kPollBatch) hand_over(t);
  t.ended[t.n_ended++] = r;
  r.polls = 0;
}

void at_thread_end(void* p) {
  flush_thread();
  t_runs = nullptr;
  std::free(p);
}
void make_key() { pthread_key_create(&g_key, at_thread_end); }

// The calling thread's runs; null when they cannot be had (no memory: its
// polls are then not handed over).
ThreadRuns* mine() {
  if (__builtin_expect(t_runs != nullptr, 1)) return t_runs;
  auto* t = static_cast<ThreadRuns*>(std::calloc(1, sizeof(ThreadRuns)));
  if (!t) return nullptr;
  pthread_once(&g_key_once, make_key);
  pthread_setspecific(g_key, t);
  t_runs = t;
  return t;
}

}  // namespace

void poll_ended(uint32_t cq, int64_t n, uint64_t start, uint64_t end) {
  ThreadRuns* const tp = mine();
  if (!tp) return;
  ThreadRuns& t = *tp;
  probes::PollRun* r = nullptr;
  probes::PollRun* slot = nullptr;
  for (probes::PollRun& o : t.open) {
    if (o.polls && o.cq == cq) {
      r = &o;
      break;
    }
    if (!o.polls && !slot) slot = &o;
  }
  if (!r) {
    if (!slot) {
      slot = &t.open[0];
      for (probes::PollRun& o : t.open)
        if (o.start < slot->start) slot = &o;
      end_run(t, *slot);
    }
    r = slot;
    r->cq = cq;
    r->start = start;
    r->busy = 0;
  }
  r->polls += 1;
  r->busy += end > start ? end - start : 0;
  r->end = end;
  r->ret = n;
  const bool empty = n == 0 || n == -FI_EAGAIN;
  const uint64_t bound = probes::poll_run_ticks();
  if (!empty || end - r->start >= bound) end_run(t, *r);
  // While the thread waits (an empty poll), once a batch is full or its oldest
  // run has waited as long as an empty run lasts.
  if (empty && t.n_ended && (t.n_ended == probes::kPollBatch || end - t.ended[0].end >= bound))
    hand_over(t);
}

void flush_thread() {
  if (!t_runs) return;
  ThreadRuns& t = *t_runs;
  for (probes::PollRun& o : t.open)
    if (o.polls) end_run(t, o);
  hand_over(t);
}

void set_sink(Sink sink) { g_sink = sink ? sink : probes::fire_poll_runs; }

void forget_thread() {
  if (!t_runs) return;
  ThreadRuns& t = *t_runs;
  for (probes::PollRun& o : t.open) o.polls = 0;
  t.n_ended = 0;
}

}  // namespace poll_runs
}  // namespace fabtrace
