// The counters CSV written (format in counter_csv.h).
#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <exception>
#include <vector>

#include "common/comma_list.h"
#include "common/counter_csv.h"
#include "common/env.h"
#include "common/rank.h"
#include "common/safe_output.h"
#include "common/version.h"

namespace fabtrace {

bool write_counter_csv(const std::string& path, const CounterCsvHeader& head,
                       const uint64_t* values, uint64_t nrows) {
  std::string why;
  std::FILE* f = create_new_stream(path, &why);
  if (!f) {
    log_line("cannot write NIC counters to %s: %s", path.c_str(), why.c_str());
    return false;
  }
  std::vector<char> iobuf;
  try {
    iobuf.resize(1 << 20);
    std::setvbuf(f, iobuf.data(), _IOFBF, iobuf.size());
  } catch (const std::exception&) {
    // keep stdio's own buffer
  }

  std::fprintf(f, "# %s v%d host=%s rank=%s pid=%ld\n", kCounterCsvFormatName, kCounterCsvVersion,
               output_token(head.host).c_str(), output_token(head.rank).c_str(), head.pid);
  std::fprintf(f,
               "# interval_ms=%" PRIu64 " achieved_mean_ms=%.3f devices=%s counters=%" PRIu64
               " samples=%" PRIu64 " dropped=%" PRIu64 " read_errors=%" PRIu64 "\n",
               head.interval_ms, head.achieved_mean_ms, join_commas(head.devices).c_str(),
               head.counters, head.samples, head.dropped, head.read_errors);
  std::fputs(
      "# clock t_mono_ns=CLOCK_MONOTONIC ns (same clock as every fabtrace output); "
      "wall_ns=CLOCK_REALTIME; *:telemetry_wall_ns=newest telemetry stamp of that device in the "
      "sample\n",
      f);
  std::fprintf(f, "%s%s\n", kCounterWriterPrefix, version());
  for (const CounterCsvHeader::Device& d : head.device_info)
    std::fprintf(f, "# dev %s nic_addr=%s nid=%s\n", d.name.c_str(), d.nic_addr.c_str(),
                 d.nid.c_str());
  std::fputs(join_commas(head.columns).c_str(), f);
  std::fputc('\n', f);

  // Rows: at most 21 characters per value.
  const size_t stride = head.columns.size();
  std::vector<char> line(stride * 21 + 2);
  for (uint64_t i = 0; i < nrows; ++i) {
    const uint64_t* row = values + i * stride;
    char* p = line.data();
    char* const end = line.data() + line.size();
    for (size_t c = 0; c < stride; ++c) {
      if (c) *p++ = ',';
      p = std::to_chars(p, end, row[c]).ptr;
    }
    *p++ = '\n';
    std::fwrite(line.data(), 1, static_cast<size_t>(p - line.data()), f);
  }
  const bool write_failed = std::ferror(f) != 0;
  const int saved = errno;
  const bool close_failed = std::fclose(f) != 0;
  if (write_failed || close_failed) {
    log_line("cannot write NIC counters to %s: %s", path.c_str(),
             std::strerror(write_failed ? saved : errno));
    return false;
  }
  return true;
}

}  // namespace fabtrace
