// Calls into the provider on the application's behalf, on the control path:
// every such call is made under a NestGuard (so that libfabric entry points
// the provider reaches from inside it are left alone), and an object it opens
// is wrapped, or closed again when its wrapper cannot be made.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

namespace fabtrace {

// Depth of provider calls made on this thread on behalf of the application: a
// libfabric entry point reached while it is non-zero comes from inside a
// provider (ofi_rxm opening tcp) and is left alone.
extern thread_local int t_nested;
struct NestGuard {
  NestGuard() { ++t_nested; }
  ~NestGuard() { --t_nested; }
  NestGuard(const NestGuard&) = delete;
  NestGuard& operator=(const NestGuard&) = delete;
};

// `call()` (the provider's function) made as a nested call; its result.
template <typename Call>
inline auto call_nested(Call&& call) {
  NestGuard g;
  return call();
}

// The provider opened *obj but its wrapper could not be allocated: the object
// is closed again and the application gets -FI_ENOMEM (an exception must not
// cross libfabric's C callers).
template <typename Fid>
int refuse_unwrapped(Fid** obj) {
  struct fid* f = &(*obj)->fid;
  call_nested([&] { return f->ops->close(f); });
  *obj = nullptr;
  return -FI_ENOMEM;
}

// Opens an object through the provider (`open()` writes it to *obj) and, when
// that succeeded, hands it to `wrap(*obj)`, which returns false when the
// object's wrapper could not be made: the object is then refused.
template <typename Fid, typename Open, typename Wrap>
int open_wrapped(Fid** obj, Open&& open, Wrap&& wrap) {
  const int ret = call_nested(open);
  if (ret == 0 && obj && *obj && !wrap(*obj)) return refuse_unwrapped(obj);
  return ret;
}

}  // namespace fabtrace
