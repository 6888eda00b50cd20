#include "preload/marks.h"

#include "common/clock.h"
#include "common/oplog_format.h"
#include "preload/probes.h"
#include "preload/runtime.h"
#include "preload/stats.h"
#include "preload/thread_id.h"
#include "preload/timeline.h"

namespace fabtrace {
namespace marks {

namespace {

// Open phases of this thread: a mark window on a phase closes at the end that
// brings the thread back to the depth of its begin.
thread_local int t_phase_depth __attribute__((tls_model("initial-exec"))) = 0;

void record(uint8_t kind, const char* name, int depth) {
  Runtime& rt = runtime();
  // Before the first fabric activity there is no timeline yet: the probe only.
  if (!rt.timeline_on) return;
  Timeline& t = timeline();
  if (!t.on()) return;
  const uint32_t id = name ? t.mark_name_id(name) : oplog::kNoMarkName;
  t.append_mark(my_shard(), kind, id, my_tid(), depth, now_ticks());
}

}  // namespace

void mark(const char* name) {
  if (!runtime_configure()) return;
  if (!name) name = "";
  if (probes::mark_on()) probes::fire_mark(name);
  record(oplog::kMarkInstant, name, t_phase_depth);
}

void begin(const char* name) {
  if (!runtime_configure()) return;
  if (!name) name = "";
  if (probes::phase_begin_on()) probes::fire_phase_begin(name);
  record(oplog::kPhaseBegin, name, ++t_phase_depth);
}

void end() {
  if (!runtime_configure()) return;
  if (probes::phase_end_on()) probes::fire_phase_end();
  // An end without a begin is recorded (the report ignores it) but does not go below 0.
  const int depth = t_phase_depth;
  if (t_phase_depth > 0) --t_phase_depth;
  record(oplog::kPhaseEnd, nullptr, depth);
}

}  // namespace marks
}  // namespace fabtrace
