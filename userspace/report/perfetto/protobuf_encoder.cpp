#include "userspace/report/perfetto/protobuf_encoder.h"

#include <cstdio>
#include <cstdlib>
#include <new>

namespace fabtrace::report {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "fixed32/fixed64 fields are copied from memory as little-endian");

ProtoEncoder::ProtoEncoder(size_t initial_capacity) {
  cap_ = initial_capacity < 64 ? 64 : initial_capacity;
  buf_ = static_cast<uint8_t*>(std::malloc(cap_));
  if (!buf_) throw std::bad_alloc();
}

ProtoEncoder::~ProtoEncoder() { std::free(buf_); }

void ProtoEncoder::grow(size_t n) {
  size_t cap = cap_ * 2;
  while (cap - size_ < n) cap *= 2;
  uint8_t* p = static_cast<uint8_t*>(std::realloc(buf_, cap));
  if (!p) throw std::bad_alloc();
  buf_ = p;
  cap_ = cap;
}

void ProtoEncoder::add_bytes(uint32_t field, const void* data, size_t n) {
  reserve(n + 20);
  uint8_t* p = pb::put_varint(buf_ + size_, pb::make_tag(field, pb::kLengthDelimited));
  p = pb::put_varint(p, n);
  if (n > 0) std::memcpy(p, data, n);
  size_ = static_cast<size_t>(p - buf_) + n;
}

// The body of the message whose one-byte length slot is at `slot` is `len`
// (>= 128) bytes: move it up to make room for the longer varint.
void ProtoEncoder::fix_long_length(size_t slot, size_t len) {
  const size_t n = pb::varint_size(len);
  reserve(n - 1);
  std::memmove(buf_ + slot + n, buf_ + slot + 1, len);
  pb::put_varint(buf_ + slot, len);
  size_ += n - 1;
}

void ProtoEncoder::depth_overflow() {
  std::fprintf(stderr, "fabtrace: ProtoEncoder: more than %d nested messages open\n", kMaxDepth);
  std::abort();
}

void ProtoEncoder::depth_underflow() {
  std::fprintf(stderr, "fabtrace: ProtoEncoder: end_nested() without begin_nested()\n");
  std::abort();
}

}  // namespace fabtrace::report
