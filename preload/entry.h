// The exported libfabric entry points. Each symbol version that the installed
// libfabric exports gets a thin stub (generated at build time by
// cmake/FabricSymbolVersions.cmake) that forwards to the handlers below with
// the version string, so the real function of the same version is called.
#pragma once

#include <rdma/fabric.h>

namespace fabtrace {

int entry_getinfo(const char* version, void** real_cache, uint32_t api, const char* node,
                  const char* service, uint64_t flags, const struct fi_info* hints,
                  struct fi_info** info);
int entry_fabric(const char* version, void** real_cache, struct fi_fabric_attr* attr,
                 struct fid_fabric** fabric, void* context);
#ifdef FABTRACE_HAVE_FI_FABRIC2
int entry_fabric2(const char* version, void** real_cache, struct fi_info* info,
                  struct fid_fabric** fabric, uint64_t flags, void* context);
#endif

}  // namespace fabtrace

#define FABTRACE_ENTRY_fi_getinfo(cver, ver)                                            \
  extern "C" __attribute__((visibility("default"))) int fabtrace_fi_getinfo_##cver(     \
      uint32_t api, const char* node, const char* service, uint64_t flags,              \
      const struct fi_info* hints, struct fi_info** info) {                             \
    static void* real = nullptr;                                                        \
    return fabtrace::entry_getinfo(ver, &real, api, node, service, flags, hints, info); \
  }

#define FABTRACE_ENTRY_fi_fabric(cver, ver)                                        \
  extern "C" __attribute__((visibility("default"))) int fabtrace_fi_fabric_##cver( \
      struct fi_fabric_attr* attr, struct fid_fabric** fabric, void* context) {    \
    static void* real = nullptr;                                                   \
    return fabtrace::entry_fabric(ver, &real, attr, fabric, context);              \
  }

#define FABTRACE_ENTRY_fi_fabric2(cver, ver)                                             \
  extern "C" __attribute__((visibility("default"))) int fabtrace_fi_fabric2_##cver(      \
      struct fi_info* info, struct fid_fabric** fabric, uint64_t flags, void* context) { \
    static void* real = nullptr;                                                         \
    return fabtrace::entry_fabric2(ver, &real, info, fabric, flags, context);            \
  }
