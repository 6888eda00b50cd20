// The external programs the suite runs (protoc, otf2-print, chromium, mpirun,
// ...) all come from scripts/install-deps. A test that needs one and does not
// find it fails, naming the program and its Debian package: a missing tool is
// a broken install, and a silent skip would hide it.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace fabtrace::test {

// An absolute path executable by us, or a bare name found on PATH.
inline bool have_program(const std::string& name) {
  if (name.empty()) return false;
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t at = 0;
  while (at <= dirs.size()) {
    const size_t end = dirs.find(':', at);
    const std::string dir =
        dirs.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (!dir.empty() && ::access((dir + "/" + name).c_str(), X_OK) == 0) return true;
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return false;
}

}  // namespace fabtrace::test

// Fails the test (ASSERT) when `program` is missing.
#define REQUIRE_PROGRAM(program, package)                                                    \
  ASSERT_TRUE(::fabtrace::test::have_program(program))                                       \
      << (program) << " is not installed; scripts/install-deps installs it (Debian package " \
      << (package) << ")"
