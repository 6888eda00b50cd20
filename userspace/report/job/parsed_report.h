// A rank's report as a parser leaves it, before the job is built from all of
// them (job/loader.cpp), and its byte form: `fabtrace report --mpi` parses
// each process's share of the reports and gathers these bytes, in file order,
// on the process that builds the job (report/mpi/report_mpi.cpp).
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "userspace/report/job/job.h"

namespace fabtrace::report {

// A report as its parsing thread leaves it: its link rows already in the
// form of Job::links (rows), so that the job never holds every rank's rows
// twice (as report links and as job rows).
struct ParsedReport {
  bool ok = false;
  ProcessReport report;  // without its links
  std::string why;       // !ok: why the file is skipped
  std::vector<LinkRow> rows;
  size_t link_count = 0, unlisted_locals = 0;
};

// Parses the reports at `paths` on up to `threads` threads (0: one per core);
// out[i] is the result of paths[i], the same whatever the number of threads.
std::vector<ParsedReport> parse_reports(const std::vector<std::string>& paths, unsigned threads);

// The same, for load_job: each report's rows appended to *table, in the
// order the files' names promise the job's table will have (so that it can be
// the job's as it is); (*range)[i] is where those of paths[i] are (offset,
// count), and out[i].rows is empty.
// With stats, its open_read_s .. fallbacks are filled.
std::vector<ParsedReport> report_rows_in_order(const std::vector<std::string>& paths,
                                               unsigned threads, std::vector<LinkRow>* table,
                                               std::vector<std::pair<size_t, size_t>>* range,
                                               LoadStats* stats = nullptr);

// A parsed report's links (p->report.links) made the job's rows (p->rows),
// with link_count and unlisted_locals; the links are freed.
void stage_rows(ParsedReport* p);

// Appends p's byte form to *out. Every field is written, doubles bit for bit,
// so that the decoded report makes the same outputs as the original.
void encode_parsed_report(const ParsedReport& p, std::string* out);

// Decodes one report from [*pos, size) of `bytes`, advancing *pos. False on
// bytes that are not an encoded report (cut short, a count larger than what is
// left): nothing read from the buffer is trusted beyond its size.
bool decode_parsed_report(const char* bytes, size_t size, size_t* pos, ParsedReport* p);

}  // namespace fabtrace::report
