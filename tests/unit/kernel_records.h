// Records and logs of the node-wide session built by hand, for the tests of the
// kernel log, its rows and `fabtrace export kernel`.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "bpf/fabtrace_events.h"
#include "common/block_file.h"
#include "common/kernel_log.h"

namespace fabtrace {
namespace test {

using Bytes = std::vector<uint8_t>;

// The kinds this build knows, in order.
std::vector<uint16_t> known_kinds();

// A whole record of `kind` (kernel_log::record_size bytes): a header with
// ts/cpu/pid/tid derived from `seed`, every byte after it a pattern of `seed`
// and its offset, so that any two records differ and a byte out of place shows.
Bytes patterned_record(uint16_t kind, uint8_t seed);

// Rewrites the size field of a record's header (to make it lie).
void set_record_size(Bytes* rec, uint16_t size);

// A record header.
ft_hdr make_hdr(uint16_t kind, uint16_t size, uint64_t ts, uint32_t cpu, uint32_t pid,
                uint32_t tid);

template <typename T>
Bytes bytes_of(const T& rec) {
  Bytes b(sizeof(T));
  std::memcpy(b.data(), &rec, sizeof(T));
  return b;
}

// Copies a C string into a fixed-size record field (cut to fit, NUL-padded).
template <size_t N>
void set_str(char (&dst)[N], const char* src) {
  std::memset(dst, 0, N);
  std::strncpy(dst, src, N - 1);
}

// A meta with every field set, an attach list and options.
KernelLogMeta sample_meta();

// Starts a kernel log by hand: the file header and a minimal kMeta block, for
// tests that then write blocks the real writer never would.
bool start_raw_log(BlockFileWriter* w, const std::string& path);

// Concatenated records, as one kEvents payload.
Bytes concat(const std::vector<Bytes>& records);

}  // namespace test
}  // namespace fabtrace
