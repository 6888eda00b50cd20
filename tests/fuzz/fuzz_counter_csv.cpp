// A NIC counter CSV through its reader and the reduction for the plots.
#include "common/counter_csv.h"
#include "tests/fuzz/fuzz_targets.h"
#include "userspace/report/job/report_reader.h"

namespace fabtrace::fuzz {

int counter_csv(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  CounterSeries cs;
  std::string err;
  if (!parse_counter_csv(text, "fuzz.csv", &cs, &err)) return 0;
  std::vector<report::CounterTrack> tracks;
  // Wall offsets as a rank's anchors can make them: none, and both extremes.
  for (int64_t offset : {int64_t{0}, int64_t{1} << 61, -(int64_t{1} << 61)})
    report::reduce_counter_series(cs, offset, 4, 400, &tracks);
  return 0;
}

}  // namespace fabtrace::fuzz
