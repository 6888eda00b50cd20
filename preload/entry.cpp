// fi_getinfo / fi_fabric: where the application's fabric objects are born.
#include "preload/entry.h"

#include <dlfcn.h>
#include <rdma/fi_errno.h>

#include "common/env.h"
#include "preload/activate.h"
#include "preload/provider_call.h"
#include "preload/runtime.h"

namespace fabtrace {

namespace {
// The real function of `version`: the next definition after us, or, when
// libfabric was loaded with RTLD_LOCAL by a plugin (Open MPI components), the
// one in the already-loaded libfabric.so.1.
void* real_symbol(const char* name, const char* version, void** cache) {
  void* f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
  if (f) return f;
  f = dlvsym(RTLD_NEXT, name, version);
  if (!f) {
    if (void* h = dlopen("libfabric.so.1", RTLD_LAZY | RTLD_NOLOAD)) {
      f = dlvsym(h, name, version);
      dlclose(h);
    }
  }
  if (!f) {
    if (void* h = dlopen("libfabric.so.1", RTLD_LAZY | RTLD_GLOBAL)) f = dlvsym(h, name, version);
  }
  if (!f) log_line("error: %s@%s not found in libfabric", name, version);
  __atomic_store_n(cache, f, __ATOMIC_RELEASE);
  return f;
}
}  // namespace

int entry_getinfo(const char* version, void** real_cache, uint32_t api, const char* node,
                  const char* service, uint64_t flags, const struct fi_info* hints,
                  struct fi_info** info) {
  using Fn = int (*)(uint32_t, const char*, const char*, uint64_t, const struct fi_info*,
                     struct fi_info**);
  auto real = reinterpret_cast<Fn>(real_symbol("fi_getinfo", version, real_cache));
  if (!real) return -FI_ENOSYS;
  if (t_nested == 0) runtime_configure();
  return call_nested([&] { return real(api, node, service, flags, hints, info); });
}

int entry_fabric(const char* version, void** real_cache, struct fi_fabric_attr* attr,
                 struct fid_fabric** fabric, void* context) {
  using Fn = int (*)(struct fi_fabric_attr*, struct fid_fabric**, void*);
  auto real = reinterpret_cast<Fn>(real_symbol("fi_fabric", version, real_cache));
  if (!real) return -FI_ENOSYS;
  if (t_nested > 0 || !runtime_configure()) return real(attr, fabric, context);
  runtime_activate();
  return open_wrapped(
      fabric, [&] { return real(attr, fabric, context); },
      [&](struct fid_fabric* f) {
        return wrap_fabric(f, attr ? attr->prov_name : nullptr) != nullptr;
      });
}

#ifdef FABTRACE_HAVE_FI_FABRIC2
int entry_fabric2(const char* version, void** real_cache, struct fi_info* info,
                  struct fid_fabric** fabric, uint64_t flags, void* context) {
  using Fn = int (*)(struct fi_info*, struct fid_fabric**, uint64_t, void*);
  auto real = reinterpret_cast<Fn>(real_symbol("fi_fabric2", version, real_cache));
  if (!real) return -FI_ENOSYS;
  if (t_nested > 0 || !runtime_configure()) return real(info, fabric, flags, context);
  runtime_activate();
  return open_wrapped(
      fabric, [&] { return real(info, fabric, flags, context); },
      [&](struct fid_fabric* f) {
        return wrap_fabric(f, info && info->fabric_attr ? info->fabric_attr->prov_name : nullptr) !=
               nullptr;
      });
}
#endif

}  // namespace fabtrace
