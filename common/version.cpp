#include "common/version.h"

#include <dlfcn.h>

#include <cstdint>

#include "fabtrace_git_describe.h"  // generated at every build (cmake/GitDescribe.cmake)

#ifndef FABTRACE_VERSION_NUMBER
#error "FABTRACE_VERSION_NUMBER: the project version, set by common/CMakeLists.txt"
#endif

namespace fabtrace {

const char* version_number() { return FABTRACE_VERSION_NUMBER; }

const char* version() {
  static const std::string v =
      sizeof(FABTRACE_GIT_DESCRIBE) > 1
          ? std::string(FABTRACE_VERSION_NUMBER) + " (git " FABTRACE_GIT_DESCRIBE ")"
          : std::string(FABTRACE_VERSION_NUMBER);
  return v.c_str();
}

std::string libfabric_version(bool load, std::string* path) {
  using version_fn = uint32_t (*)(void);
  // The preload exports no fi_version: RTLD_DEFAULT finds libfabric's own.
  void* sym = dlsym(RTLD_DEFAULT, "fi_version");
  if (!sym && load) {
    // Kept loaded: the process may use it again (fabtrace record --uprobes does).
    if (void* h = dlopen("libfabric.so.1", RTLD_LAZY | RTLD_LOCAL)) sym = dlsym(h, "fi_version");
  }
  if (!sym) return "";
  if (path) {
    Dl_info info{};
    *path = dladdr(sym, &info) && info.dli_fname ? info.dli_fname : "";
  }
  const uint32_t v = reinterpret_cast<version_fn>(sym)();
  return std::to_string(v >> 16) + "." + std::to_string(v & 0xffff);
}

}  // namespace fabtrace
