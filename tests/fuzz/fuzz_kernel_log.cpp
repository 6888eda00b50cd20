// A kernel log (fabtrace record) through its reader and both forms of the export.
#include <cstdio>
#include <string>

#include "common/block_file.h"
#include "common/kernel_log.h"
#include "tests/fuzz/fuzz_targets.h"
#include "userspace/commands.h"

namespace fabtrace::fuzz {

namespace {

void run_one(const uint8_t* data, size_t size) {
  const MemFile file(data, size);
  KernelLogReader r;
  std::string err;
  if (!r.open(file.path(), &err)) return;
  uint64_t n = 0;
  r.read_all([&n](const ft_hdr&, const uint8_t*) { ++n; }, &err);
  std::FILE* sink = std::fopen("/dev/null", "w");
  if (!sink) return;
  export_kernel(file.path(), false, sink);
  export_kernel(file.path(), true, {"stall", "offcpu"}, 3, sink);
  std::fclose(sink);
}

}  // namespace

int kernel_log(const uint8_t* data, size_t size) {
  run_one(data, size);
  const std::string fixed = with_valid_checksums(data, size, sizeof(blockfile::FileHeader));
  if (fixed.compare(0, std::string::npos, reinterpret_cast<const char*>(data), size) != 0)
    run_one(reinterpret_cast<const uint8_t*>(fixed.data()), fixed.size());
  return 0;
}

}  // namespace fabtrace::fuzz
