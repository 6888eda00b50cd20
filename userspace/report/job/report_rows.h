// A rank's report read straight into the job's link rows (ParsedReport): what
// parse_process_report() and the loader's staging (stage_rows) make of it,
// the same rows and the same report, without a JSON tree of its links.
//
// The links are most of a report (a rank of a 2,048-rank all-to-all has 2,049
// rows of 18 fields in 1 MB of text) and most of `fabtrace report`'s time:
// a tree of 20 values per row, a string per row for error messages, an
// OpRow, then a LinkRow. Here one strict pass over the "links" array makes
// the rows; the rest of the report (a few KB: header, NICs, CQs) goes through
// parse_process_report() with the links' text left out ("links": []).
//
// Only a subset of JSON is read this way: what the preload writes, and any
// layout or key order of it. Anything else in the links (an escape or a byte
// outside printable ASCII in a string, a repeated "links" or "ops", a value
// of an unexpected type or out of its bounds, nesting deeper than the rows)
// or a report that the rest's parse refuses, and the whole text goes through
// parse_process_report() and stage_rows(): the same result, or the same
// message, as before (tests/unit/test_report_rows.cpp and the fuzz corpus
// hold both paths to each other).
#pragma once

#include <string>

#include "userspace/report/job/parsed_report.h"

namespace fabtrace::report {

// The calling thread's CPU time by part (LoadStats), when asked for: added to.
struct ParseTimes {
  int64_t open_read_ns = 0, head_ns = 0, rows_ns = 0, fallback_ns = 0;
  size_t fallbacks = 0;
};

// Fills *out from a report's text (out->ok, and out->why when it is not).
void parse_report_rows(const std::string& text, ParsedReport* out, ParseTimes* times = nullptr);
// Reads the file (bounded as read_process_report reads it) into *out.
void read_report_rows(const std::string& path, ParsedReport* out, ParseTimes* times = nullptr);

// The strict pass alone: false (and *out left for the full parse) when the
// text is not in the subset it reads, or is no report.
bool parse_report_rows_fast(const std::string& text, ParsedReport* out);

}  // namespace fabtrace::report
