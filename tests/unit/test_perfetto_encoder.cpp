// ProtoEncoder: varints, tags, fixed fields and nested lengths, checked byte by
// byte and against `protoc --decode_raw` (skipped when protoc is not installed;
// scripts/install-deps installs protobuf-compiler).
#include "tests/support/require_program.h"
#include "userspace/report/perfetto/protobuf_encoder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

namespace fabtrace::report {
namespace {

std::vector<uint8_t> bytes_of(const ProtoEncoder& e) {
  return std::vector<uint8_t>(e.data(), e.data() + e.size());
}

void append_varint(std::vector<uint8_t>* v, uint64_t x) {
  uint8_t b[10];
  const uint8_t* end = pb::put_varint(b, x);
  for (const uint8_t* p = b; p != end; ++p) v->push_back(*p);
}

// Runs `protoc --decode_raw` on the bytes; returns its stdout, or "<failed>".
std::string decode_raw(const uint8_t* data, size_t n) {
  char in[] = "/tmp/fabtrace_pb_test.XXXXXX";
  const int fd = mkstemp(in);
  if (fd < 0) return "<failed>";
  const bool wrote = n == 0 || ::write(fd, data, n) == static_cast<ssize_t>(n);
  ::close(fd);
  const std::string out = std::string(in) + ".txt";
  const std::string cmd = "protoc --decode_raw < " + std::string(in) + " > " + out + " 2>&1";
  const int rc = wrote ? std::system(cmd.c_str()) : -1;
  std::ifstream f(out);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ::unlink(in);
  ::unlink(out.c_str());
  return rc == 0 ? text : "<failed> " + text;
}

std::string decode_raw(const ProtoEncoder& e) { return decode_raw(e.data(), e.size()); }

TEST(ProtobufEncoder, VarintSizesAndBytes) {
  struct Case {
    uint64_t v;
    std::vector<uint8_t> want;
  };
  const Case cases[] = {
      {0, {0x00}},
      {1, {0x01}},
      {127, {0x7F}},
      {128, {0x80, 0x01}},
      {300, {0xAC, 0x02}},
      {16383, {0xFF, 0x7F}},
      {16384, {0x80, 0x80, 0x01}},
      {0xFFFFFFFFull, {0xFF, 0xFF, 0xFF, 0xFF, 0x0F}},
      {1ull << 63, {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}},
      {std::numeric_limits<uint64_t>::max(),
       {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}},
  };
  for (const Case& c : cases) {
    uint8_t buf[10];
    const uint8_t* end = pb::put_varint(buf, c.v);
    const uint8_t* begin = buf;
    EXPECT_EQ(std::vector<uint8_t>(begin, end), c.want) << c.v;
    EXPECT_EQ(pb::varint_size(c.v), c.want.size()) << c.v;
  }
  EXPECT_EQ(pb::zigzag(0), 0u);
  EXPECT_EQ(pb::zigzag(-1), 1u);
  EXPECT_EQ(pb::zigzag(1), 2u);
  EXPECT_EQ(pb::zigzag(std::numeric_limits<int64_t>::min()), std::numeric_limits<uint64_t>::max());
}

TEST(ProtobufEncoder, TagsAndScalarFields) {
  ProtoEncoder e;
  e.add_varint(1, 150);  // the protobuf docs' example: 08 96 01
  e.add_varint(16, 1);   // field 16 needs a two-byte tag: 80 01 01
  e.add_int64(2, -1);    // ten bytes of two's complement
  e.add_sint64(3, -2);   // zigzag 3
  e.add_bool(4, true);
  e.add_fixed32(5, 0x01020304);
  e.add_fixed64(6, 0x0102030405060708ull);
  e.add_string(7, "hi");
  const std::vector<uint8_t> want = {
      0x08, 0x96, 0x01,                                                  // 1: 150
      0x80, 0x01, 0x01,                                                  // 16: 1
      0x10, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01,  // 2: -1
      0x18, 0x03,                                                        // 3: zigzag(-2)
      0x20, 0x01,                                                        // 4: true
      0x2D, 0x04, 0x03, 0x02, 0x01,                                      // 5: fixed32
      0x31, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,              // 6: fixed64
      0x3A, 0x02, 'h',  'i',                                             // 7: "hi"
  };
  EXPECT_EQ(bytes_of(e), want);
}

TEST(ProtobufEncoder, NestedLengthsShortAndLong) {
  // Short body: the one reserved byte holds the length.
  {
    ProtoEncoder e;
    e.begin_nested(3);
    e.add_varint(1, 1);
    e.end_nested();
    EXPECT_EQ(bytes_of(e), (std::vector<uint8_t>{0x1A, 0x02, 0x08, 0x01}));
  }
  // Bodies of 127, 128, 16383, 16384 and 70000 bytes: minimal length varints,
  // body intact after being moved up.
  for (size_t body :
       {size_t{127}, size_t{128}, size_t{300}, size_t{16383}, size_t{16384}, size_t{70000}}) {
    ProtoEncoder e(64);  // small start: growing while nested must keep offsets right
    e.add_varint(1, 7);
    e.begin_nested(2);
    // One string field whose tag + length + payload is exactly `body` bytes.
    std::string payload(body - 2, 'n');
    while (1 + pb::varint_size(payload.size()) + payload.size() < body) payload += 'n';
    while (1 + pb::varint_size(payload.size()) + payload.size() > body) payload.pop_back();
    ASSERT_EQ(1 + pb::varint_size(payload.size()) + payload.size(), body);
    e.add_string(1, payload);
    e.end_nested();
    e.add_varint(3, 9);
    ASSERT_EQ(e.depth(), 0);
    const size_t lsize = pb::varint_size(body);
    ASSERT_EQ(e.size(), 2 + 1 + lsize + body + 2);
    std::vector<uint8_t> want = {0x08, 0x07, 0x12};
    append_varint(&want, body);
    want.push_back(0x0A);
    append_varint(&want, payload.size());
    want.insert(want.end(), payload.begin(), payload.end());
    want.push_back(0x18);
    want.push_back(0x09);
    EXPECT_EQ(bytes_of(e), want) << body;
  }
}

TEST(ProtobufEncoder, DeepNestingInnerLongOuterShortAndReuse) {
  ProtoEncoder e;
  for (int round = 0; round < 2; ++round) {  // the second round reuses the cleared buffer
    e.clear();
    for (int d = 0; d < 20; ++d) e.begin_nested(1);
    e.add_string(2, std::string(200, 'n'));  // innermost body > 127: every level is long
    for (int d = 0; d < 20; ++d) e.end_nested();
    EXPECT_EQ(e.depth(), 0);
    // Walk down: each level is tag 0x0A, a length, then the rest of the buffer.
    size_t pos = 0;
    for (int d = 0; d < 20; ++d) {
      ASSERT_EQ(e.data()[pos], 0x0A) << d;
      ++pos;
      uint64_t len = 0;
      for (int shift = 0;; shift += 7) {
        const uint8_t b = e.data()[pos++];
        len |= uint64_t{b & 0x7Fu} << shift;
        if (!(b & 0x80)) break;
      }
      ASSERT_EQ(len, e.size() - pos) << d;
    }
    ASSERT_EQ(e.data()[pos], 0x12);
  }
}

TEST(ProtobufEncoder, TruncateDropsTail) {
  ProtoEncoder e;
  e.add_varint(1, 1);
  const size_t mark = e.size();
  e.add_string(2, "dropped");
  e.truncate(mark);
  EXPECT_EQ(bytes_of(e), (std::vector<uint8_t>{0x08, 0x01}));
}

TEST(ProtobufEncoder, DecodeRawAgrees) {
  REQUIRE_PROGRAM("protoc", "protobuf-compiler");
  ProtoEncoder e;
  e.add_varint(1, 150);
  e.add_int64(2, -1);
  e.add_string(3, "hello");
  e.begin_nested(4);
  e.add_varint(1, 1);
  e.begin_nested(2);
  // 'n' (0x6E) is not a valid tag byte, so decode_raw prints it as a string.
  e.add_string(5, std::string(300, 'n'));  // nested length 303: a two-byte varint
  e.end_nested();
  e.add_varint(3, 16384);
  e.end_nested();
  e.add_fixed64(5, 0x4059000000000000ull);  // 100.0
  e.add_fixed32(6, 0x0000002A);
  e.add_double(7, 0.5);
  e.add_varint(536870911, 1);  // the largest field number
  const std::string want =
      "1: 150\n"
      "2: 18446744073709551615\n"
      "3: \"hello\"\n"
      "4 {\n"
      "  1: 1\n"
      "  2 {\n"
      "    5: \"" +
      std::string(300, 'n') +
      "\"\n"
      "  }\n"
      "  3: 16384\n"
      "}\n"
      "5: 0x4059000000000000\n"
      "6: 0x0000002a\n"
      "7: 0x3fe0000000000000\n"
      "536870911: 1\n";
  EXPECT_EQ(decode_raw(e), want);
}

TEST(ProtobufEncoder, DecodeRawLongRepeatedMessages) {
  REQUIRE_PROGRAM("protoc", "protobuf-compiler");
  // A Trace-like stream: 1000 length-delimited "packets" of varying sizes,
  // some longer than 127 bytes, each with a nested message inside.
  ProtoEncoder e;
  std::string want;
  for (int i = 0; i < 1000; ++i) {
    e.begin_nested(1);
    e.add_varint(8, static_cast<uint64_t>(i) * 1000003ull);
    e.begin_nested(11);
    e.add_varint(9, 1 + i % 4);
    e.add_string(23, std::string(static_cast<size_t>(i % 300), 'n'));
    e.end_nested();
    e.end_nested();
    want += "1 {\n  8: " + std::to_string(static_cast<uint64_t>(i) * 1000003ull) +
            "\n  11 {\n    9: " + std::to_string(1 + i % 4) + "\n    23: \"" +
            std::string(static_cast<size_t>(i % 300), 'n') + "\"\n  }\n}\n";
  }
  EXPECT_EQ(decode_raw(e), want);
}

}  // namespace
}  // namespace fabtrace::report
