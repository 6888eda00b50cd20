// The functions include/fabtrace.h looks up at run time (dlsym), exported by
// libfabtrace.so under the version node FABTRACE_API_1 (see
// cmake/FabricSymbolVersions.cmake). Their names carry the interface version:
// a later change of meaning gets new names, and old programs keep theirs.
#include "preload/marks.h"

#define FT_API extern "C" __attribute__((visibility("default")))

FT_API void fabtrace_mark_v1(const char* name) { fabtrace::marks::mark(name); }
FT_API void fabtrace_begin_v1(const char* name) { fabtrace::marks::begin(name); }
FT_API void fabtrace_end_v1(void) { fabtrace::marks::end(); }
