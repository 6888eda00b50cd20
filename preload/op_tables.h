// Copying a provider's op table into our container and checking which of its
// slots exist. Every fi_ops_* struct starts with its own size, so a provider
// built against an older libfabric may have a shorter table than ours: we copy
// only what it has, keep its size, and never install a shim in a slot it lacks.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace fabtrace {

template <typename T>
void copy_table(T* dst, const T* src) {
  std::memset(dst, 0, sizeof(T));
  std::memcpy(dst, src, std::min(src->size, sizeof(T)));
  dst->size = src->size;
}

// True when table `t` (of type T, as the provider sized it) has a non-null `member`.
#define FABTRACE_HAS_OP(t, T, member) \
  ((t) != nullptr && offsetof(T, member) + sizeof((t)->member) <= (t)->size && (t)->member)

// Installs shim `fn` into `ours` when the provider's table has that slot.
#define FABTRACE_SHIM(ours, real, T, member, fn)                \
  do {                                                          \
    if (FABTRACE_HAS_OP(real, T, member)) (ours).member = (fn); \
  } while (0)

// The nine slots fi_ops_msg and fi_ops_tagged share, in table order: X(slot)
// for each. The shims of one table are named after its slots (ops_msg.cpp:
// ep_send, ...; ops_tagged.cpp: ep_tsend, ...), so one list installs both.
#define FABTRACE_SEND_RECV_SLOTS(X) \
  X(send) X(sendv) X(sendmsg) X(senddata) X(inject) X(injectdata) X(recv) X(recvv) X(recvmsg)

}  // namespace fabtrace
