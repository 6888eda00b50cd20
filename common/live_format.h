// The live snapshot: a small shared-memory file each traced process keeps
// current (preload/live.h writes it, common/live_read.h reads it for `fabtrace
// top` and `fabtrace metrics`). Defined once here: each record is one list
// macro, X(name, doc), shared by the writer, the readers and the JSON, text and
// metrics names (as Darshan defines its counters).
//
// The file, /dev/shm/fabtrace-live.u<uid>.p<pid> (FABTRACE_LIVE_DIR), 0600,
// created O_EXCL|O_NOFOLLOW by the process itself:
//
//   Head   written once at creation; `magic` last, so a reader that sees the
//          magic sees the rest of the head
//   seq    the seqlock's sequence (a cache line of its own): odd while the body
//          is being written
//   Body   the process counters, then link_cap link rows, then cq_cap CQ rows
//
// Every field is a uint64_t, strings included (NUL-padded bytes in whole
// words), so that the body is copied word by word on both sides.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace fabtrace {
namespace live {

constexpr uint64_t kMagic = 0x31455649'4C544621ULL;  // "!FTLIVE1" read little-endian
constexpr uint64_t kVersion = 1;
constexpr const char* kDefaultDir = "/dev/shm";
constexpr const char* kFilePrefix = "fabtrace-live.";

// The head: what the process is, written once.
#define FT_LIVE_HEAD(X)                                                          \
  X(magic, "kMagic, stored last")                                                \
  X(version, "kVersion")                                                         \
  X(link_cap, "link rows in the body")                                           \
  X(cq_cap, "CQ rows in the body")                                               \
  X(pid, "the process")                                                          \
  X(uid, "its effective user")                                                   \
  X(start_time, "its start in clock ticks after boot (/proc/PID/stat field 22)") \
  X(interval_ns, "how often the body is published")                              \
  X(start_mono_ns, "its first fabric activity, CLOCK_MONOTONIC")                 \
  X(start_real_ns, "the same on the wall clock (CLOCK_REALTIME)")

// The process's counters at the latest publish.
#define FT_LIVE_PROCESS(X)                                                            \
  X(published_mono_ns, "when this snapshot was taken, CLOCK_MONOTONIC")               \
  X(published_real_ns, "the same, CLOCK_REALTIME")                                    \
  X(interval_real_ns, "the time the _iv figures cover (since the previous snapshot)") \
  X(publishes, "snapshots published, this one included")                              \
  X(links, "link rows in use")                                                        \
  X(links_dropped, "(link, op) rows past link_cap: the least busy, left out")         \
  X(cqs, "CQ rows in use")                                                            \
  X(ops, "successful completions, every row (the dropped ones too)")                  \
  X(bytes, "their bytes")                                                             \
  X(errors, "ops completed in error")                                                 \
  X(eagain, "ops refused at issue with -FI_EAGAIN")                                   \
  X(untimed, "ops issued and not timed (no completion by design, as fi_inject)")

// One (local address, remote address, op) row: every size of that op summed.
// Latencies are issue to the poll that returned the completion.
#define FT_LIVE_LINK(X)                                                                       \
  X(op, "the op (OpKind, common/op_kinds.h)")                                                 \
  X(ops, "successful completions, whole run")                                                 \
  X(bytes, "their bytes")                                                                     \
  X(errors, "completed in error (cancelled included)")                                        \
  X(eagain, "refused at issue with -FI_EAGAIN")                                               \
  X(untimed,                                                                                  \
    "issued and not timed: no completion by design (fi_inject), or no free in-flight record") \
  X(untimed_bytes, "their bytes")                                                             \
  X(lat_sum_ns, "the completed ops' latencies, summed")                                       \
  X(p50_ns, "latency median, whole run")                                                      \
  X(p90_ns, "latency 90th percentile, whole run")                                             \
  X(p99_ns, "latency 99th percentile, whole run")                                             \
  X(max_ns, "longest latency, whole run")                                                     \
  X(ops_iv, "successful completions in the last interval")                                    \
  X(bytes_iv, "their bytes")                                                                  \
  X(errors_iv, "completed in error in the last interval")                                     \
  X(eagain_iv, "refused with -FI_EAGAIN in the last interval")                                \
  X(untimed_iv, "issued and not timed in the last interval")                                  \
  X(untimed_bytes_iv, "their bytes")                                                          \
  X(p50_iv_ns, "latency median over the last interval")                                       \
  X(p99_iv_ns, "latency 99th percentile over the last interval")                              \
  X(max_iv_ns, "longest latency in the last interval (its bucket's top)")

// One CQ, every thread that polled it.
#define FT_LIVE_CQ(X)                                                                   \
  X(id, "the CQ's number in the rank's report (CQ#n)")                                  \
  X(polls, "polls, whole run")                                                          \
  X(polls_iv, "polls in the last interval")                                             \
  X(max_gap_ns, "longest gap between two polls, whole run")                             \
  X(max_gap_iv_ns, "longest gap that ended in the last interval (exact from 10 us on)") \
  X(gaps_1ms, "gaps of 1 ms or more, whole run")                                        \
  X(last_poll_mono_ns, "the latest poll by any thread, CLOCK_MONOTONIC (0: never)")     \
  X(closed, "1 once the application closed it")

// Each record's indices, prefixed by its kind: kh_ head, kp_ process, kl_
// link, kq_ CQ (kl_ops is a link row's ops, kp_ops the process's).
#define FT_LIVE_ENUM_H(name, doc) kh_##name,
#define FT_LIVE_ENUM_P(name, doc) kp_##name,
#define FT_LIVE_ENUM_L(name, doc) kl_##name,
#define FT_LIVE_ENUM_Q(name, doc) kq_##name,
enum HeadField { FT_LIVE_HEAD(FT_LIVE_ENUM_H) kHeadFields };
enum ProcessField { FT_LIVE_PROCESS(FT_LIVE_ENUM_P) kProcessFields };
enum LinkField { FT_LIVE_LINK(FT_LIVE_ENUM_L) kLinkFields };
enum CqField { FT_LIVE_CQ(FT_LIVE_ENUM_Q) kCqFields };
#undef FT_LIVE_ENUM_H
#undef FT_LIVE_ENUM_P
#undef FT_LIVE_ENUM_L
#undef FT_LIVE_ENUM_Q

// The field names, in the lists' order (JSON keys, metric names).
extern const char* const kHeadNames[kHeadFields];
extern const char* const kProcessNames[kProcessFields];
extern const char* const kLinkNames[kLinkFields];
extern const char* const kCqNames[kCqFields];

// A string kept in whole words: at most kWords * 8 - 1 bytes and a NUL.
template <size_t kWords>
struct Text {
  uint64_t w[kWords];
  void set(const std::string& s) {
    char b[kWords * 8] = {};
    std::memcpy(b, s.data(), s.size() < sizeof(b) - 1 ? s.size() : sizeof(b) - 1);
    std::memcpy(w, b, sizeof(b));
  }
  // The bytes up to the first NUL (a reader's copy always has one: the last
  // byte is cleared before use).
  std::string get() const {
    char b[kWords * 8];
    std::memcpy(b, w, sizeof(b));
    b[sizeof(b) - 1] = '\0';
    return std::string(b);
  }
};

struct Head {
  uint64_t c[kHeadFields];
  Text<9> host;  // the node, as the report names it (output_token: 64 bytes at most)
  Text<9> rank;  // the rank, the same way ("NA" when none)
  Text<8> job;   // the launcher's job id ("" when none)
  Text<2> comm;  // the program's name (/proc/PID/comm)
};

struct LinkRow {
  uint64_t c[kLinkFields];
  Text<8> local;   // the local NIC address, as the rank's report writes it
  Text<8> remote;  // the peer's address
};

struct CqRow {
  uint64_t c[kCqFields];
};

// The bounds a reader accepts (a writer never exceeds them).
constexpr uint64_t kMaxLinkCap = 4096;
constexpr uint64_t kMaxCqCap = 256;
constexpr uint64_t kDefaultLinkCap = 256;
constexpr uint64_t kDefaultCqCap = 64;

// Where each part is, for caps (link_cap, cq_cap): byte offsets in the file.
struct Layout {
  uint64_t link_cap = 0, cq_cap = 0;
  static constexpr size_t kSeqOffset = (sizeof(Head) + 63) / 64 * 64;
  static constexpr size_t kBodyOffset = kSeqOffset + 64;
  size_t body_words() const {
    return kProcessFields + link_cap * (sizeof(LinkRow) / 8) + cq_cap * (sizeof(CqRow) / 8);
  }
  size_t file_size() const { return kBodyOffset + body_words() * 8; }
  // Word offsets inside the body.
  static constexpr size_t kLinksWord = kProcessFields;
  size_t cqs_word() const { return kLinksWord + link_cap * (sizeof(LinkRow) / 8); }
};
static_assert(sizeof(Head) % 8 == 0 && sizeof(LinkRow) % 8 == 0 && sizeof(CqRow) % 8 == 0,
              "whole words");

// "fabtrace-live.u1000.p4242".
std::string file_name(uid_t uid, pid_t pid);
// The inverse; false for any other name (nothing but digits in the numbers,
// none empty, no leading zero, within range).
bool parse_file_name(const std::string& name, uid_t* uid, pid_t* pid);

// A process's start time in clock ticks after boot (/proc/PID/stat field 22,
// read under `proc_root`); 0 when it cannot be read (the process is gone).
uint64_t process_start_time(pid_t pid, const std::string& proc_root = "/proc");

}  // namespace live
}  // namespace fabtrace
