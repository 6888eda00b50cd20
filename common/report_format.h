// The JSON report's format (fabtrace.<host>.r<rank>.p<pid>.json,
// common/output_names.h): its name, version and layout constants, the one home
// the writer (common/report_writer) and the reader (userspace/report/
// report_reader) share.
#pragma once

namespace fabtrace {

// The "format" field of every report.
constexpr const char* kReportFormatName = "fabtrace-report";

// The JSON report's format version. 2: receive rows may be "size_unknown";
// "ring_full" per row, apart from "untimed"; a NIC's addresses are a list
// ("locals"), where version 1 joined them with commas ("local"); a NIC row for
// every domain with ops, receives only included; NIC time windows and peak;
// "completed_within_50us" is version 1's "imm".
// 3: "fabtrace_version" (the writer's, common/version.h) and "job" (the
// command line, the launcher's job and step ids, Slurm's node list, the
// process's start, the libfabric version, fabtrace run's id:
// common/job_meta.h), both optional to a reader: a version 2 report has
// neither.
// Readers accept every version up to theirs.
constexpr int kReportFormatVersion = 3;

// The poll-gap classes of a CQ: <10us <100us <1ms <10ms <100ms >=100ms.
constexpr int kGapClasses = 6;
// The first class counted as a long gap (>= 1 ms).
constexpr int kFirstLongGapClass = 3;
// Their labels, in CqReport::gaps order (the JSON field names).
extern const char* const kGapClassNames[kGapClasses];

}  // namespace fabtrace
