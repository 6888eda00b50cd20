// Prints, for every version of fi_getinfo / fi_fabric that libfabric exports,
// which loaded object the dynamic linker binds it to, so a test can check that
// the preload interposes all of them.
#include <dlfcn.h>
#include <rdma/fabric.h>

#include <cstdio>
#include <cstring>
#include <initializer_list>

int main() {
  // Make sure libfabric itself is loaded (the probe links it).
  (void)fi_version();
  void* fab = dlopen("libfabric.so.1", RTLD_LAZY | RTLD_NOLOAD);
  int found = 0;
  for (const char* fn : {"fi_getinfo", "fi_fabric", "fi_fabric2"}) {
    for (int minor = 0; minor < 40; ++minor) {
      char ver[32];
      std::snprintf(ver, sizeof(ver), "FABRIC_1.%d", minor);
      if (!fab || !dlvsym(fab, fn, ver)) continue;  // libfabric does not export this one
      void* bound = dlvsym(RTLD_DEFAULT, fn, ver);
      Dl_info info{};
      const char* obj = bound && dladdr(bound, &info) && info.dli_fname ? info.dli_fname : "?";
      std::printf("%s@%s %s\n", fn, ver, obj);
      ++found;
    }
  }
  return found ? 0 : 1;
}
