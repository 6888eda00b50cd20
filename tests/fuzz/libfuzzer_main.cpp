// The libFuzzer entry of one target (FABTRACE_FUZZ_TARGET, set per binary).
#include <cstdlib>

#include "tests/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fabtrace::fuzz::FuzzFn fn = fabtrace::fuzz::fuzz_target(FABTRACE_FUZZ_TARGET);
  if (!fn) std::abort();
  return fn(data, size);
}
