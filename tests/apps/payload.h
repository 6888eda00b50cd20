// Self-describing payloads (header + pattern), I/O vector layouts with canary
// gaps, and remote CQ data values, shared by the test families.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ftapp {

// What produced a payload / which operation a slot belongs to.
enum Kind : uint16_t {
  kSend = 1,
  kSendv,
  kSendmsg,
  kSenddata,
  kTsend,
  kTsendv,
  kTsendmsg,
  kTsenddata,
  kWrite,
  kWritev,
  kWritemsg,
  kWritedata,
  kRead,
  kReadv,
  kReadmsg,
  kReadSource,
  kInject,
  kInjectdata,
  kTinject,
  kTinjectdata,
  kSendmsgInject,
  kSendmsgCompletion,
  kSendSelective,
  kInjectWrite,
  kInjectWritedata,
  kThread,
  kPing,
  kPong,
  kLastPing,  // the stream family's last ping: rank 1 answers it and stops
  kKindMax
};

const char* kind_fn(uint16_t kind);  // libfabric function used for the kind

struct PayloadHdr {
  uint32_t magic;
  uint16_t kind;
  uint16_t tid;
  uint32_t seq;
  uint32_t len;
};
constexpr size_t kMinPayload = sizeof(PayloadHdr);

void fill_payload(uint8_t* p, size_t len, uint16_t kind, uint16_t tid, uint32_t seq);
// Validates header and pattern of a contiguous payload; *hdr gets the header.
bool check_payload(const uint8_t* p, size_t len, PayloadHdr* hdr, std::string* why);
// As check_payload, and the header must name (kind, tid, seq).
bool check_payload_is(const uint8_t* p, size_t len, uint16_t kind, uint16_t tid, uint32_t seq,
                      std::string* why);

// A piece of an I/O vector, as an offset into a slot.
struct Piece {
  size_t off;
  size_t len;
};
constexpr size_t kGap = 32;
constexpr uint8_t kCanary = 0xC3;
// Splits `size` bytes into up to `n` uneven pieces separated by kGap-byte gaps.
std::vector<Piece> split_pieces(size_t size, size_t n);
// Bytes per slot so that any split fits.
size_t slot_stride(size_t size);
void scatter(const uint8_t* contiguous, uint8_t* slot, const std::vector<Piece>& pieces);
std::string gather(const uint8_t* slot, const std::vector<Piece>& pieces);
// Every byte of the slot outside the pieces must still be kCanary.
bool canaries_intact(const uint8_t* slot, size_t stride, const std::vector<Piece>& pieces);

// Remote CQ data for (kind, seq), fitting in cq_data_size bytes.
uint64_t cq_data_value(uint16_t kind, uint32_t seq, size_t cq_data_size);

// Tag for (kind, tid, seq): bit 60 set so tags are never 0.
constexpr uint64_t kTagBase = 1ULL << 60;
inline uint64_t tag_of(uint16_t kind, uint16_t tid, uint32_t seq) {
  return kTagBase | (static_cast<uint64_t>(kind & 0xff) << 48) |
         (static_cast<uint64_t>(tid) << 32) | seq;
}

}  // namespace ftapp
