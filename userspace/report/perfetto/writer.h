// A streaming writer of Perfetto traces in the native protobuf format
// (.pftrace): a `Trace` message whose repeated field 1 is `TracePacket`s. Each
// packet is encoded straight into the output buffer (ProtoEncoder), which is
// written to the file every kFlushBytes, so memory does not grow with the trace.
//
// What is written (field numbers from google/perfetto protos/perfetto/trace/
// trace_packet.proto, track_event/{track_event,track_descriptor,
// counter_descriptor,process_descriptor,debug_annotation}.proto,
// interned_data/interned_data.proto, clock_snapshot.proto):
//   - one packet sequence (trusted_packet_sequence_id = kSequenceId); its first
//     packet, a ClockSnapshot, carries SEQ_INCREMENTAL_STATE_CLEARED; the
//     second, a SystemInfo, names the fabtrace that wrote the trace
//     (tracing_service_version: "fabtrace 0.9.0 (git ...)");
//   - TrackDescriptors (process tracks, named child tracks, counter tracks);
//   - TrackEvents: SLICE_BEGIN / SLICE_END pairs, INSTANTs, COUNTERs, with event
//     and debug-annotation names interned per file (InternedData in the packet
//     that first uses a name; such packets carry SEQ_NEEDS_INCREMENTAL_STATE).
//
// Timestamps: see kClockComment in the .cpp. In short: every timestamp is
// CLOCK_REALTIME ns, written with no timestamp_clock_id (so in the trace's own
// clock, BOOTTIME for proto traces), and the ClockSnapshot states BOOTTIME ==
// REALTIME so the UI can also show wall-clock (UTC) times.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/safe_output.h"
#include "userspace/report/perfetto/protobuf_encoder.h"

namespace fabtrace::report {

// Perfetto field numbers and enum values used by the writer (and by tests).
namespace pf {
// TracePacket
constexpr uint32_t kTracePacket = 1;  // Trace.packet
constexpr uint32_t kPacketTimestamp = 8;
constexpr uint32_t kPacketSequenceId = 10;  // trusted_packet_sequence_id
constexpr uint32_t kPacketTrackEvent = 11;
constexpr uint32_t kPacketInternedData = 12;
constexpr uint32_t kPacketSequenceFlags = 13;
constexpr uint32_t kPacketClockSnapshot = 6;
constexpr uint32_t kPacketTrackDescriptor = 60;
constexpr uint32_t kPacketSystemInfo = 45;
// SystemInfo (system_info.proto): the version of what wrote the trace, shown
// in the trace's metadata (the UI's "Info and stats").
constexpr uint32_t kSiTracingServiceVersion = 4;
constexpr uint32_t kSeqIncrementalStateCleared = 1;
constexpr uint32_t kSeqNeedsIncrementalState = 2;
// ClockSnapshot
constexpr uint32_t kClockSnapshotClocks = 1;
constexpr uint32_t kClockId = 1;
constexpr uint32_t kClockTimestamp = 2;
constexpr uint32_t kBuiltinClockRealtime = 1;
constexpr uint32_t kBuiltinClockBoottime = 6;
// TrackDescriptor
constexpr uint32_t kTdUuid = 1;
constexpr uint32_t kTdName = 2;
constexpr uint32_t kTdProcess = 3;
constexpr uint32_t kTdParentUuid = 5;
constexpr uint32_t kTdCounter = 8;
constexpr uint32_t kTdChildOrdering = 11;
constexpr uint32_t kTdSiblingOrderRank = 12;
constexpr uint32_t kTdDescription = 14;
constexpr uint32_t kTdProcessOrdering = 19;
constexpr uint32_t kChildOrderingExplicit = 3;
constexpr uint32_t kProcessOrderingExplicit = 1;
// ProcessDescriptor
constexpr uint32_t kPdPid = 1;
constexpr uint32_t kPdProcessName = 6;
// CounterDescriptor
constexpr uint32_t kCdUnitName = 6;
// TrackEvent
constexpr uint32_t kTeDebugAnnotations = 4;
constexpr uint32_t kTeType = 9;
constexpr uint32_t kTeNameIid = 10;
constexpr uint32_t kTeTrackUuid = 11;
constexpr uint32_t kTeName = 23;
constexpr uint32_t kTeCounterValue = 30;
constexpr uint32_t kTeDoubleCounterValue = 44;
constexpr uint32_t kTeFlowIds = 47;             // repeated fixed64
constexpr uint32_t kTeTerminatingFlowIds = 48;  // repeated fixed64
constexpr uint32_t kTypeSliceBegin = 1;
constexpr uint32_t kTypeSliceEnd = 2;
constexpr uint32_t kTypeInstant = 3;
constexpr uint32_t kTypeCounter = 4;
// DebugAnnotation
constexpr uint32_t kDaNameIid = 1;
constexpr uint32_t kDaBool = 2;
constexpr uint32_t kDaUint = 3;
constexpr uint32_t kDaInt = 4;
constexpr uint32_t kDaDouble = 5;
constexpr uint32_t kDaString = 6;
// InternedData
constexpr uint32_t kIdEventNames = 2;
constexpr uint32_t kIdDebugAnnotationNames = 3;
constexpr uint32_t kInternedIid = 1;  // EventName / DebugAnnotationName
constexpr uint32_t kInternedName = 2;
}  // namespace pf

// One debug annotation (an "arg" in the UI) of an event; name_iid from
// PerfettoWriter::annotation_name().
struct DebugArg {
  enum Type : uint8_t { kUint, kInt, kDouble, kBool, kString };
  uint64_t name_iid = 0;
  Type type = kUint;
  uint64_t u = 0;
  int64_t i = 0;
  double d = 0;
  std::string_view s;

  DebugArg() = default;
  static DebugArg Uint(uint64_t iid, uint64_t v) { return {iid, kUint, v, 0, 0, {}}; }
  static DebugArg Int(uint64_t iid, int64_t v) { return {iid, kInt, 0, v, 0, {}}; }
  static DebugArg Double(uint64_t iid, double v) { return {iid, kDouble, 0, 0, v, {}}; }
  static DebugArg Bool(uint64_t iid, bool v) { return {iid, kBool, v ? 1u : 0u, 0, 0, {}}; }
  static DebugArg String(uint64_t iid, std::string_view v) { return {iid, kString, 0, 0, 0, v}; }

 private:
  DebugArg(uint64_t iid, Type t, uint64_t uv, int64_t iv, double dv, std::string_view sv)
      : name_iid(iid), type(t), u(uv), i(iv), d(dv), s(sv) {}
};

// Flows an event takes part in (arrows in the UI): `ids` start or pass through
// it, `ends` end at it. Ids are the caller's, unique within the trace.
struct Flows {
  const uint64_t* ids = nullptr;
  size_t n = 0;
  const uint64_t* ends = nullptr;
  size_t nends = 0;
};

class PerfettoWriter {
 public:
  static constexpr uint32_t kSequenceId = 1;
  // The buffer is written out once it holds this much (whole packets only).
  static constexpr size_t kFlushBytes = size_t{1} << 20;

  PerfettoWriter();
  ~PerfettoWriter();  // closes an open file (errors are then lost: call close())
  PerfettoWriter(const PerfettoWriter&) = delete;
  PerfettoWriter& operator=(const PerfettoWriter&) = delete;

  // Creates `path` (a new file renamed over an earlier one at close(): see
  // common/safe_output.h's ReplacingFile) and writes the first packet: the ClockSnapshot
  // (BOOTTIME = REALTIME = snapshot_ns), which clears the sequence's
  // incremental state. Interned names and generation() start afresh.
  bool open(const std::string& path, uint64_t snapshot_ns, std::string* error);
  // Writes what is buffered and closes. False (with *error) when any write
  // since open() failed, or close(2) did.
  bool close(std::string* error);
  bool is_open() const { return fd_ >= 0; }
  // Size of the file so far, buffered bytes included.
  uint64_t bytes() const { return flushed_ + enc_.size(); }
  // Changes at every open(): per-file state kept by callers (which descriptors
  // were written, cached iids) is stale when it differs.
  uint32_t generation() const { return generation_; }
  uint64_t packets() const { return packets_; }

  // ---- track descriptors (uuids are the caller's; unique within the file)
  // A process track: ProcessDescriptor{pid, process_name = name}, also named `name`.
  void process_track(uint64_t uuid, int32_t pid, std::string_view name, int32_t sibling_rank);
  // A named track under `parent` (a process track: it joins that process's
  // group; another track: it nests under it). explicit_child_order: its own
  // children are ordered by their sibling_rank.
  void child_track(uint64_t uuid, uint64_t parent, std::string_view name, int32_t sibling_rank,
                   bool explicit_child_order);
  // A counter track under `parent`; unit_name and description may be empty.
  void counter_track(uint64_t uuid, uint64_t parent, std::string_view name,
                     std::string_view unit_name, std::string_view description);
  // The descriptor of the implicit root track (uuid 0) asking for processes to
  // be ordered by their sibling_rank (newer trace processors; others ignore it).
  void process_ordering_explicit();

  // ---- interning (per file): the iid of a name; a new one is emitted in the
  // next event packet's InternedData. iids start at 1.
  uint64_t event_name(std::string_view name);
  uint64_t annotation_name(std::string_view name);

  // ---- events (ts: trace-clock ns)
  void slice_begin(uint64_t ts, uint64_t track, uint64_t name_iid, const DebugArg* args,
                   size_t nargs, const Flows& flows = {});
  void slice_end(uint64_t ts, uint64_t track);
  void instant(uint64_t ts, uint64_t track, uint64_t name_iid, const DebugArg* args, size_t nargs);
  // An instant whose name is not interned (one-off names).
  void instant_named(uint64_t ts, uint64_t track, std::string_view name, const DebugArg* args,
                     size_t nargs, const Flows& flows = {});
  void counter_int(uint64_t ts, uint64_t track, int64_t v);
  void counter_double(uint64_t ts, uint64_t track, double v);

 private:
  void begin_packet(bool has_ts, uint64_t ts, uint32_t flags) {
    enc_.begin_nested(pf::kTracePacket);
    if (has_ts) enc_.add_varint(pf::kPacketTimestamp, ts);
    enc_.add_varint(pf::kPacketSequenceId, kSequenceId);
    if (flags) enc_.add_varint(pf::kPacketSequenceFlags, flags);
  }
  void end_packet() {
    enc_.end_nested();
    ++packets_;
    if (enc_.size() >= kFlushBytes) flush();
  }
  void interned_data() {  // the pending new names, if any
    if (pending_) write_interned_data();
  }
  // A packet of one TrackEvent of `type` on `track`, after the pending
  // interned names when the event refers to names by iid (`interned`).
  void begin_event(uint64_t ts, uint32_t type, uint64_t track, bool interned) {
    begin_packet(true, ts, interned ? pf::kSeqNeedsIncrementalState : 0);
    if (interned) interned_data();
    enc_.begin_nested(pf::kPacketTrackEvent);
    enc_.add_varint(pf::kTeType, type);
    enc_.add_varint(pf::kTeTrackUuid, track);
  }
  // A packet of one TrackDescriptor, of track `uuid`.
  void begin_descriptor(uint64_t uuid) {
    begin_packet(false, 0, 0);
    enc_.begin_nested(pf::kPacketTrackDescriptor);
    enc_.add_varint(pf::kTdUuid, uuid);
  }
  // Closes the event or descriptor, then its packet.
  void end_nested_packet() {
    enc_.end_nested();
    end_packet();
  }
  void write_interned_data();
  void debug_args(const DebugArg* args, size_t nargs);
  void flow_ids(const Flows& f);
  // An event's args and flows (none: nothing written), then its end.
  void finish_event(const DebugArg* args, size_t nargs, const Flows& flows);
  void flush();
  uint64_t intern(std::unordered_map<std::string, uint64_t>* map,
                  std::vector<std::pair<uint64_t, std::string>>* pending, std::string_view name);

  ProtoEncoder enc_;
  ReplacingFile file_;
  int fd_ = -1;  // file_'s
  std::string path_;
  uint64_t flushed_ = 0;
  uint64_t packets_ = 0;
  uint32_t generation_ = 0;
  bool failed_ = false;
  std::string error_;
  std::unordered_map<std::string, uint64_t> event_names_, annotation_names_;
  std::vector<std::pair<uint64_t, std::string>> pending_event_names_, pending_annotation_names_;
  bool pending_ = false;
};

}  // namespace fabtrace::report
