// CounterSampler::write_csv: the series stored so far, as the counters CSV
// (format in cxi_counters.h).
#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <exception>
#include <vector>

#include "common/comma_list.h"
#include "common/cxi_counters.h"
#include "common/cxi_sampler_state.h"
#include "common/env.h"
#include "common/rank.h"
#include "common/safe_output.h"

namespace fabtrace {

// ---- CSV output -----------------------------------------------------------------

bool CounterSampler::write_csv(const std::string& path, const std::string& host,
                               const std::string& rank, long pid) const {
  const State* s = ready();
  if (!s) return false;
  const uint64_t n = s->count.load(std::memory_order_acquire);
  const uint64_t dropped_now = s->dropped.load(std::memory_order_relaxed);
  const uint64_t errors_now = s->read_errors.load(std::memory_order_relaxed);
  const double mean_ms = n >= 2 ? static_cast<double>(s->base[(n - 1) * s->stride] - s->base[0]) /
                                      1e6 / static_cast<double>(n - 1)
                                : 0.0;

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

  std::fprintf(f, "# fabtrace-counters v1 host=%s rank=%s pid=%ld\n", output_token(host).c_str(),
               output_token(rank).c_str(), pid);
  std::fprintf(f,
               "# interval_ms=%" PRIu64
               " achieved_mean_ms=%.3f devices=%s counters=%zu samples=%" PRIu64 " dropped=%" PRIu64
               " read_errors=%" PRIu64 "\n",
               s->interval_ms, mean_ms, join_commas(s->devices).c_str(), s->labels.size(), n,
               dropped_now, errors_now);
  std::fputs(
      "# clock t_mono_ns=CLOCK_MONOTONIC ns (same clock as every fabtrace output); "
      "wall_ns=CLOCK_REALTIME; *:telemetry_wall_ns=newest telemetry stamp of that device in the "
      "sample\n",
      f);
  for (size_t d = 0; d < s->devices.size(); ++d)
    std::fprintf(f, "# dev %s nic_addr=%s nid=%s\n", s->devices[d].c_str(),
                 s->device_info[d].nic_addr.c_str(), s->device_info[d].nid.c_str());
  std::fputs(join_commas(s->columns).c_str(), f);
  std::fputc('\n', f);

  // Rows: at most 21 characters per value.
  std::vector<char> line(s->stride * 21 + 2);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t* row = s->base + i * s->stride;
    char* p = line.data();
    char* const end = line.data() + line.size();
    for (size_t c = 0; c < s->stride; ++c) {
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
