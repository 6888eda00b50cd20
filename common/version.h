// fabtrace's version, and the versions of the libraries it runs with. Every
// file fabtrace writes records version() (the rank reports, the per-op
// timeline, the kernel log, the counter CSV, every output of the job report),
// so a directory of outputs says which build wrote it.
#pragma once

#include <string>

namespace fabtrace {

// The project's version (CMake's project(VERSION)): "0.9.0".
const char* version_number();

// The version and, when the build had the git checkout, `git describe` of the
// source at build time: "0.9.0 (git 1a2b3c4d5e6f-dirty)"; else version_number().
const char* version();

// The version of the libfabric in this process ("1.17", from its fi_version()),
// loading libfabric.so.1 first when `load` and none is loaded; "" when there is
// none. *path (optional) is the library's file.
std::string libfabric_version(bool load, std::string* path = nullptr);

}  // namespace fabtrace
