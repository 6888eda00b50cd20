#include "userspace/report/perfetto/writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/version.h"

namespace fabtrace::report {

// The clock of the trace.
//
// fabtrace puts every rank on one wall-clock timeline: op times (CLOCK_MONOTONIC
// of their node, from the oplog calibration) and counter samples are shifted by
// the rank's wall offset to CLOCK_REALTIME ns. Those are the values written.
//
// Choice: packets carry NO timestamp_clock_id, and the first packet of every
// file is a ClockSnapshot {BOOTTIME = T, REALTIME = T} (no primary_trace_clock).
//  - A packet without timestamp_clock_id is taken as already in trace time by
//    every trace_processor version (older ones: the trace clock defaults to
//    BOOTTIME for proto traces; current ones: "no conversion happens" in
//    ProtoTraceReader::TimestampTokenizeAndPushToSorter, and a snapshot holding
//    BOOTTIME without primary_trace_clock makes BOOTTIME the trace clock). No
//    per-event clock conversion can fail or drop events.
//  - Tagging events with BUILTIN_CLOCK_REALTIME instead would make every event
//    go through the clock graph: without a snapshot relating REALTIME to the
//    trace clock they are dropped (clock_sync_failure stats), and the result
//    would be the same identity mapping anyway.
//  - The snapshot costs one packet and tells trace_processor (clock_snapshot
//    table) and ui.perfetto.dev (load_trace.ts looks up the REALTIME snapshot)
//    that trace time IS wall-clock time, so "Realtime (UTC)" time display works.
//    The values are absolute ns since the epoch; the UI shows them relative to
//    the trace start by default.

namespace {

std::string errno_text(int e) { return std::strerror(e); }

}  // namespace

PerfettoWriter::PerfettoWriter() : enc_(kFlushBytes + 64 * 1024) {}

PerfettoWriter::~PerfettoWriter() {
  if (fd_ >= 0) {
    std::string ignored;
    close(&ignored);
  }
}

bool PerfettoWriter::open(const std::string& path, uint64_t snapshot_ns, std::string* error) {
  if (fd_ >= 0) {
    std::string ignored;
    close(&ignored);
  }
  path_ = path;
  enc_.clear();
  flushed_ = 0;
  packets_ = 0;
  failed_ = false;
  error_.clear();
  ++generation_;
  event_names_.clear();
  annotation_names_.clear();
  pending_event_names_.clear();
  pending_annotation_names_.clear();
  pending_ = false;
  if (!file_.open(path, error)) return false;
  fd_ = file_.fd();
  begin_packet(true, snapshot_ns, pf::kSeqIncrementalStateCleared);
  enc_.begin_nested(pf::kPacketClockSnapshot);
  enc_.begin_nested(pf::kClockSnapshotClocks);
  enc_.add_varint(pf::kClockId, pf::kBuiltinClockBoottime);
  enc_.add_varint(pf::kClockTimestamp, snapshot_ns);
  enc_.end_nested();
  enc_.begin_nested(pf::kClockSnapshotClocks);
  enc_.add_varint(pf::kClockId, pf::kBuiltinClockRealtime);
  enc_.add_varint(pf::kClockTimestamp, snapshot_ns);
  enc_.end_nested();
  enc_.end_nested();
  end_packet();
  begin_packet(false, snapshot_ns, 0);
  enc_.begin_nested(pf::kPacketSystemInfo);
  enc_.add_string(pf::kSiTracingServiceVersion, std::string("fabtrace ") + version());
  enc_.end_nested();
  end_packet();
  return true;
}

void PerfettoWriter::flush() {
  if (enc_.size() == 0) return;
  if (!failed_ && fd_ >= 0) {
    const uint8_t* p = enc_.data();
    size_t left = enc_.size();
    while (left > 0) {
      const ssize_t w = ::write(fd_, p, left);
      if (w < 0) {
        if (errno == EINTR) continue;
        failed_ = true;
        error_ = "writing " + path_ + " failed: " + errno_text(errno);
        break;
      }
      if (w == 0) {
        failed_ = true;
        error_ = "writing " + path_ + " failed: " + errno_text(ENOSPC);
        break;
      }
      p += w;
      left -= static_cast<size_t>(w);
    }
  }
  flushed_ += enc_.size();
  enc_.clear();
}

bool PerfettoWriter::close(std::string* error) {
  if (fd_ < 0) {
    if (error) *error = "no trace file open";
    return false;
  }
  flush();
  fd_ = -1;
  if (failed_) {
    file_.abandon();
  } else {
    std::string err;
    if (!file_.commit(&err)) {
      failed_ = true;
      error_ = err;
    }
  }
  if (failed_ && error) *error = error_;
  return !failed_;
}

uint64_t PerfettoWriter::intern(std::unordered_map<std::string, uint64_t>* map,
                                std::vector<std::pair<uint64_t, std::string>>* pending,
                                std::string_view name) {
  std::string key(name);
  auto it = map->find(key);
  if (it != map->end()) return it->second;
  const uint64_t iid = map->size() + 1;
  pending->emplace_back(iid, key);
  map->emplace(std::move(key), iid);
  pending_ = true;
  return iid;
}

uint64_t PerfettoWriter::event_name(std::string_view name) {
  return intern(&event_names_, &pending_event_names_, name);
}

uint64_t PerfettoWriter::annotation_name(std::string_view name) {
  return intern(&annotation_names_, &pending_annotation_names_, name);
}

void PerfettoWriter::write_interned_data() {
  enc_.begin_nested(pf::kPacketInternedData);
  for (const auto& n : pending_event_names_) {
    enc_.begin_nested(pf::kIdEventNames);
    enc_.add_varint(pf::kInternedIid, n.first);
    enc_.add_string(pf::kInternedName, n.second);
    enc_.end_nested();
  }
  for (const auto& n : pending_annotation_names_) {
    enc_.begin_nested(pf::kIdDebugAnnotationNames);
    enc_.add_varint(pf::kInternedIid, n.first);
    enc_.add_string(pf::kInternedName, n.second);
    enc_.end_nested();
  }
  enc_.end_nested();
  pending_event_names_.clear();
  pending_annotation_names_.clear();
  pending_ = false;
}

void PerfettoWriter::process_track(uint64_t uuid, int32_t pid, std::string_view name,
                                   int32_t sibling_rank) {
  begin_descriptor(uuid);
  enc_.add_string(pf::kTdName, name);
  enc_.begin_nested(pf::kTdProcess);
  enc_.add_int64(pf::kPdPid, pid);
  enc_.add_string(pf::kPdProcessName, name);
  enc_.end_nested();
  enc_.add_int64(pf::kTdSiblingOrderRank, sibling_rank);
  end_nested_packet();
}

void PerfettoWriter::child_track(uint64_t uuid, uint64_t parent, std::string_view name,
                                 int32_t sibling_rank, bool explicit_child_order) {
  begin_descriptor(uuid);
  enc_.add_varint(pf::kTdParentUuid, parent);
  enc_.add_string(pf::kTdName, name);
  if (explicit_child_order) enc_.add_varint(pf::kTdChildOrdering, pf::kChildOrderingExplicit);
  enc_.add_int64(pf::kTdSiblingOrderRank, sibling_rank);
  end_nested_packet();
}

void PerfettoWriter::counter_track(uint64_t uuid, uint64_t parent, std::string_view name,
                                   std::string_view unit_name, std::string_view description) {
  begin_descriptor(uuid);
  enc_.add_varint(pf::kTdParentUuid, parent);
  enc_.add_string(pf::kTdName, name);
  if (!description.empty()) enc_.add_string(pf::kTdDescription, description);
  enc_.begin_nested(pf::kTdCounter);
  if (!unit_name.empty()) enc_.add_string(pf::kCdUnitName, unit_name);
  enc_.end_nested();
  end_nested_packet();
}

void PerfettoWriter::process_ordering_explicit() {
  begin_descriptor(0);
  enc_.add_varint(pf::kTdProcessOrdering, pf::kProcessOrderingExplicit);
  end_nested_packet();
}

void PerfettoWriter::debug_args(const DebugArg* args, size_t nargs) {
  for (size_t k = 0; k < nargs; ++k) {
    const DebugArg& a = args[k];
    enc_.begin_nested(pf::kTeDebugAnnotations);
    enc_.add_varint(pf::kDaNameIid, a.name_iid);
    switch (a.type) {
      case DebugArg::kUint:
        enc_.add_varint(pf::kDaUint, a.u);
        break;
      case DebugArg::kInt:
        enc_.add_int64(pf::kDaInt, a.i);
        break;
      case DebugArg::kDouble:
        enc_.add_double(pf::kDaDouble, a.d);
        break;
      case DebugArg::kBool:
        enc_.add_bool(pf::kDaBool, a.u != 0);
        break;
      case DebugArg::kString:
        enc_.add_string(pf::kDaString, a.s);
        break;
    }
    enc_.end_nested();
  }
}

void PerfettoWriter::flow_ids(const Flows& f) {
  for (size_t i = 0; i < f.n; ++i) enc_.add_fixed64(pf::kTeFlowIds, f.ids[i]);
  for (size_t i = 0; i < f.nends; ++i) enc_.add_fixed64(pf::kTeTerminatingFlowIds, f.ends[i]);
}

void PerfettoWriter::finish_event(const DebugArg* args, size_t nargs, const Flows& flows) {
  debug_args(args, nargs);
  flow_ids(flows);
  end_nested_packet();
}

void PerfettoWriter::slice_begin(uint64_t ts, uint64_t track, uint64_t name_iid,
                                 const DebugArg* args, size_t nargs, const Flows& flows) {
  begin_event(ts, pf::kTypeSliceBegin, track, true);
  enc_.add_varint(pf::kTeNameIid, name_iid);
  finish_event(args, nargs, flows);
}

void PerfettoWriter::slice_end(uint64_t ts, uint64_t track) {
  begin_event(ts, pf::kTypeSliceEnd, track, false);
  end_nested_packet();
}

void PerfettoWriter::instant(uint64_t ts, uint64_t track, uint64_t name_iid, const DebugArg* args,
                             size_t nargs) {
  begin_event(ts, pf::kTypeInstant, track, true);
  enc_.add_varint(pf::kTeNameIid, name_iid);
  finish_event(args, nargs, Flows{});
}

void PerfettoWriter::instant_named(uint64_t ts, uint64_t track, std::string_view name,
                                   const DebugArg* args, size_t nargs, const Flows& flows) {
  begin_event(ts, pf::kTypeInstant, track, true);
  enc_.add_string(pf::kTeName, name);
  finish_event(args, nargs, flows);
}

void PerfettoWriter::counter_int(uint64_t ts, uint64_t track, int64_t v) {
  begin_event(ts, pf::kTypeCounter, track, false);
  enc_.add_int64(pf::kTeCounterValue, v);
  end_nested_packet();
}

void PerfettoWriter::counter_double(uint64_t ts, uint64_t track, double v) {
  begin_event(ts, pf::kTypeCounter, track, false);
  enc_.add_double(pf::kTeDoubleCounterValue, v);
  end_nested_packet();
}

}  // namespace fabtrace::report
