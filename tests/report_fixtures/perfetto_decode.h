// A test-only reader of the Perfetto traces `fabtrace report` writes: the
// protobuf wire format and the Perfetto fields the writer uses (packets, the
// clock snapshot, interned names, track descriptors, track events with their
// arguments and flows), with checks that each file stands alone (every track
// and interned name defined in it, before use). Used by the trace's unit tests
// and by the --mpi tests on per-rank trace files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace fabtrace::test {

struct TraceEvent {
  uint64_t ts = 0;
  uint32_t type = 0;
  uint64_t track = 0;
  std::string name;  // resolved
  bool has_int = false, has_double = false;
  int64_t ivalue = 0;
  double dvalue = 0;
  std::map<std::string, std::string> args;  // resolved name -> value as text
  std::vector<uint64_t> flows, flow_ends;   // flow_ids, terminating_flow_ids
  size_t order = 0;                         // position in the file
};

struct Descriptor {
  uint64_t uuid = 0, parent = 0;
  std::string name, description, unit_name;
  bool process = false, counter = false;
  int64_t pid = 0;
  std::string process_name;
};

struct Decoded {
  bool ok = true;
  std::string problem;
  size_t packets = 0;
  bool first_clears_state = false;
  std::vector<std::pair<uint32_t, uint64_t>> clocks;  // first packet's snapshot
  std::vector<Descriptor> descs;
  std::vector<TraceEvent> events;
  size_t interned_event_names = 0;
  std::string service_version;  // SystemInfo.tracing_service_version: the writer
  void bad(const std::string& why) {
    if (ok) problem = why;
    ok = false;
  }
};

std::string read_file(const std::string& path);
// Decodes a .pftrace; Decoded::ok false (with the first problem) when the
// file does not parse or does not stand alone.
Decoded decode_trace(const std::string& path);
// What the trace processor would do with the slices: sort all events by
// (ts, file order) and replay each track's BEGIN/END. Returns "" or the
// problem: an END that closes no BEGIN, or slices nesting on one track.
std::string check_tracks(const Decoded& d);

}  // namespace fabtrace::test
