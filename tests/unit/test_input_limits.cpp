// common/input_limits and common/printable: the bounds every reader applies,
// and text from files made safe for a terminal.
#include "common/input_limits.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "common/clock.h"
#include "common/printable.h"
#include "fixtures/synthetic_job.h"

namespace fabtrace {
namespace {

std::string temp_dir() { return test::make_fixture_dir("limits"); }

TEST(InputLimits, JsonDepthIsCountedOutsideStrings) {
  const std::string ok = "{\"a\":[[1]],\"s\":\"[[[[[[[[\"}";
  EXPECT_TRUE(json_depth_within(ok.data(), ok.size(), 3));
  EXPECT_FALSE(json_depth_within(ok.data(), ok.size(), 2));
  const std::string deep(70000, '[');
  EXPECT_FALSE(json_depth_within(deep.data(), deep.size(), limits::kMaxJsonDepth));
  const std::string escaped = "\"\\\"[[[[\"";  // an escaped quote does not end the string
  EXPECT_TRUE(json_depth_within(escaped.data(), escaped.size(), 0));
}

TEST(InputLimits, BoundedReadRefusesLargeAndSpecialFiles) {
  const std::string dir = temp_dir();
  const std::string big = dir + "/big";
  const int fd = ::open(big.c_str(), O_WRONLY | O_CREAT, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 2ll << 30), 0);  // 2 GiB, sparse: costs nothing
  ::close(fd);
  std::string text, why;
  EXPECT_FALSE(read_bounded_file(big, 1 << 20, &text, &why));
  EXPECT_NE(why.find("too large"), std::string::npos) << why;
  EXPECT_TRUE(text.empty());

  // A FIFO with no writer would block open(2) and read(2) forever.
  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(read_bounded_file(fifo, 1 << 20, &text, &why));
  EXPECT_NE(why.find("not a regular file"), std::string::npos) << why;
  EXPECT_FALSE(read_bounded_file("/dev/zero", 1 << 20, &text, &why));
}

TEST(InputLimits, CountsFromDoublesAndSaturatingSums) {
  uint64_t v = 0;
  EXPECT_TRUE(double_to_count(12.0, &v));
  EXPECT_EQ(v, 12u);
  EXPECT_FALSE(double_to_count(1e20, &v));
  EXPECT_FALSE(double_to_count(-1.0, &v));
  EXPECT_FALSE(double_to_count(std::nan(""), &v));
  EXPECT_EQ(sat_add(UINT64_MAX - 1, 5), UINT64_MAX);
  EXPECT_EQ(sat_mul(uint64_t{1} << 40, uint64_t{1} << 40), UINT64_MAX);
}

TEST(InputLimits, CheckedTickConversion) {
  Calibration c;
  c.ns_per_tick = 0.5;
  c.tick0 = 1000;
  c.mono0_ns = 5000;
  int64_t t = 0;
  ASSERT_TRUE(c.mono_ns_checked(3000, &t));
  EXPECT_EQ(t, 6000);
  c.ns_per_tick = 1e300;  // what a hostile calibration may claim
  EXPECT_FALSE(c.valid_from_file());
  EXPECT_FALSE(c.mono_ns_checked(3000, &t));
  c.ns_per_tick = 1.0;
  c.mono0_ns = INT64_MAX;
  EXPECT_FALSE(c.valid_from_file());
  EXPECT_FALSE(c.mono_ns_checked(3000, &t));
  c.mono0_ns = 0;
  EXPECT_FALSE(c.mono_ns_checked(UINT64_MAX, &t));  // before the anchor: negative
}

TEST(Printable, ControlCharactersAreEscaped) {
  EXPECT_EQ(printable("node1"), "node1");
  EXPECT_EQ(printable("a\nb"), "a\\nb");
  EXPECT_EQ(printable("\x1b[31mred\a"), "\\x1b[31mred\\x07");
  EXPECT_EQ(printable("\xc2\x9b"
                      "2J"),
            "\\xc2\\x9b2J");                       // C1 CSI as UTF-8
  EXPECT_EQ(printable("h\xc3\xa9"), "h\xc3\xa9");  // other UTF-8 is kept
  char buf[8];
  EXPECT_EQ(printable_into(buf, sizeof(buf), "ab\ncd", 5), 6u);
  EXPECT_STREQ(buf, "ab\\ncd");
  EXPECT_EQ(printable_into(buf, 4, "a\x1b", 2), 1u);  // an escape that does not fit is left out
  EXPECT_STREQ(buf, "a");
}

}  // namespace
}  // namespace fabtrace
