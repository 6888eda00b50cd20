#include "tests/fuzz/fuzz_targets.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "common/block_file.h"
#include "userspace/report/perfetto/perfetto_trace.h"

namespace fabtrace::fuzz {

const std::vector<FuzzTarget>& fuzz_targets() {
  static const std::vector<FuzzTarget> targets = {
      {"report_json", report_json},
      {"oplog", oplog},
      {"kernel_log", kernel_log},
      {"counter_csv", counter_csv},
  };
  return targets;
}

FuzzFn fuzz_target(const std::string& name) {
  for (const FuzzTarget& t : fuzz_targets())
    if (name == t.name) return t.fn;
  return nullptr;
}

MemFile::MemFile(const uint8_t* data, size_t size) {
  fd_ = ::memfd_create("fabtrace-fuzz", MFD_CLOEXEC);
  if (fd_ < 0) std::abort();  // the harness itself is broken: say so loudly
  size_t off = 0;
  while (off < size) {
    const ssize_t w = ::write(fd_, data + off, size - off);
    if (w <= 0) std::abort();
    off += static_cast<size_t>(w);
  }
  path_ = "/proc/self/fd/" + std::to_string(fd_);
}

MemFile::~MemFile() { ::close(fd_); }

const std::string& scratch_dir() {
  // Removed at exit: every replay and fuzzing run makes one.
  struct Scratch {
    std::string dir;
    Scratch() {
      char tmpl[] = "/tmp/fabtrace-fuzz.XXXXXX";
      if (!::mkdtemp(tmpl)) std::abort();
      dir = tmpl;
    }
    ~Scratch() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  };
  static const Scratch scratch;
  return scratch.dir;
}

void render_perfetto(const report::Job& job) {
  report::PerfettoOptions opt;
  report::PerfettoStats stats;
  std::vector<std::string> files;
  std::string err;
  report::write_perfetto_stats(job, scratch_dir(), opt, &files, &stats, &err);
}

std::string with_valid_checksums(const uint8_t* data, size_t size, size_t first) {
  std::string s(reinterpret_cast<const char*>(data), size);
  size_t off = first;
  while (off + sizeof(blockfile::BlockHeader) <= s.size()) {
    blockfile::BlockHeader h;
    std::memcpy(&h, &s[off], sizeof(h));
    const size_t payload = off + sizeof(h);
    if (h.payload_bytes > s.size() - payload) break;
    h.crc32 = blockfile::crc32_of(s.data() + payload, h.payload_bytes);
    std::memcpy(&s[off], &h, sizeof(h));
    off = payload + h.payload_bytes;
  }
  return s;
}

}  // namespace fabtrace::fuzz
