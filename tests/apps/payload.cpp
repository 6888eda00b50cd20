#include "payload.h"

#include <cstring>

namespace ftapp {
namespace {

constexpr uint32_t kPayloadMagic = 0xF7AB1E55u;

uint8_t pattern(uint16_t kind, uint16_t tid, uint32_t seq, size_t i) {
  uint32_t v = static_cast<uint32_t>(i) * 131u + seq * 7919u + kind * 29u + tid * 53u;
  return static_cast<uint8_t>(v ^ (v >> 8) ^ 0x5a);
}

}  // namespace

const char* kind_fn(uint16_t kind) {
  switch (kind) {
    case kSend:
      return "fi_send";
    case kSendv:
      return "fi_sendv";
    case kSendmsg:
      return "fi_sendmsg";
    case kSenddata:
      return "fi_senddata";
    case kTsend:
      return "fi_tsend";
    case kTsendv:
      return "fi_tsendv";
    case kTsendmsg:
      return "fi_tsendmsg";
    case kTsenddata:
      return "fi_tsenddata";
    case kWrite:
      return "fi_write";
    case kWritev:
      return "fi_writev";
    case kWritemsg:
      return "fi_writemsg";
    case kWritedata:
      return "fi_writedata";
    case kRead:
      return "fi_read";
    case kReadv:
      return "fi_readv";
    case kReadmsg:
      return "fi_readmsg";
    case kInject:
      return "fi_inject";
    case kInjectdata:
      return "fi_injectdata";
    case kTinject:
      return "fi_tinject";
    case kTinjectdata:
      return "fi_tinjectdata";
    case kSendmsgInject:
    case kSendmsgCompletion:
      return "fi_sendmsg";
    case kSendSelective:
      return "fi_send";
    case kInjectWrite:
      return "fi_inject_write";
    case kInjectWritedata:
      return "fi_inject_writedata";
    case kThread:
      return "fi_tsend";
    case kPing:
    case kPong:
    case kLastPing:
      return "fi_tsend";
    default:
      return "?";
  }
}

void fill_payload(uint8_t* p, size_t len, uint16_t kind, uint16_t tid, uint32_t seq) {
  PayloadHdr h{kPayloadMagic, kind, tid, seq, static_cast<uint32_t>(len)};
  size_t n = len < sizeof h ? len : sizeof h;
  std::memcpy(p, &h, n);
  for (size_t i = sizeof h; i < len; ++i) p[i] = pattern(kind, tid, seq, i);
}

bool check_payload(const uint8_t* p, size_t len, PayloadHdr* hdr, std::string* why) {
  if (len < sizeof(PayloadHdr)) {
    *why = "payload shorter than header";
    return false;
  }
  std::memcpy(hdr, p, sizeof *hdr);
  if (hdr->magic != kPayloadMagic) {
    *why = "bad payload magic";
    return false;
  }
  if (hdr->len != len) {
    *why = "payload length " + std::to_string(hdr->len) + " != " + std::to_string(len);
    return false;
  }
  for (size_t i = sizeof(PayloadHdr); i < len; ++i) {
    if (p[i] != pattern(hdr->kind, hdr->tid, hdr->seq, i)) {
      *why = "payload byte " + std::to_string(i) + " of " + kind_fn(hdr->kind) + " #" +
             std::to_string(hdr->seq) + " corrupted";
      return false;
    }
  }
  return true;
}

bool check_payload_is(const uint8_t* p, size_t len, uint16_t kind, uint16_t tid, uint32_t seq,
                      std::string* why) {
  PayloadHdr h;
  if (!check_payload(p, len, &h, why)) return false;
  if (h.kind != kind || h.tid != tid || h.seq != seq) {
    *why = std::string("expected payload of ") + kind_fn(kind) + " #" + std::to_string(seq) +
           " got " + kind_fn(h.kind) + " #" + std::to_string(h.seq);
    return false;
  }
  return true;
}

std::vector<Piece> split_pieces(size_t size, size_t n) {
  if (n > 3) n = 3;
  if (n > size) n = size;
  if (n < 1) n = 1;
  std::vector<Piece> v;
  if (n == 1) {
    v.push_back({0, size});
    return v;
  }
  // Uneven: the first piece is a fifth, the rest is split evenly.
  size_t first = size / 5 ? size / 5 : 1;
  size_t rest = size - first;
  size_t off = 0;
  v.push_back({off, first});
  off += first + kGap;
  for (size_t i = 1; i < n; ++i) {
    size_t len = (i + 1 == n) ? rest : rest / (n - 1);
    rest -= len;
    v.push_back({off, len});
    off += len + kGap;
  }
  return v;
}

size_t slot_stride(size_t size) { return (size + 3 * kGap + 63) / 64 * 64; }

void scatter(const uint8_t* contiguous, uint8_t* slot, const std::vector<Piece>& pieces) {
  size_t pos = 0;
  for (const Piece& pc : pieces) {
    std::memcpy(slot + pc.off, contiguous + pos, pc.len);
    pos += pc.len;
  }
}

std::string gather(const uint8_t* slot, const std::vector<Piece>& pieces) {
  std::string out;
  for (const Piece& pc : pieces) out.append(reinterpret_cast<const char*>(slot + pc.off), pc.len);
  return out;
}

bool canaries_intact(const uint8_t* slot, size_t stride, const std::vector<Piece>& pieces) {
  size_t pos = 0;
  for (const Piece& pc : pieces) {
    for (; pos < pc.off; ++pos) {
      if (slot[pos] != kCanary) return false;
    }
    pos = pc.off + pc.len;
  }
  for (; pos < stride; ++pos) {
    if (slot[pos] != kCanary) return false;
  }
  return true;
}

uint64_t cq_data_value(uint16_t kind, uint32_t seq, size_t cq_data_size) {
  uint64_t v = (0xDAULL << 56) | (static_cast<uint64_t>(kind) << 32) | seq;
  if (cq_data_size >= 8) return v;
  if (cq_data_size == 0) return 0;
  uint64_t mask = (1ULL << (cq_data_size * 8)) - 1;
  // Keep kind and seq distinguishable in small data fields.
  return ((static_cast<uint64_t>(kind) << 24) | (seq & 0xffffff)) & mask;
}

}  // namespace ftapp
