// Writing and reading the per-op timeline file ("oplog"); the layout is in
// oplog_format.h.
//
// JSON blocks (compact, one object each):
//   kMeta   {"format":"fabtrace-oplog","version":1,"host":"...","rank":"...","pid":123,
//            "op_names":["fi_send",...]}                  (op_names[kind] names OpEntry::kind)
//   kCalib  CalibrationJson:
//           {"clock":"tsc"|"clock_gettime","ns_per_tick":0.4,"tick0":...,"mono0_ns":...,
//            "real0_ns":...,"residual_ns":3.5,"pairs":1000}
//           mono_ns = mono0_ns + (ticks - tick0) * ns_per_tick; real0_ns is CLOCK_REALTIME
//           at mono0_ns (the wall anchor); residual_ns and pairs describe the fit.
//   kEnd    {"ops_written":...,"dropped":...,"filtered":...,"outside_window":...}
//           (outside_window: ops left out by the capture window; version 2)
//   kCapture {"spec":"...","signal":"..."}  (OplogCaptureSpec; version 2)
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/oplog_format.h"

namespace fabtrace {

namespace oplog {
constexpr const char* kFormatName = "fabtrace-oplog";  // kMeta "format"
// The writer splits write_ops() into blocks of at most this many entries.
constexpr size_t kMaxOpsPerBlock = 65536;
// The writer splits write_links() into blocks of at most this many entries.
constexpr size_t kMaxLinksPerBlock = 4096;
// The reader treats a block announcing a larger payload as corrupt (and any
// payload that would end past the end of the file, before allocating it).
constexpr uint32_t kMaxPayloadBytes = 256u << 20;
// JSON blocks (metadata, calibration, end record) are small.
constexpr uint32_t kMaxJsonBlockBytes = 1u << 20;
// The reader keeps at most this many links (the writer's table has 65536).
constexpr size_t kMaxReaderLinks = 1u << 20;
// The writer splits write_mark_names() into blocks of at most this many names.
constexpr size_t kMaxMarkNamesPerBlock = 4096;
// Longest mark name stored (longer ones are cut there).
constexpr size_t kMaxMarkNameBytes = 255;
// The reader keeps at most this many mark names.
constexpr size_t kMaxReaderMarkNames = 1u << 20;
}  // namespace oplog

// "mark", "begin", "end", "capture_on", "capture_off"; "?" for another value.
const char* mark_kind_name(uint8_t kind);

struct OplogMeta {
  std::string host, rank;
  long pid = 0;
  // The fabtrace that wrote the file (common/version.h): the writer puts its
  // own; read back ("" in files before 0.9.0).
  std::string fabtrace_version;
};

// The clock calibration as stored in the file: the one of common/clock.h.
using OplogCalib = Calibration;

struct OplogLink {
  uint32_t id = 0;
  std::string local, remote;  // at most limits::kMaxStringBytes each are stored
};

struct OplogMarkName {
  uint32_t id = 0;
  std::string name;  // at most oplog::kMaxMarkNameBytes are stored
};

// What the timeline was asked to capture (kCapture). Which spans it did
// capture are the kCaptureOn/kCaptureOff marks.
struct OplogCaptureSpec {
  std::string spec;    // FABTRACE_OPS_WINDOW as understood ("" = the whole run)
  std::string signal;  // the toggle signal ("SIGUSR2"), or why there is none
};

// Appends blocks to a new oplog file. Each block (header + payload) goes out in
// one writev(2) call, straight to the file (no user-space buffering), so a
// crash leaves at most the last block incomplete. Not thread-safe: one writer
// thread. Errors return false and log one line; after the first error every
// call returns false without logging again.
class OplogFileWriter {
 public:
  OplogFileWriter() = default;
  ~OplogFileWriter();
  OplogFileWriter(const OplogFileWriter&) = delete;
  OplogFileWriter& operator=(const OplogFileWriter&) = delete;

  // Creates the new file `path` (common/safe_output.h: never over an existing
  // file, never through a symlink), writes the file header and the kMeta block.
  bool open(const std::string& path, const OplogMeta& meta);
  bool write_calib(const OplogCalib& c);
  bool write_links(const std::vector<OplogLink>& links);  // n == 0: writes nothing
  // Blocks of at most kMaxOpsPerBlock entries; n == 0 writes nothing.
  bool write_ops(const oplog::OpEntry* ops, size_t n);
  // Version 2: the mark name dictionary, marks (OpEntry as in oplog_format.h),
  // and the capture window. n == 0 / an empty vector writes nothing.
  bool write_mark_names(const std::vector<OplogMarkName>& names);
  bool write_marks(const oplog::OpEntry* marks, size_t n);
  bool write_capture(const OplogCaptureSpec& w);
  bool write_end(uint64_t ops_written, uint64_t dropped, uint64_t filtered,
                 uint64_t outside_capture = 0);
  void close();
  bool is_open() const { return fd_ >= 0; }
  bool failed() const { return failed_; }  // a write failed (said once, in one line)
  uint64_t bytes_written() const { return bytes_; }

 private:
  bool write_entries(uint16_t type, const oplog::OpEntry* e, size_t n);  // kOps, kMarks
  bool write_block(uint16_t type, uint32_t count, const void* payload, size_t len,
                   const void* prefix = nullptr, size_t prefix_len = 0);
  bool fail(const char* what, int err);
  int fd_ = -1;
  bool failed_ = false;
  uint64_t bytes_ = 0;
  std::string path_;
};

struct OplogHeaderInfo {
  uint32_t version = 0;  // the file's format version
  OplogMeta meta;
  std::vector<std::string> op_names;  // index = OpEntry::kind
};

// Streams an oplog file. Memory is bounded by the largest block (plus the link
// dictionary), not by the number of ops.
class OplogReader {
 public:
  OplogReader() = default;
  ~OplogReader();
  OplogReader(const OplogReader&) = delete;
  OplogReader& operator=(const OplogReader&) = delete;

  // Opens `path` (a regular file only: a FIFO is refused, not waited on),
  // checks magic and version and reads the kMeta block. On failure returns
  // false and sets *error to one line naming the file.
  bool open(const std::string& path, std::string* error);

  // Walks every block from the first after kMeta. Calls on_ops for each kOps
  // block (the entries are valid during the call only); tracks kCalib (the
  // last one wins), kLinks (accumulated; a later entry replaces an earlier one
  // with the same id) and kEnd. Stops at EOF or at the first incomplete or
  // corrupt block (then truncated() is true and stop_reason() says what was
  // wrong there). Blocks are checked against common/input_limits.h: a payload
  // past the end of the file, a calibration out of range, a string too long
  // stop the walk like a corrupt block. Returns false only on a hard
  // error (a failing read(2)), with *error set. May be called again: each call
  // starts over from the first block and resets what it tracks, but for the
  // link and mark-name tables, which a file only adds to: a walk after a scan
  // has them whole from its first block, though the writer puts a table block
  // after the ops that use it (it writes them lazily).
  bool read_all(const std::function<void(const oplog::OpEntry*, size_t)>& on_ops,
                std::string* error);
  // The same, also calling on_marks for each kMarks block (version 2 files);
  // the mark names a block uses are in mark_names() by then.
  using EntriesFn = std::function<void(const oplog::OpEntry*, size_t)>;
  bool read_all(const EntriesFn& on_ops, const EntriesFn& on_marks, std::string* error);

  // A cheaper first pass: like read_all without on_ops, but kOps payloads are
  // skipped unread (their checksums are not verified; only their size is
  // checked against the file's), so it only costs reading the small blocks.
  // Used to find the last calibration and every link before streaming ops.
  bool scan(std::string* error);

  const OplogHeaderInfo& header() const { return header_; }
  const OplogCalib& calib() const { return calib_; }
  bool has_calib() const { return has_calib_; }
  const std::map<uint32_t, OplogLink>& links() const { return links_; }
  const std::map<uint32_t, std::string>& mark_names() const { return mark_names_; }
  // The mark's name, "" when the id is not in the dictionary.
  const std::string& mark_name(uint32_t id) const;
  bool has_capture() const { return has_capture_; }
  const OplogCaptureSpec& capture() const { return capture_; }
  // Marks in the whole kMarks blocks read by the last read_all/scan.
  uint64_t marks_read() const { return marks_read_; }
  bool truncated() const { return truncated_; }
  // Why the last walk stopped early ("" when it did not or the file just ends).
  const std::string& stop_reason() const { return stop_reason_; }
  // Ops in the whole kOps blocks read by the last read_all/scan.
  uint64_t ops_read() const { return ops_read_; }
  bool has_end() const { return has_end_; }
  uint64_t end_ops() const { return end_ops_; }
  uint64_t end_dropped() const { return end_dropped_; }
  uint64_t end_filtered() const { return end_filtered_; }
  uint64_t end_outside_capture() const { return end_outside_; }
  const std::string& path() const { return path_; }

 private:
  enum class ReadResult { kOk, kEof, kShort, kError };
  ReadResult read_at(uint64_t off, void* buf, size_t len, std::string* error);
  bool walk(const EntriesFn* on_ops, const EntriesFn* on_marks, bool skip_ops, std::string* error);
  void reset_tracking();
  bool stop(const std::string& why);
  bool file_size(uint64_t* size, std::string* error) const;

  int fd_ = -1;
  std::string path_;
  uint64_t data_start_ = 0;  // offset of the first block after kMeta
  OplogHeaderInfo header_;
  OplogCalib calib_;
  bool has_calib_ = false;
  std::map<uint32_t, OplogLink> links_;
  std::map<uint32_t, std::string> mark_names_;
  OplogCaptureSpec capture_;
  bool has_capture_ = false;
  uint64_t marks_read_ = 0;
  bool truncated_ = false;
  std::string stop_reason_;
  uint64_t ops_read_ = 0;
  bool has_end_ = false;
  uint64_t end_ops_ = 0, end_dropped_ = 0, end_filtered_ = 0, end_outside_ = 0;
  std::vector<uint64_t> buf_;  // payload buffer, 8-byte aligned for OpEntry
};

}  // namespace fabtrace
