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
  return k == OpKind::kRecv || k == OpKind::kRecvv || k == OpKind::kRecvmsg ||
         k == OpKind::kTrecv || k == OpKind::kTrecvv || k == OpKind::kTrecvmsg;
}

}  // namespace fabtrace
