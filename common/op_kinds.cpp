#include "common/op_kinds.h"

#include <cstring>

namespace fabtrace {

namespace {
constexpr const char* kNames[kOpKindCount] = {
    "fi_send",
    "fi_sendv",
    "fi_sendmsg",
    "fi_senddata",
    "fi_inject",
    "fi_injectdata",
    "fi_recv",
    "fi_recvv",
    "fi_recvmsg",
    "fi_tsend",
    "fi_tsendv",
    "fi_tsendmsg",
    "fi_tsenddata",
    "fi_tinject",
    "fi_tinjectdata",
    "fi_trecv",
    "fi_trecvv",
    "fi_trecvmsg",
    "fi_write",
    "fi_writev",
    "fi_writemsg",
    "fi_writedata",
    "fi_inject_write",
    "fi_inject_writedata",
    "fi_read",
    "fi_readv",
    "fi_readmsg",
    "fi_atomic",
    "fi_atomicv",
    "fi_atomicmsg",
    "fi_inject_atomic",
    "fi_fetch_atomic",
    "fi_fetch_atomicv",
    "fi_fetch_atomicmsg",
    "fi_compare_atomic",
    "fi_compare_atomicv",
    "fi_compare_atomicmsg",
};
}  // namespace

const char* op_name(OpKind k) {
  const int i = static_cast<int>(k);
  return i >= 0 && i < kOpKindCount ? kNames[i] : "?";
}

OpKind op_from_name(const char* name) {
  for (int i = 0; i < kOpKindCount; ++i)
    if (std::strcmp(kNames[i], name) == 0) return static_cast<OpKind>(i);
  return OpKind::kCount;
}

}  // namespace fabtrace
