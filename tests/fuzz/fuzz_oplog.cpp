// An oplog through its reader, the CSV export and the Perfetto trace.
#include <cstdio>
#include <cstring>

#include "common/oplog_file.h"
#include "tests/fuzz/fuzz_targets.h"
#include "userspace/commands.h"
#include "userspace/report/job/job.h"

namespace fabtrace::fuzz {

namespace {

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
  const std::string fixed = with_valid_checksums(data, size, sizeof(oplog::FileHeader));
  if (fixed.compare(0, std::string::npos, reinterpret_cast<const char*>(data), size) != 0)
    run_one(reinterpret_cast<const uint8_t*>(fixed.data()), fixed.size());
  return 0;
}

}  // namespace fabtrace::fuzz
