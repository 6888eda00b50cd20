// One kernel log record as a row of text: the form `fabtrace export kernel`
// prints and the report's tables take. The columns are the same for every kind
// (so that a script reads one CSV), with what is particular to a kind in the
// `detail` column as key=value pairs separated by ';'.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "common/kernel_log.h"

namespace fabtrace {

struct KernelRow {
  uint64_t ts_ns = 0;     // CLOCK_MONOTONIC: when the event ended (or happened)
  uint64_t start_ns = 0;  // its start (= ts_ns for instants)
  uint64_t dur_ns = 0;
  std::string kind;  // kernel_log::kind_name
  uint32_t cpu = 0, pid = 0, tid = 0;
  std::string cause;       // offcpu: preempted/futex/...; irq: its name; stall: the verdict
  uint32_t other_pid = 0;  // the other task (who ran instead, who gave the CPU back)
  std::string other_comm;
  std::string detail;  // key=value;...
};

// Names a log gives to numbers: symbols by address, drop reasons by value.
struct KernelNames {
  std::map<uint64_t, std::string> functions;  // from kSymbols (class != "drop_reason")
  std::map<uint64_t, std::string> drop_reasons;
  static KernelNames from(const KernelLogReader& r);
};

// `rec` is a whole record of h.kind (KernelLogReader checked its size).
KernelRow kernel_row(const ft_hdr& h, const uint8_t* rec, const KernelNames& names);

// "127.0.0.1:5000" / "[::1]:5000" of a tuple's side.
std::string tuple_side(const ft_tuple& t, bool local);

// A fixed-size C string from a record (stops at NUL, control bytes as '?').
std::string record_str(const char* s, size_t n);
// "mark", "begin", "end" (enum ft_mark_type); "?" for anything else.
const char* mark_type_name(uint32_t type);

}  // namespace fabtrace
