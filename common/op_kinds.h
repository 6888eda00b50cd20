// The libfabric data-path operations fabtrace knows, shared by every part of the
// project (preload, files on disk, report). Values are stable: they are stored
// in files, so new kinds are appended before kCount, never inserted.
#pragma once

#include <cstdint>

namespace fabtrace {

enum class OpKind : uint8_t {
  kSend,
  kSendv,
  kSendmsg,
  kSenddata,
  kInject,
  kInjectdata,
  kRecv,
  kRecvv,
  kRecvmsg,
  kTsend,
  kTsendv,
  kTsendmsg,
  kTsenddata,
  kTinject,
  kTinjectdata,
  kTrecv,
  kTrecvv,
  kTrecvmsg,
  kWrite,
  kWritev,
  kWritemsg,
  kWritedata,
  kInjectWrite,
  kInjectWritedata,
  kRead,
  kReadv,
  kReadmsg,
  kAtomic,
  kAtomicv,
  kAtomicmsg,
  kInjectAtomic,
  kFetchAtomic,
  kFetchAtomicv,
  kFetchAtomicmsg,
  kCompareAtomic,
  kCompareAtomicv,
  kCompareAtomicmsg,
  kCount
};

constexpr int kOpKindCount = static_cast<int>(OpKind::kCount);

// The libfabric function name, e.g. "fi_tsendmsg"; "?" for an unknown value.
const char* op_name(OpKind k);
// Inverse of op_name; kCount when the name is not a known op.
OpKind op_from_name(const char* name);

// Receives: their time is post -> completion (it includes waiting for the
// sender), so they are kept out of per-NIC bandwidth and get the late-receiver
// statistic instead.
constexpr bool op_is_recv(OpKind k) {
  // One bit test (the data path asks once per completion).
  constexpr uint64_t kRecvKinds = uint64_t{1} << static_cast<int>(OpKind::kRecv) |
                                  uint64_t{1} << static_cast<int>(OpKind::kRecvv) |
                                  uint64_t{1} << static_cast<int>(OpKind::kRecvmsg) |
                                  uint64_t{1} << static_cast<int>(OpKind::kTrecv) |
                                  uint64_t{1} << static_cast<int>(OpKind::kTrecvv) |
                                  uint64_t{1} << static_cast<int>(OpKind::kTrecvmsg);
  static_assert(kOpKindCount <= 64, "one bit per kind");
  return static_cast<unsigned>(k) < 64 && (kRecvKinds >> static_cast<unsigned>(k)) & 1;
}

}  // namespace fabtrace
