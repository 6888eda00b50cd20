// The readers of files that anyone with write access to a job directory may
// have written, each behind one fuzz entry point: bytes in, the reader and
// what consumes its result (the summary, the tables, the HTML report, the
// Perfetto trace, the CSV export) run on them. An entry point returns 0 and
// must neither crash, nor hang, nor reach undefined behaviour on any input.
//
// Adding a reader: write its entry point (a fuzz_<name>.cpp here), add a row
// to fuzz_targets() in fuzz_targets.cpp and its name to FABTRACE_FUZZ_TARGETS
// in CMakeLists.txt, and commit seeds under corpus/<name>/. The libFuzzer
// binary fuzz_<name> and the corpus replay test pick it up from there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "userspace/report/job/job.h"

namespace fabtrace::fuzz {

using FuzzFn = int (*)(const uint8_t* data, size_t size);

struct FuzzTarget {
  const char* name;  // also the corpus directory and the libFuzzer binary's suffix
  FuzzFn fn;
};

int report_json(const uint8_t* data, size_t size);  // fabtrace.<...>.json
int oplog(const uint8_t* data, size_t size);        // fabtrace_ops.<...>.oplog
int counter_csv(const uint8_t* data, size_t size);  // fabtrace_nic.<...>.csv
int kernel_log(const uint8_t* data, size_t size);   // fabtrace_kernel.<...>.klog

const std::vector<FuzzTarget>& fuzz_targets();
FuzzFn fuzz_target(const std::string& name);  // nullptr when unknown

// Helpers for entry points whose reader takes a path: the bytes as a file
// that exists only in memory (memfd), and a scratch directory for outputs.
class MemFile {
 public:
  MemFile(const uint8_t* data, size_t size);
  ~MemFile();
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  const std::string& path() const { return path_; }  // "/proc/self/fd/N"

 private:
  int fd_ = -1;
  std::string path_;
};
const std::string& scratch_dir();  // one per process, created on first use
// The input with every block's checksum made right (the block framing of
// common/block_file.h, blocks from offset `first`), so that mutations reach the
// block parsers instead of stopping at the first CRC check.
std::string with_valid_checksums(const uint8_t* data, size_t size, size_t first);
// The job's Perfetto trace, written into scratch_dir() (result ignored).
void render_perfetto(const report::Job& job);

}  // namespace fabtrace::fuzz
