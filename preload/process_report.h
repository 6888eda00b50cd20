// The per-process report built from what the preload gathered: every thread's
// shard folded into one book, its cells merged by readable link, and the
// NICs (domains) and CQs that saw activity. Pure: it reads the shards and
// wrappers it is handed and nothing of the runtime, so tests can call it.
#pragma once

#include <string>
#include <vector>

#include "common/clock.h"
#include "common/report_model.h"
#include "preload/objects.h"
#include "preload/stats.h"

namespace fabtrace {

// What the report is built from, gathered at exit (preload/exit_report.cpp).
struct ReportInputs {
  Calibration cal;
  uint64_t start_ticks = 0;  // the first fabric activity
  uint64_t now_ticks = 0;    // the end of the run
  std::string host, rank;
  long pid = 0;
  uint64_t ring_slots = 0, ring_full = 0;
  std::vector<const Shard*> shards;  // every thread's, and the ops found in flight at exit
  std::vector<const FabricWrap*> fabrics;
  std::vector<const DomainWrap*> domains;
  std::vector<const CqWrap*> cqs;
};

// Fills *rep; false (and *rep left partial) when the process did no fabric
// I/O, which writes no report.
bool build_process_report(const ReportInputs& in, ProcessReport* rep);

}  // namespace fabtrace
