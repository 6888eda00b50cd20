#include "common/env.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "preload/timeline.h"

namespace fabtrace {
namespace {

constexpr char kVar[] = "FABTRACE_UNIT_TEST_VAR";

class EnvTest : public ::testing::Test {
 protected:
  void SetUp() override { unsetenv(kVar); }
  void TearDown() override { unsetenv(kVar); }

  static void set(const char* value) { ASSERT_EQ(setenv(kVar, value, 1), 0); }

  // Runs f with stderr captured; returns what was written to fd 2.
  template <typename F>
  static std::string stderr_of(F&& f) {
    testing::internal::CaptureStderr();
    f();
    return testing::internal::GetCapturedStderr();
  }
};

// ---- log_line ---------------------------------------------------------------

TEST_F(EnvTest, LogLineFormatsOneLine) {
  const std::string out = stderr_of([] { log_line("hello %d %s", 42, "world"); });
  EXPECT_EQ(out, "[fabtrace] hello 42 world\n");
}

TEST_F(EnvTest, LogLinePreservesErrno) {
  errno = ERANGE;
  const std::string out = stderr_of([] { log_line("x"); });
  EXPECT_EQ(errno, ERANGE);
  EXPECT_EQ(out, "[fabtrace] x\n");
}

TEST_F(EnvTest, LogLineTruncatesLongMessages) {
  const std::string big(5000, 'z');
  const std::string out = stderr_of([&] { log_line("%s", big.c_str()); });
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.rfind("[fabtrace] zzz", 0), 0u);
  EXPECT_EQ(out.back(), '\n');
  EXPECT_EQ(out.find('\n'), out.size() - 1);  // one line
  EXPECT_LT(out.size(), big.size());
  EXPECT_GT(out.size(), 500u);
}

// 13. A value holding a line break split a warning in two.
TEST_F(EnvTest, LogLineEscapesControlCharactersOfValues) {
  set("12\nFAKE LINE\x1b[2J");
  const std::string out = stderr_of([] { (void)env_u64(kVar, 7); });
  EXPECT_EQ(out.find('\n'), out.size() - 1) << out;  // one line
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
  EXPECT_NE(out.find("12\\nFAKE LINE\\x1b[2J"), std::string::npos) << out;
}

// 13. Only white space in FABTRACE_OPS_NIC matched every address and turned
// the per-op timeline on in every rank.
TEST_F(EnvTest, BlankOpsNicIsNoFilter) {
  ASSERT_EQ(setenv("FABTRACE_OPS_NIC", " \t ", 1), 0);
  unsetenv("FABTRACE_OPS_RANKS");
  const TimelineConfig c = Timeline::config_from_env(0);
  unsetenv("FABTRACE_OPS_NIC");
  EXPECT_FALSE(c.on);
  EXPECT_TRUE(c.nic.empty());
}

// ---- env_bool ---------------------------------------------------------------

TEST_F(EnvTest, BoolUnsetOrEmptyIsDefaultSilently) {
  std::string out = stderr_of([] {
    EXPECT_TRUE(env_bool(kVar, true));
    EXPECT_FALSE(env_bool(kVar, false));
  });
  EXPECT_EQ(out, "");
  set("");
  out = stderr_of([] {
    EXPECT_TRUE(env_bool(kVar, true));
    EXPECT_FALSE(env_bool(kVar, false));
  });
  EXPECT_EQ(out, "");
}

TEST_F(EnvTest, BoolAcceptsAllSpellings) {
  for (const char* t : {"1", "on", "ON", "On", "yes", "YES", "true", "True", "TRUE", " yes "}) {
    set(t);
    const std::string out = stderr_of([&] { EXPECT_TRUE(env_bool(kVar, false)) << t; });
    EXPECT_EQ(out, "") << t;
  }
  for (const char* f : {"0", "off", "OFF", "no", "No", "false", "FALSE", "\tfalse"}) {
    set(f);
    const std::string out = stderr_of([&] { EXPECT_FALSE(env_bool(kVar, true)) << f; });
    EXPECT_EQ(out, "") << f;
  }
}

TEST_F(EnvTest, BoolBadValueWarnsOnceAndReturnsDefault) {
  for (const char* bad : {"2", "maybe", "yess", "tru", "-1", "1 0", "onn"}) {
    set(bad);
    std::string out = stderr_of([&] { EXPECT_TRUE(env_bool(kVar, true)) << bad; });
    EXPECT_EQ(out, std::string("[fabtrace] warning: FABTRACE_UNIT_TEST_VAR=") + bad +
                       " is not a boolean (1/0, on/off, yes/no, true/false); using true\n");
    out = stderr_of([&] { EXPECT_FALSE(env_bool(kVar, false)) << bad; });
    EXPECT_EQ(out, std::string("[fabtrace] warning: FABTRACE_UNIT_TEST_VAR=") + bad +
                       " is not a boolean (1/0, on/off, yes/no, true/false); using false\n");
  }
}

// ---- env_u64 ----------------------------------------------------------------

TEST_F(EnvTest, U64UnsetOrEmptyIsDefaultSilently) {
  std::string out = stderr_of([] { EXPECT_EQ(env_u64(kVar, 77), 77u); });
  EXPECT_EQ(out, "");
  set("");
  out = stderr_of([] { EXPECT_EQ(env_u64(kVar, 77, 100, 200), 77u); });
  EXPECT_EQ(out, "");
  set("   ");
  out = stderr_of([] { EXPECT_EQ(env_u64(kVar, 78), 78u); });
  EXPECT_EQ(out, "");
}

TEST_F(EnvTest, U64ParsesDecimalAndSuffixes) {
  struct Case {
    const char* text;
    uint64_t want;
  };
  const Case cases[] = {
      {"0", 0},
      {"7", 7},
      {"007", 7},
      {"123456789", 123456789},
      {"1k", 1024},
      {"1K", 1024},
      {"3m", 3ull << 20},
      {"3M", 3ull << 20},
      {"2g", 2ull << 30},
      {"2G", 2ull << 30},
      {"0k", 0},
      {" 64 ", 64},
      {"18446744073709551615", UINT64_MAX},
      {"17179869183G", 17179869183ull << 30},  // largest that fits with a G suffix
  };
  for (const Case& c : cases) {
    set(c.text);
    const std::string out = stderr_of([&] { EXPECT_EQ(env_u64(kVar, 5), c.want) << c.text; });
    EXPECT_EQ(out, "") << c.text;
  }
}

TEST_F(EnvTest, U64RejectsJunkNegativesAndOverflow) {
  for (const char* bad : {"-1", "-0", "+5", "abc", "12x", "1kb", "1 k", "k", "1.5", "0x10", "1e3",
                          "18446744073709551616", "99999999999999999999999",
                          "17179869184G",  // overflows when scaled
                          "16777216T", "1-2"}) {
    set(bad);
    const std::string out = stderr_of([&] { EXPECT_EQ(env_u64(kVar, 42), 42u) << bad; });
    EXPECT_EQ(out, std::string("[fabtrace] warning: FABTRACE_UNIT_TEST_VAR=") + bad +
                       " is not an unsigned integer (optional k/m/g suffix); using 42\n");
  }
}

TEST_F(EnvTest, U64EnforcesRange) {
  set("64");
  EXPECT_EQ(env_u64(kVar, 8, 1, 64), 64u);
  EXPECT_EQ(env_u64(kVar, 8, 64, 64), 64u);
  set("1");
  EXPECT_EQ(env_u64(kVar, 8, 1, 64), 1u);

  set("65");
  std::string out = stderr_of([] { EXPECT_EQ(env_u64(kVar, 8, 1, 64), 8u); });
  EXPECT_EQ(out,
            "[fabtrace] warning: FABTRACE_UNIT_TEST_VAR=65 is not an integer in [1, 64] "
            "(optional k/m/g suffix); using 8\n");

  set("0");
  out = stderr_of([] { EXPECT_EQ(env_u64(kVar, 8, 1, 64), 8u); });
  EXPECT_EQ(out,
            "[fabtrace] warning: FABTRACE_UNIT_TEST_VAR=0 is not an integer in [1, 64] "
            "(optional k/m/g suffix); using 8\n");

  set("1k");  // the suffix applies before the range check
  out = stderr_of([] { EXPECT_EQ(env_u64(kVar, 8, 1, 1000), 8u); });
  EXPECT_EQ(out,
            "[fabtrace] warning: FABTRACE_UNIT_TEST_VAR=1k is not an integer in [1, 1000] "
            "(optional k/m/g suffix); using 8\n");
  EXPECT_EQ(env_u64(kVar, 8, 1, 1024), 1024u);

  set("3");
  out = stderr_of([] { EXPECT_EQ(env_u64(kVar, 16, 4), 16u); });
  EXPECT_EQ(out,
            "[fabtrace] warning: FABTRACE_UNIT_TEST_VAR=3 is not an integer >= 4 "
            "(optional k/m/g suffix); using 16\n");
}

TEST_F(EnvTest, U64WarningPrintsExactlyOneLinePerCall) {
  set("bogus");
  const std::string out = stderr_of([] {
    env_u64(kVar, 1);
    env_u64(kVar, 1);
  });
  size_t lines = 0;
  for (char c : out) lines += c == '\n';
  EXPECT_EQ(lines, 2u);
}

TEST_F(EnvTest, U64HugeJunkValueIsTruncatedInWarning) {
  const std::string junk(4000, 'q');
  set(junk.c_str());
  const std::string out = stderr_of([] { EXPECT_EQ(env_u64(kVar, 9), 9u); });
  EXPECT_EQ(out.find('\n'), out.size() - 1);
  EXPECT_LT(out.size(), 1024u);
  EXPECT_NE(out.find("using 9\n"), std::string::npos);
}

// ---- env_str ----------------------------------------------------------------

TEST_F(EnvTest, StrReturnsRawValueOrDefault) {
  EXPECT_EQ(env_str(kVar, "dflt"), "dflt");
  EXPECT_EQ(env_str(kVar), "");
  set("  some value ");
  EXPECT_EQ(env_str(kVar, "dflt"), "  some value ");
  set("");
  EXPECT_EQ(env_str(kVar, "dflt"), "");  // set but empty is still a value
}

// ---- env_choice ---------------------------------------------------------------

TEST_F(EnvTest, ChoiceAcceptsAllowedWords) {
  EXPECT_EQ(env_choice(kVar, {"auto", "tsc", "mono"}, "auto"), "auto");
  for (const char* w : {"auto", "tsc", "mono"}) {
    set(w);
    const std::string out = stderr_of([&] {
      EXPECT_EQ(env_choice(kVar, {"auto", "tsc", "mono"}, "auto"), w);
    });
    EXPECT_EQ(out, "");
  }
  set("");
  const std::string out = stderr_of([] {
    EXPECT_EQ(env_choice(kVar, {"auto", "tsc", "mono"}, "mono"), "mono");
  });
  EXPECT_EQ(out, "");
}

TEST_F(EnvTest, ChoiceIsCaseSensitiveAndWarns) {
  for (const char* bad : {"TSC", "Mono", "tscc", "ts", "auto,tsc"}) {
    set(bad);
    const std::string out = stderr_of([&] {
      EXPECT_EQ(env_choice(kVar, {"auto", "tsc", "mono"}, "auto"), "auto");
    });
    EXPECT_EQ(out, std::string("[fabtrace] warning: FABTRACE_UNIT_TEST_VAR=") + bad +
                       " is not one of auto|tsc|mono; using auto\n");
  }
}

}  // namespace
}  // namespace fabtrace
