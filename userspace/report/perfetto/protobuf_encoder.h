// A small streaming protobuf encoder (proto2/proto3 wire format), enough to
// write Perfetto traces without the Perfetto SDK or libprotobuf.
//
// Fields are appended to one growable byte buffer. A nested (length-delimited)
// message is opened with begin_nested(), which reserves ONE byte for its length
// and pushes the slot's offset on a small fixed stack; end_nested() writes the
// length there. Messages shorter than 128 bytes (nearly all of a trace's) need
// nothing more; a longer one has its body moved up by the few extra bytes its
// length varint takes, so every length is the minimal varint (what protoc and
// every reader expect; no padded varints).
//
// The buffer is meant to be reused: the caller writes out data()/size() (e.g.
// once it holds a MiB or so of whole messages) and calls clear(), so memory is
// bounded by the flush threshold plus the largest single message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace fabtrace::report {

namespace pb {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

constexpr uint32_t make_tag(uint32_t field, WireType type) { return (field << 3) | type; }

// Bytes of the varint encoding of v (1..10).
inline size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// Writes the varint of v at p (room for 10 bytes needed); returns the end.
inline uint8_t* put_varint(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

inline uint64_t zigzag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}

}  // namespace pb

class ProtoEncoder {
 public:
  // Deepest nesting of open messages. Opening more is a programming error
  // (the process aborts with a message): Perfetto packets nest 4-5 deep.
  static constexpr int kMaxDepth = 32;

  explicit ProtoEncoder(size_t initial_capacity = 4096);
  ~ProtoEncoder();
  ProtoEncoder(const ProtoEncoder&) = delete;
  ProtoEncoder& operator=(const ProtoEncoder&) = delete;

  // ---- scalar fields
  void add_varint(uint32_t field, uint64_t v) {
    reserve(20);
    uint8_t* p = pb::put_varint(buf_ + size_, pb::make_tag(field, pb::kVarint));
    size_ = static_cast<size_t>(pb::put_varint(p, v) - buf_);
  }
  // int32/int64/enum: negative values take 10 bytes (two's complement), as in protobuf.
  void add_int64(uint32_t field, int64_t v) { add_varint(field, static_cast<uint64_t>(v)); }
  void add_sint64(uint32_t field, int64_t v) { add_varint(field, pb::zigzag(v)); }
  void add_bool(uint32_t field, bool v) { add_varint(field, v ? 1 : 0); }
  void add_fixed64(uint32_t field, uint64_t v) {
    reserve(18);
    uint8_t* p = pb::put_varint(buf_ + size_, pb::make_tag(field, pb::kFixed64));
    std::memcpy(p, &v, 8);  // little-endian hosts only (checked in the .cpp)
    size_ = static_cast<size_t>(p + 8 - buf_);
  }
  void add_fixed32(uint32_t field, uint32_t v) {
    reserve(14);
    uint8_t* p = pb::put_varint(buf_ + size_, pb::make_tag(field, pb::kFixed32));
    std::memcpy(p, &v, 4);
    size_ = static_cast<size_t>(p + 4 - buf_);
  }
  void add_double(uint32_t field, double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    add_fixed64(field, bits);
  }

  // ---- length-delimited fields
  void add_bytes(uint32_t field, const void* data, size_t n);
  void add_string(uint32_t field, std::string_view s) { add_bytes(field, s.data(), s.size()); }

  // Opens a nested message as field `field` of the current one.
  void begin_nested(uint32_t field) {
    if (depth_ >= kMaxDepth) depth_overflow();
    reserve(11);
    uint8_t* p = pb::put_varint(buf_ + size_, pb::make_tag(field, pb::kLengthDelimited));
    size_ = static_cast<size_t>(p - buf_);
    stack_[depth_++] = size_;
    buf_[size_++] = 0;  // the length slot
  }
  // Closes the innermost open message.
  void end_nested() {
    if (depth_ <= 0) depth_underflow();
    const size_t slot = stack_[--depth_];
    const size_t len = size_ - slot - 1;
    if (len < 0x80) {
      buf_[slot] = static_cast<uint8_t>(len);
      return;
    }
    fix_long_length(slot, len);
  }
  int depth() const { return depth_; }

  // Raw bytes (an already encoded field or message).
  void append_raw(const void* data, size_t n) {
    reserve(n);
    std::memcpy(buf_ + size_, data, n);
    size_ += n;
  }

  const uint8_t* data() const { return buf_; }
  size_t size() const { return size_; }
  // Drops everything, open messages included.
  void clear() {
    size_ = 0;
    depth_ = 0;
  }
  // Cuts the buffer back to `n` bytes (n <= size(), no message opened after
  // n may still be open).
  void truncate(size_t n) {
    if (n < size_) size_ = n;
  }
  size_t capacity() const { return cap_; }

 private:
  void reserve(size_t n) {
    if (cap_ - size_ < n) grow(n);
  }
  void grow(size_t n);
  void fix_long_length(size_t slot, size_t len);
  [[noreturn]] static void depth_overflow();
  [[noreturn]] static void depth_underflow();

  uint8_t* buf_ = nullptr;
  size_t size_ = 0;
  size_t cap_ = 0;
  int depth_ = 0;
  size_t stack_[kMaxDepth];
};

}  // namespace fabtrace::report
