#include "userspace/report/otf2/otf2_export.h"

#include "common/safe_output.h"

#if FABTRACE_HAVE_OTF2

#include <otf2/otf2.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <queue>
#include <unordered_map>

#include "common/counter_csv.h"
#include "common/op_kinds.h"
#include "common/oplog_file.h"
#include "common/report_writer.h"
#include "common/version.h"
#include "userspace/report/job/identity.h"

namespace fabtrace::report {

namespace {

// Ops held per rank to put a rank's oplog (each thread's ops in completion
// order) into start order before lanes are assigned.
constexpr size_t kReorderOps = 65536;
// Most members of one metric class (OTF2 counts them in a byte).
constexpr size_t kMaxMetricMembers = 255;

OTF2_FlushType pre_flush(void*, OTF2_FileType, OTF2_LocationRef, void*, bool) { return OTF2_FLUSH; }
OTF2_TimeStamp post_flush(void*, OTF2_FileType, OTF2_LocationRef) { return 0; }
OTF2_FlushCallbacks kFlush = {pre_flush, post_flush};

struct Location {
  std::string name;
  OTF2_LocationType type = OTF2_LOCATION_TYPE_CPU_THREAD;
  uint32_t group = 0;
  uint64_t events = 0;
};

struct Op {
  int64_t start, end;
  uint32_t tid;
  uint8_t kind;
};
struct LaterStart {
  bool operator()(const Op& a, const Op& b) const { return a.start > b.start; }
};

class Exporter {
 public:
  Exporter(const Job& job, Otf2Stats* stats) : job_(job), st_(stats) {}
  ~Exporter() {
    if (archive_) OTF2_Archive_Close(archive_);
  }
  bool run(const std::string& dir, std::string* error);

 private:
  bool set_properties();
  bool check(OTF2_ErrorCode rc, const char* what) {
    if (rc == OTF2_SUCCESS) return true;
    if (error_.empty()) error_ = std::string(what) + ": " + OTF2_Error_GetDescription(rc);
    return false;
  }
  uint32_t str(const std::string& s) {
    const auto it = strings_.find(s);
    if (it != strings_.end()) return it->second;
    const uint32_t id = static_cast<uint32_t>(string_list_.size());
    strings_.emplace(s, id);
    string_list_.push_back(s);
    return id;
  }
  uint32_t region(const std::string& name, OTF2_RegionRole role) {
    const auto it = region_ids_.find(name);
    if (it != region_ids_.end()) return it->second;
    const uint32_t id = static_cast<uint32_t>(regions_.size());
    region_ids_.emplace(name, id);
    regions_.emplace_back(name, role);
    return id;
  }
  uint64_t location(const std::string& name, uint32_t group, OTF2_LocationType type) {
    locations_.push_back(Location{name, type, group, 0});
    ++st_->locations;
    return locations_.size() - 1;
  }
  OTF2_EvtWriter* writer(uint64_t loc) {
    auto it = writers_.find(loc);
    if (it != writers_.end()) return it->second;
    OTF2_EvtWriter* w = OTF2_Archive_GetEvtWriter(archive_, loc);
    if (!w && error_.empty()) error_ = "cannot open an OTF2 event writer";
    writers_[loc] = w;
    return w;
  }
  void close_writers() {
    for (auto& kv : writers_)
      if (kv.second) check(OTF2_Archive_CloseEvtWriter(archive_, kv.second), "closing events");
    writers_.clear();
  }
  uint64_t ts(int64_t t) {
    const uint64_t v = t < 0 ? 0 : static_cast<uint64_t>(t);
    first_ = std::min(first_, v);
    last_ = std::max(last_, v);
    return v;
  }
  bool event(uint64_t loc, bool enter, uint64_t t, uint32_t reg) {
    OTF2_EvtWriter* w = writer(loc);
    if (!w) return false;
    ++locations_[loc].events;
    return check(
        enter ? OTF2_EvtWriter_Enter(w, nullptr, t, reg) : OTF2_EvtWriter_Leave(w, nullptr, t, reg),
        "writing an event");
  }

  bool write_rank(const Rank& r, uint32_t group, int64_t shift);
  bool write_messages(uint32_t rank, uint64_t loc, int64_t shift);
  bool write_counters(const Rank& r, uint32_t group, int64_t shift);
  bool write_defs();

  const Job& job_;
  Otf2Stats* st_;
  std::string error_;
  OTF2_Archive* archive_ = nullptr;
  std::unordered_map<std::string, uint32_t> strings_;
  std::vector<std::string> string_list_;
  std::unordered_map<std::string, uint32_t> region_ids_;
  std::vector<std::pair<std::string, OTF2_RegionRole>> regions_;  // by id
  std::vector<Location> locations_;
  std::unordered_map<uint64_t, OTF2_EvtWriter*> writers_;
  struct Group {
    std::string name;
    uint32_t node;
  };
  std::vector<Group> groups_;
  std::vector<std::string> hosts_;
  struct Member {
    std::string name;
    bool cumulative;
  };
  std::vector<Member> members_;
  std::vector<std::vector<uint32_t>> classes_;  // member ids per metric class
  // Matched messages (Job::waits.messages) by rank, and each rank's location
  // "messages" that holds their send and receive events (none without).
  std::vector<std::vector<uint32_t>> messages_by_rank_;
  std::vector<uint64_t> message_locs_;
  uint64_t first_ = std::numeric_limits<uint64_t>::max(), last_ = 0;
  int64_t ref_offset_ = 0;  // wall - mono of the first rank: wall = ts + ref_offset_
};

bool Exporter::write_rank(const Rank& r, uint32_t group, int64_t shift) {
  OplogReader rd;
  std::string err;
  if (!rd.open(r.oplog_path, &err) || !rd.scan(&err)) {
    st_->warnings.push_back("per-op timeline skipped: " + err);
    return true;
  }
  const OplogCalib cal = rd.has_calib() ? rd.calib() : OplogCalib();
  // A region per op kind, defined when first used (the file's own names:
  // it may know kinds this build does not).
  std::vector<uint32_t> kind_region(256, UINT32_MAX);
  const auto op_region = [&](uint8_t k) {
    if (kind_region[k] == UINT32_MAX) {
      const auto& names = rd.header().op_names;
      std::string n = k < names.size() ? names[k] : "";
      if (n.empty()) n = op_name(static_cast<OpKind>(k));
      if (n.empty() || n == "?") n = "op kind " + std::to_string(k);
      kind_region[k] = region(n, OTF2_REGION_ROLE_POINT2POINT);
    }
    return kind_region[k];
  };
  // Per thread: its lanes' locations and when each lane is free again.
  struct Lanes {
    std::vector<uint64_t> loc;
    std::vector<int64_t> end;
  };
  std::unordered_map<uint32_t, Lanes> lanes;
  struct MarkLoc {
    uint64_t loc = 0;
    std::vector<uint32_t> open;  // regions of the open phases
    uint64_t last = 0;
  };
  std::unordered_map<uint32_t, MarkLoc> marks;
  bool ok = true;

  const auto place = [&](const Op& op) {
    Lanes& l = lanes[op.tid];
    size_t lane = l.loc.size();
    for (size_t i = 0; i < l.loc.size(); ++i)
      if (l.end[i] <= op.start) {
        lane = i;
        break;
      }
    if (lane == l.loc.size()) {
      if (lane >= kOtf2MaxLanes) {
        ++st_->overlap_dropped;
        return;
      }
      const std::string name = "tid " + std::to_string(op.tid) +
                               (lane ? " lane " + std::to_string(lane + 1) : std::string());
      l.loc.push_back(location(name, group, OTF2_LOCATION_TYPE_CPU_THREAD));
      l.end.push_back(op.start);
      ++(lane ? st_->lane_locations : st_->thread_locations);
    }
    l.end[lane] = op.end;
    const uint32_t reg = op_region(op.kind);
    ok = ok && event(l.loc[lane], true, ts(op.start), reg) &&
         event(l.loc[lane], false, ts(op.end), reg);
    ++st_->enters;
    ++st_->leaves;
  };
  std::priority_queue<Op, std::vector<Op>, LaterStart> reorder;

  const auto on_mark = [&](const oplog::OpEntry& m) {
    int64_t t = 0;
    if (!cal.mono_ns_checked(m.start_ticks, &t)) {
      ++st_->bad_times;
      return;
    }
    const bool capture = m.kind == oplog::kCaptureOn || m.kind == oplog::kCaptureOff;
    auto it = marks.find(capture ? 0 : m.tid);
    if (it == marks.end()) {
      MarkLoc ml;
      ml.loc =
          location(capture ? std::string("capture") : "tid " + std::to_string(m.tid) + " marks",
                   group, OTF2_LOCATION_TYPE_CPU_THREAD);
      it = marks.emplace(capture ? 0 : m.tid, ml).first;
    }
    MarkLoc& ml = it->second;
    const uint64_t at = std::max(ts(t + shift), ml.last);  // each location in time order
    ml.last = at;
    const std::string& name = rd.mark_name(m.link_id);
    uint32_t reg;
    switch (m.kind) {
      case oplog::kMarkInstant:
      case oplog::kCaptureOn:
      case oplog::kCaptureOff:
        reg = m.kind == oplog::kMarkInstant
                  ? region(name.empty() ? "mark" : name, OTF2_REGION_ROLE_ARTIFICIAL)
                  : region(m.kind == oplog::kCaptureOn ? "timeline capture on"
                                                       : "timeline capture off",
                           OTF2_REGION_ROLE_ARTIFICIAL);
        ok = ok && event(ml.loc, true, at, reg) && event(ml.loc, false, at, reg);
        st_->mark_events += 2;
        break;
      case oplog::kPhaseBegin:
        reg = region(name.empty() ? "phase" : name, OTF2_REGION_ROLE_CODE);
        ml.open.push_back(reg);
        ok = ok && event(ml.loc, true, at, reg);
        ++st_->mark_events;
        break;
      case oplog::kPhaseEnd:
        if (ml.open.empty()) break;  // an end without its begin
        ok = ok && event(ml.loc, false, at, ml.open.back());
        ml.open.pop_back();
        ++st_->mark_events;
        break;
      default:
        break;
    }
  };

  const bool read_ok = rd.read_all(
      [&](const oplog::OpEntry* e, size_t n) {
        for (size_t i = 0; i < n && ok; ++i) {
          Op op;
          if (!cal.mono_ns_checked(e[i].start_ticks, &op.start) ||
              !cal.mono_ns_checked(e[i].end_ticks, &op.end)) {
            ++st_->bad_times;
            continue;
          }
          op.start += shift;
          op.end = std::max(op.end + shift, op.start);
          op.tid = e[i].tid;
          op.kind = e[i].kind;
          if (reorder.size() >= kReorderOps) {
            place(reorder.top());
            reorder.pop();
          }
          reorder.push(op);
        }
      },
      [&](const oplog::OpEntry* e, size_t n) {
        for (size_t i = 0; i < n && ok; ++i) on_mark(e[i]);
      },
      &err);
  while (ok && !reorder.empty()) {
    place(reorder.top());
    reorder.pop();
  }
  // Phases still open when the file ends close at the location's last time.
  for (auto& kv : marks)
    while (ok && !kv.second.open.empty()) {
      ok = event(kv.second.loc, false, kv.second.last, kv.second.open.back());
      kv.second.open.pop_back();
      ++st_->mark_events;
    }
  if (!read_ok) st_->warnings.push_back("per-op timeline cut short: " + err);
  if (rd.truncated()) st_->warnings.push_back(r.oplog_path + " is cut short");
  return ok;
}

// The rank's matched messages as MPI point-to-point events on its location
// "messages" (communicator 0: every rank of the job, by its index): a send at
// its issue, a receive at its completion, each with the size, tag 0 (the
// timelines hold no tags); in time order.
bool Exporter::write_messages(uint32_t rank, uint64_t loc, int64_t shift) {
  const std::vector<Message>& msgs = job_.waits.messages;
  struct Ev {
    int64_t t;
    bool send;
    uint32_t peer;
    uint64_t bytes;
  };
  std::vector<Ev> ev;
  for (uint32_t i : messages_by_rank_[rank]) {
    const Message& m = msgs[i];
    if (m.send_rank == rank) ev.push_back({m.send_start + shift, true, m.recv_rank, m.bytes});
    if (m.recv_rank == rank) ev.push_back({m.recv_end + shift, false, m.send_rank, m.bytes});
  }
  std::stable_sort(ev.begin(), ev.end(), [](const Ev& a, const Ev& b) { return a.t < b.t; });
  OTF2_EvtWriter* w = ev.empty() ? nullptr : writer(loc);
  if (!ev.empty() && !w) return false;
  for (const Ev& e : ev) {
    ++locations_[loc].events;
    ++(e.send ? st_->message_sends : st_->message_recvs);
    if (!check(e.send ? OTF2_EvtWriter_MpiSend(w, nullptr, ts(e.t), e.peer, 0, 0, e.bytes)
                      : OTF2_EvtWriter_MpiRecv(w, nullptr, ts(e.t), e.peer, 0, 0, e.bytes),
               "writing a message event"))
      return false;
  }
  return true;
}

bool Exporter::write_counters(const Rank& r, uint32_t group, int64_t shift) {
  CounterSeries cs;
  std::string err;
  if (!read_counter_csv(r.counters_path, &cs, &err)) {
    st_->warnings.push_back("counters skipped: " + err);
    return true;
  }
  std::vector<size_t> cols;
  std::vector<uint32_t> ids;
  const std::string tw = kTelemetryWallColumn;
  for (size_t c = 2; c < cs.columns.size(); ++c) {
    const std::string& name = cs.columns[c];
    if (name.size() >= tw.size() && name.compare(name.size() - tw.size(), tw.size(), tw) == 0)
      continue;  // the stamp of the sample, not a counter
    const bool gauge = name.find("in_use") != std::string::npos ||
                       name.find("max_") != std::string::npos ||
                       name.find("status") != std::string::npos;
    cols.push_back(c);
    ids.push_back(static_cast<uint32_t>(members_.size()));
    members_.push_back(Member{name, !gauge});
  }
  if (cols.empty() || cs.rows.empty()) return true;
  // Classes of at most kMaxMetricMembers members, all on one metric location.
  const uint64_t loc = location("NIC counters", group, OTF2_LOCATION_TYPE_METRIC);
  std::vector<OTF2_Type> types(kMaxMetricMembers, OTF2_TYPE_UINT64);
  std::vector<OTF2_MetricValue> values(kMaxMetricMembers);
  // mono -> aligned: the rank's offset, or the file's own when the rank has no anchor.
  int64_t row_shift = shift;
  if (r.start_wall_ns() == 0)
    row_shift =
        static_cast<int64_t>(cs.rows[0][1]) - static_cast<int64_t>(cs.rows[0][0]) - ref_offset_;
  for (size_t first = 0; first < cols.size(); first += kMaxMetricMembers) {
    const size_t n = std::min(kMaxMetricMembers, cols.size() - first);
    const uint32_t cls = static_cast<uint32_t>(classes_.size());
    classes_.emplace_back(ids.begin() + static_cast<std::ptrdiff_t>(first),
                          ids.begin() + static_cast<std::ptrdiff_t>(first + n));
    OTF2_EvtWriter* w = writer(loc);
    if (!w) return false;
    for (const std::vector<uint64_t>& row : cs.rows) {
      for (size_t i = 0; i < n; ++i) values[i].unsigned_int = row[cols[first + i]];
      ++locations_[loc].events;
      ++st_->metric_events;
      if (!check(OTF2_EvtWriter_Metric(w, nullptr, ts(static_cast<int64_t>(row[0]) + row_shift),
                                       cls, static_cast<uint8_t>(n), types.data(), values.data()),
                 "writing a metric"))
        return false;
    }
  }
  return true;
}

bool Exporter::write_defs() {
  OTF2_GlobalDefWriter* g = OTF2_Archive_GetGlobalDefWriter(archive_);
  if (!g) return check(OTF2_ERROR_INVALID, "opening the global definitions");
  if (first_ > last_) first_ = last_ = 0;
  const uint64_t wall_at_first = static_cast<uint64_t>(static_cast<int64_t>(first_) + ref_offset_);
  if (!check(OTF2_GlobalDefWriter_WriteClockProperties(g, 1000000000ull, first_, last_ - first_ + 1,
                                                       wall_at_first),
             "clock properties"))
    return false;
  // Names first (they are referred to by everything below).
  const uint32_t empty = str(""), job = str("job"), machine = str("machine"), node = str("node");
  for (const std::string& h : hosts_) str(h);
  for (const Group& gr : groups_) str(gr.name);
  if (!message_locs_.empty()) str("job ranks (locations)"), str("job ranks"), str("job");
  for (const Location& l : locations_) str(l.name);
  for (const auto& rg : regions_) str(rg.first);
  for (const Member& m : members_) str(m.name);
  const uint32_t per_s = str("#"), counter_desc = str("Cassini counter (fabtrace_nic CSV)");
  for (size_t i = 0; i < string_list_.size(); ++i)
    if (!check(
            OTF2_GlobalDefWriter_WriteString(g, static_cast<uint32_t>(i), string_list_[i].c_str()),
            "a string"))
      return false;
  bool ok = check(
      OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, job, machine, OTF2_UNDEFINED_SYSTEM_TREE_NODE),
      "the system tree");
  for (size_t h = 0; ok && h < hosts_.size(); ++h)
    ok = check(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, static_cast<uint32_t>(h + 1),
                                                        str(hosts_[h]), node, 0),
               "a node");
  for (size_t i = 0; ok && i < groups_.size(); ++i)
    ok = check(
        OTF2_GlobalDefWriter_WriteLocationGroup(g, static_cast<uint32_t>(i), str(groups_[i].name),
                                                OTF2_LOCATION_GROUP_TYPE_PROCESS,
                                                groups_[i].node + 1, OTF2_UNDEFINED_LOCATION_GROUP),
        "a location group");
  for (size_t i = 0; ok && i < regions_.size(); ++i)
    ok = check(
        OTF2_GlobalDefWriter_WriteRegion(g, static_cast<uint32_t>(i), str(regions_[i].first),
                                         str(regions_[i].first), empty, regions_[i].second,
                                         OTF2_PARADIGM_USER, OTF2_REGION_FLAG_NONE, empty, 0, 0),
        "a region");
  for (size_t i = 0; ok && i < locations_.size(); ++i)
    ok = check(OTF2_GlobalDefWriter_WriteLocation(g, i, str(locations_[i].name), locations_[i].type,
                                                  locations_[i].events, locations_[i].group),
               "a location");
  for (size_t i = 0; ok && i < members_.size(); ++i)
    ok = check(
        OTF2_GlobalDefWriter_WriteMetricMember(
            g, static_cast<uint32_t>(i), str(members_[i].name), counter_desc,
            OTF2_METRIC_TYPE_OTHER,
            members_[i].cumulative ? OTF2_METRIC_ACCUMULATED_START : OTF2_METRIC_ABSOLUTE_POINT,
            OTF2_TYPE_UINT64, OTF2_BASE_DECIMAL, 0, per_s),
        "a metric member");
  if (!message_locs_.empty()) {
    // Communicator 0, every rank of the job: its rank i is location
    // message_locs_[i] (group 0), its members the ranks 0 .. n-1 (group 1).
    std::vector<uint64_t> ranks(message_locs_.size());
    for (size_t i = 0; i < ranks.size(); ++i) ranks[i] = i;
    ok = ok &&
         check(OTF2_GlobalDefWriter_WriteGroup(
                   g, 0, str("job ranks (locations)"), OTF2_GROUP_TYPE_COMM_LOCATIONS,
                   OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
                   static_cast<uint32_t>(message_locs_.size()), message_locs_.data()),
               "the ranks' locations") &&
         check(OTF2_GlobalDefWriter_WriteGroup(g, 1, str("job ranks"), OTF2_GROUP_TYPE_COMM_GROUP,
                                               OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
                                               static_cast<uint32_t>(ranks.size()), ranks.data()),
               "the ranks' group") &&
         check(OTF2_GlobalDefWriter_WriteComm(g, 0, str("job"), 1, OTF2_UNDEFINED_COMM,
                                              OTF2_COMM_FLAG_NONE),
               "the job's communicator");
  }
  for (size_t i = 0; ok && i < classes_.size(); ++i)
    ok = check(OTF2_GlobalDefWriter_WriteMetricClass(
                   g, static_cast<uint32_t>(i), static_cast<uint8_t>(classes_[i].size()),
                   classes_[i].data(), OTF2_METRIC_SYNCHRONOUS_STRICT, OTF2_RECORDER_KIND_ABSTRACT),
               "a metric class");
  return ok && check(OTF2_Archive_CloseGlobalDefWriter(archive_, g), "closing the definitions");
}

// The archive's properties (in its anchor file, trace.otf2; otf2-print -A):
// the fabtrace that wrote it and which job it is (job/identity.h).
bool Exporter::set_properties() {
  const JobIdentity id = job_identity(job_);
  const size_t n = job_.ranks.size();
  std::vector<std::pair<const char*, std::string>> props = {
      {"FABTRACE::VERSION", version()},
      {"FABTRACE::JOB", tally_text(id.jobs, n)},
      {"FABTRACE::COMMAND", tally_text(id.commands, n, 2)},
      {"FABTRACE::LIBFABRIC", tally_text(id.libfabrics, n)},
      {"FABTRACE::PROVIDERS", tally_text(id.providers, n)},
      {"FABTRACE::RANK_VERSIONS", versions_note(id, n)}};
  if (id.first_start_wall_ns)
    props.emplace_back("FABTRACE::STARTED", utc_time_text(id.first_start_wall_ns));
  for (const auto& p : props)
    if (!p.second.empty() &&
        !check(OTF2_Archive_SetProperty(archive_, p.first, p.second.c_str(), false), p.first))
      return false;
  return true;
}

bool Exporter::run(const std::string& dir, std::string* error) {
  archive_ = OTF2_Archive_Open(dir.c_str(), "trace", OTF2_FILEMODE_WRITE, 256 * 1024,
                               4 * 1024 * 1024, OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
  if (!archive_) {
    *error = "cannot create the OTF2 archive in " + dir;
    return false;
  }
  bool ok =
      check(OTF2_Archive_SetFlushCallbacks(archive_, &kFlush, nullptr), "flush callbacks") &&
      check(OTF2_Archive_SetSerialCollectiveCallbacks(archive_), "collective callbacks") &&
      check(
          OTF2_Archive_SetCreator(archive_, (std::string("fabtrace report ") + version()).c_str()),
          "creator") &&
      set_properties() && check(OTF2_Archive_OpenEvtFiles(archive_), "opening the event files");
  // The first rank with a wall anchor sets the clock: its monotonic ns as they are.
  for (const Rank& r : job_.ranks)
    if (r.start_wall_ns()) {
      ref_offset_ = r.wall_offset_ns();
      break;
    }
  if (!job_.waits.messages.empty()) {
    messages_by_rank_.resize(job_.ranks.size());
    const std::vector<Message>& msgs = job_.waits.messages;
    for (uint32_t i = 0; i < msgs.size(); ++i) {
      if (msgs[i].send_rank >= job_.ranks.size() || msgs[i].recv_rank >= job_.ranks.size())
        continue;
      messages_by_rank_[msgs[i].send_rank].push_back(i);
      if (msgs[i].recv_rank != msgs[i].send_rank) messages_by_rank_[msgs[i].recv_rank].push_back(i);
    }
  }
  for (const Rank& r : job_.ranks) {
    if (!ok) break;
    auto h = std::find(hosts_.begin(), hosts_.end(), r.host());
    if (h == hosts_.end()) h = hosts_.insert(hosts_.end(), r.host());
    const uint32_t group = static_cast<uint32_t>(groups_.size());
    groups_.push_back(Group{"rank " + (r.rank().empty() ? std::string("NA") : r.rank()) + " pid " +
                                std::to_string(r.pid()),
                            static_cast<uint32_t>(h - hosts_.begin())});
    ++st_->ranks;
    const int64_t shift = r.start_wall_ns() ? r.wall_offset_ns() - ref_offset_ : 0;
    if (!messages_by_rank_.empty()) {
      message_locs_.push_back(location("messages", group, OTF2_LOCATION_TYPE_CPU_THREAD));
      ok = write_messages(group, message_locs_.back(), shift);
    }
    if (ok && !r.oplog_path.empty()) ok = write_rank(r, group, shift);
    if (ok && !r.counters_path.empty()) ok = write_counters(r, group, shift);
    close_writers();  // a rank's writers are done: their buffers go
  }
  ok = ok && error_.empty() && check(OTF2_Archive_CloseEvtFiles(archive_), "closing the events");
  // Per-location definition files (empty: everything is global), then the global ones.
  ok = ok && check(OTF2_Archive_OpenDefFiles(archive_), "opening the definition files");
  for (size_t i = 0; ok && i < locations_.size(); ++i) {
    OTF2_DefWriter* d = OTF2_Archive_GetDefWriter(archive_, i);
    ok = d && check(OTF2_Archive_CloseDefWriter(archive_, d), "a location's definitions");
  }
  ok = ok && check(OTF2_Archive_CloseDefFiles(archive_), "closing the definition files");
  ok = ok && write_defs();
  const OTF2_ErrorCode rc = OTF2_Archive_Close(archive_);
  archive_ = nullptr;
  ok = ok && check(rc, "closing the archive");
  if (!ok) *error = error_.empty() ? "writing the OTF2 archive failed" : error_;
  return ok;
}

}  // namespace

bool otf2_built() { return true; }

bool write_otf2(const Job& job, const std::string& out_dir, std::string* archive, Otf2Stats* stats,
                std::string* error) {
  Otf2Stats local;
  if (!stats) stats = &local;
  *stats = Otf2Stats();
  const std::string dir = out_dir + "/otf2";
  // OTF2 refuses an archive that exists: a fresh one each time (the output
  // directory is the report's own; a symlink in it is removed, not followed).
  const std::string anchor = dir + "/trace.otf2";
  // Through the output directory's descriptor when it is held (safe_output.h):
  // OTF2 takes paths, and a path swapped meanwhile must lead nowhere else.
  const std::string real = held_path(dir);
  std::error_code ec;
  std::filesystem::remove_all(real, ec);
  if (ec) {
    *error = "cannot remove the earlier " + dir + ": " + ec.message();
    return false;
  }
  Exporter x(job, stats);
  if (!x.run(real, error)) return false;
  if (archive) *archive = anchor;
  return true;
}

}  // namespace fabtrace::report

#else  // no OTF2 in this build

namespace fabtrace::report {

bool otf2_built() { return false; }

bool write_otf2(const Job&, const std::string&, std::string*, Otf2Stats*, std::string* error) {
  *error =
      "this build has no OTF2 (libopen-trace-format2-dev was not found when it was configured)";
  return false;
}

}  // namespace fabtrace::report

#endif
