// The counters CSV (common/counter_csv.h) on its own: a header and rows made
// by hand, without a sampler, read back as they were written.
#include "common/counter_csv.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/unit/scratch_dir.h"

namespace fabtrace {
namespace {

TEST(CounterCsv, HeaderAndRowsReadBackAsWritten) {
  test::ScratchDir dir;
  CounterCsvHeader head;
  head.host = "n07";
  head.rank = kNodeCountersRank;
  head.pid = 31337;
  head.interval_ms = 250;
  head.achieved_mean_ms = 251.25;
  head.devices = {"cxi2", "cxi3"};
  head.device_info = {{"cxi2", "0x2a", "0x7"}, {"cxi3", "?", "?"}};
  head.columns = {kCounterMonoColumn,
                  kCounterWallColumn,
                  std::string("cxi2:") + kTelemetryWallColumn,
                  "cxi2:hni_sts_tx_ok_octets",
                  std::string("cxi3:") + kTelemetryWallColumn,
                  "cxi3:rh:nacks"};
  head.counters = 2;
  head.samples = 2;
  head.dropped = 4;
  head.read_errors = 1;
  // Two rows of six values, the largest a u64 can hold among them.
  const std::vector<uint64_t> values = {10, 20, 30, 40, 50, 60, 11, 21, 31, UINT64_MAX, 0, 61};
  const std::string path = dir.path("c.csv");
  ASSERT_TRUE(write_counter_csv(path, head, values.data(), 2));
  // The file is new: a second write to the same name is refused.
  EXPECT_FALSE(write_counter_csv(path, head, values.data(), 2));

  const std::string text = test::read_file_bytes(path);
  EXPECT_EQ(text.rfind("# fabtrace-counters v1 host=n07 rank=node pid=31337\n", 0), 0u) << text;

  CounterSeries cs;
  std::string err;
  ASSERT_TRUE(read_counter_csv(path, &cs, &err)) << err;
  EXPECT_EQ(cs.host, head.host);
  EXPECT_EQ(cs.rank, head.rank);
  EXPECT_EQ(cs.pid, head.pid);
  EXPECT_EQ(cs.interval_ms, head.interval_ms);
  EXPECT_DOUBLE_EQ(cs.achieved_mean_ms, head.achieved_mean_ms);  // 3 decimals hold it
  EXPECT_EQ(cs.devices, head.devices);
  EXPECT_EQ(cs.counters, head.counters);
  EXPECT_EQ(cs.samples, head.samples);
  EXPECT_EQ(cs.dropped, head.dropped);
  EXPECT_EQ(cs.read_errors, head.read_errors);
  ASSERT_EQ(cs.device_info.size(), 2u);
  for (size_t d = 0; d < 2; ++d) {
    EXPECT_EQ(cs.device_info[d].name, head.device_info[d].name);
    EXPECT_EQ(cs.device_info[d].nic_addr, head.device_info[d].nic_addr);
    EXPECT_EQ(cs.device_info[d].nid, head.device_info[d].nid);
  }
  EXPECT_EQ(cs.columns, head.columns);
  ASSERT_EQ(cs.rows.size(), 2u);
  for (size_t r = 0; r < 2; ++r)
    EXPECT_EQ(cs.rows[r], std::vector<uint64_t>(values.begin() + static_cast<long>(r * 6),
                                                values.begin() + static_cast<long>(r * 6 + 6)));
  EXPECT_FALSE(cs.truncated);
  EXPECT_EQ(cs.column("cxi3:rh:nacks"), 5);
}

TEST(CounterCsv, AnotherFormatOrVersionIsRefused) {
  const std::string rest = "t_mono_ns,wall_ns\n1,2\n";
  CounterSeries cs;
  std::string err;
  EXPECT_FALSE(parse_counter_csv("# fabtrace-counters v2 host=h\n" + rest, "x.csv", &cs, &err));
  EXPECT_NE(err.find("unsupported version (v2)"), std::string::npos) << err;
  EXPECT_FALSE(parse_counter_csv("# fabtrace-other v1\n" + rest, "x.csv", &cs, &err));
  EXPECT_NE(err.find("not a fabtrace-counters file"), std::string::npos) << err;
  EXPECT_FALSE(
      parse_counter_csv("# fabtrace-counters v1\nwall_ns,t_mono_ns\n1,2\n", "x.csv", &cs, &err));
  EXPECT_NE(err.find("header row does not start with t_mono_ns,wall_ns"), std::string::npos) << err;
  ASSERT_TRUE(parse_counter_csv("# fabtrace-counters v1\n" + rest, "x.csv", &cs, &err)) << err;
  EXPECT_EQ(cs.rows, (std::vector<std::vector<uint64_t>>{{1, 2}}));
}

}  // namespace
}  // namespace fabtrace
