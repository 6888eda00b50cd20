// The per-op timeline file ("oplog"): every selected op of one process, with
// start and end on one clock. Written by the preload's background writer,
// read by `fabtrace export ops` and `fabtrace report`.
//
// Layout: a 16-byte file header, then blocks. Each block is a 24-byte header
// followed by its payload; the reader stops at the first block that is
// incomplete or fails its checksum, so a file cut short by a crash reads up to
// its last whole block. All integers are little-endian.
//
//   FileHeader  magic "FTOPLOG\0", version, header size
//   kMeta       JSON: format, version, host, rank, pid, op kind names (index = kind)
//   kCalib      JSON: the clock calibration (see CalibrationJson in oplog_file.h);
//               written first before any ops and again whenever it is refreshed;
//               a reader uses the last one it saw
//   kLinks      link dictionary entries: u32 id, u16 local_len, u16 remote_len,
//               then the two strings (no terminators), repeated `count` times
//   kOps        `count` OpEntry records
//   kEnd        JSON: totals (ops written, dropped, ...), written at a clean exit
// Version 2 adds (a version 1 file has none of them and still reads):
//   kMarkNames  mark name dictionary: u32 id, u16 len, then the name (no
//               terminator), repeated `count` times; written before any
//               kMarks block that uses the ids
//   kMarks      `count` mark records, each an OpEntry (see "Marks" below)
//   kCapture    JSON: what the timeline was asked to capture (see
//               oplog_file.h); written once, after the first kCalib
#pragma once

#include <cstdint>

namespace fabtrace {
namespace oplog {

constexpr char kMagic[8] = {'F', 'T', 'O', 'P', 'L', 'O', 'G', '\0'};
constexpr uint32_t kVersion = 2;
// The oldest version this build still reads.
constexpr uint32_t kMinVersion = 1;
constexpr uint32_t kBlockMagic = 0x4B4C4246;  // "FBLK"

struct FileHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_bytes;  // sizeof(FileHeader): where the first block starts
};
static_assert(sizeof(FileHeader) == 16, "layout");

enum BlockType : uint16_t {
  kMeta = 1,
  kCalib = 2,
  kLinks = 3,
  kOps = 4,
  kEnd = 5,
  kMarkNames = 6,
  kMarks = 7,
  kCapture = 8,
};

struct BlockHeader {
  uint32_t magic;  // kBlockMagic
  uint16_t type;   // BlockType
  uint16_t reserved;
  uint32_t payload_bytes;  // bytes after this header
  uint32_t count;          // entries in the payload (ops, links), 0 for JSON blocks
  uint32_t crc32;          // CRC-32 (IEEE) of the payload
  uint32_t reserved2;
};
static_assert(sizeof(BlockHeader) == 24, "layout");

// One completed op. Times are raw clock ticks; the file's calibration maps
// them onto CLOCK_MONOTONIC nanoseconds.
struct OpEntry {
  uint64_t start_ticks;
  uint64_t end_ticks;
  uint64_t bytes;
  uint32_t link_id;  // index into the link dictionary
  uint32_t tid;      // issuing thread (Linux tid)
  uint8_t kind;      // OpKind
  uint8_t error;     // 1: completed in error
  uint16_t flags;    // kOp* bits (always 0 in files of earlier fabtrace versions)
  uint32_t reserved2;
};
// `bytes` is the posted size of a receive whose completion carried no length.
constexpr uint16_t kOpSizeUnknown = 1;
static_assert(sizeof(OpEntry) == 40, "layout");
// In a thread's buffer of the preload, an entry that is a mark, not an op: the
// writer puts it in a kMarks block instead (files never hold this bit).
constexpr uint16_t kOpIsMark = 0x8000;

// Marks: what the application said (fabtrace_mark/_begin/_end of
// include/fabtrace.h) and when the timeline's capture went on or off, in
// kMarks blocks, one OpEntry each:
//   start_ticks = end_ticks  the time
//   link_id                  kMarkInstant, kPhaseBegin: the name's id in the
//                            mark name dictionary; otherwise kNoMarkName
//   tid                      the thread that marked (0 for capture records)
//   kind                     MarkKind
//   bytes, error, flags      0
enum MarkKind : uint8_t {
  kMarkInstant = 1,  // fabtrace_mark(name)
  kPhaseBegin = 2,   // fabtrace_begin(name)
  kPhaseEnd = 3,     // fabtrace_end(): closes the thread's innermost open phase
  kCaptureOn = 4,    // the timeline records ops from here (window start, signal, mark)
  kCaptureOff = 5,   // ... and no longer from here
};
constexpr uint32_t kNoMarkName = UINT32_MAX;

}  // namespace oplog
}  // namespace fabtrace
