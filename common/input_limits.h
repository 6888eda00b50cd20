// The bounds every reader of fabtrace's own files applies to what it reads.
// Those files sit in shared job directories where anyone with write access
// may have placed or altered one, so a reader trusts no size, depth, string
// or number in them: each is checked here before it is used, and a file (or
// field) outside these bounds is skipped with one message, never allowed to
// exhaust memory, overflow the stack or reach undefined arithmetic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fabtrace {

namespace limits {
// Largest report JSON read: about 250,000 link rows (a real rank has a few
// thousand); parsed, a JSON document takes up to about 20 times its size.
constexpr uint64_t kMaxReportBytes = 64ull << 20;
// The counter CSV: the largest file read, and what is kept of it (the default
// FABTRACE_NIC_MAX_MB=256 holds 2^25 values; a row costs its own allocation).
constexpr uint64_t kMaxCounterCsvBytes = 512ull << 20;
constexpr uint64_t kMaxCounterValues = 1ull << 25;
constexpr uint64_t kMaxCounterRows = 1ull << 22;
constexpr size_t kMaxCounterColumns = 1 << 16;
constexpr size_t kMaxCounterDevices = 1024;
// Nesting depth of a JSON document: ours nest 5 deep.
constexpr int kMaxJsonDepth = 64;
// A host, rank, provider, address or label: longer is not something fabtrace wrote.
constexpr size_t kMaxStringBytes = 4096;
// A time in ns (monotonic or wall): 2^62 ns is year 2116 on the wall clock.
// Below 2^62, a sum or difference of two times fits in an int64.
constexpr uint64_t kMaxTimeNs = (1ull << 62) - 1;
// A count of ops, polls, samples or bytes (sums of counts saturate: sat_add).
constexpr uint64_t kMaxCount = 1ull << 62;
// A duration in seconds (about 31 years).
constexpr double kMaxSeconds = 1e9;
// A clock calibration's slope: 1 ns per tick is clock_gettime, TSCs run at
// 0.1..10 GHz; anything outside [1e-6, 1e6] is not a clock.
constexpr double kMinNsPerTick = 1e-6;
constexpr double kMaxNsPerTick = 1e6;
}  // namespace limits

// Reads a whole file of at most max_bytes. Refuses what is not a regular file
// (a FIFO or device would block or never end: it is opened non-blocking and
// checked before any read) and a file larger than max_bytes, before reading.
// False with *error: one line without the path.
bool read_bounded_file(const std::string& path, uint64_t max_bytes, std::string* text,
                       std::string* error);

// Opens a file for reading only if it is a regular file (O_NONBLOCK until
// checked, so a FIFO planted at the name cannot block). Returns the fd or -1
// with *error (one line without the path).
int open_regular_file(const std::string& path, std::string* error);

// Whether the JSON text nests objects and arrays at most max_depth deep
// (strings are skipped; the text need not be valid JSON). Checked before
// parsing, since a parsed document that nests deeper is processed recursively.
bool json_depth_within(const char* text, size_t len, int max_depth);

// Bounds of single values: true when the value is within them.
inline bool time_ns_ok(uint64_t ns) { return ns <= limits::kMaxTimeNs; }
inline bool count_ok(uint64_t n) { return n <= limits::kMaxCount; }
bool finite_in(double v, double lo, double hi);
inline bool ns_per_tick_ok(double v) {
  return finite_in(v, limits::kMinNsPerTick, limits::kMaxNsPerTick);
}

// A double read from a file as a count: false for NaN, negatives, fractions
// beyond 2^62 (the cast would be undefined).
bool double_to_count(double d, uint64_t* out);

// Sums and products of bounded counts that cannot wrap: they stop at UINT64_MAX.
inline uint64_t sat_add(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}
inline uint64_t sat_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

}  // namespace fabtrace
