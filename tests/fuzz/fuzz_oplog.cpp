// An oplog through its reader, the CSV export and the Perfetto trace.
#include <zlib.h>

#include <cstdio>
#include <cstring>

#include "common/oplog_file.h"
#include "tests/fuzz/fuzz_targets.h"
#include "userspace/commands.h"
#include "userspace/report/job.h"

namespace fabtrace::fuzz {

namespace {

// The input with every block's checksum made right, so that mutations reach the
// block parsers instead of stopping at the first CRC check.
std::string with_valid_checksums(const uint8_t* data, size_t size) {
  std::string s(reinterpret_cast<const char*>(data), size);
  size_t off = sizeof(oplog::FileHeader);
  while (off + sizeof(oplog::BlockHeader) <= s.size()) {
    oplog::BlockHeader h;
    std::memcpy(&h, &s[off], sizeof(h));
    const size_t payload = off + sizeof(h);
    if (h.payload_bytes > s.size() - payload) break;
    h.crc32 = static_cast<uint32_t>(
        crc32(0L, reinterpret_cast<const Bytef*>(s.data() + payload), h.payload_bytes));
    std::memcpy(&s[off], &h, sizeof(h));
    off = payload + h.payload_bytes;
  }
  return s;
}

void run_one(const uint8_t* data, size_t size) {
  const MemFile file(data, size);
  OplogReader r;
  std::string err;
  if (!r.open(file.path(), &err)) return;
  if (!r.scan(&err)) return;
  uint64_t n = 0;
  r.read_all([&n](const oplog::OpEntry*, size_t k) { n += k; }, &err);

  std::FILE* sink = std::fopen("/dev/null", "w");
  if (sink) {
    export_ops_csv(file.path(), sink);
    std::fclose(sink);
  }
  // A rank whose report is plain and whose timeline is this file.
  report::Job job;
  ProcessReport rep;
  rep.host = r.header().meta.host;
  rep.rank = r.header().meta.rank;
  rep.pid = r.header().meta.pid;
  rep.start_mono_ns = r.calib().mono0_ns;
  rep.start_wall_ns = r.calib().real0_ns;
  job.ranks.push_back(report::make_rank(rep));
  job.ranks.back().oplog_path = file.path();
  report::build_job_tables(&job);
  render_perfetto(job);
}

}  // namespace

int oplog(const uint8_t* data, size_t size) {
  run_one(data, size);
  const std::string fixed = with_valid_checksums(data, size);
  if (fixed.compare(0, std::string::npos, reinterpret_cast<const char*>(data), size) != 0)
    run_one(reinterpret_cast<const uint8_t*>(fixed.data()), fixed.size());
  return 0;
}

}  // namespace fabtrace::fuzz
