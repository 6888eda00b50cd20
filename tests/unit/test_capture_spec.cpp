// FABTRACE_OPS_WINDOW and FABTRACE_OPS_SIGNAL: every accepted form, and what is refused.
#include "common/capture_spec.h"

#include <gtest/gtest.h>
#include <signal.h>

namespace fabtrace {
namespace {

CaptureSpec parsed(const std::string& v) {
  CaptureSpec w;
  std::string why;
  EXPECT_TRUE(parse_capture_spec(v, &w, &why)) << v << ": " << why;
  return w;
}

TEST(CaptureSpec, Forms) {
  EXPECT_EQ(parsed("").kind, CaptureSpec::kWhole);
  EXPECT_EQ(parsed("all").kind, CaptureSpec::kWhole);
  const CaptureSpec t = parsed("2.5:1");
  EXPECT_EQ(t.kind, CaptureSpec::kTime);
  EXPECT_DOUBLE_EQ(t.start_s, 2.5);
  EXPECT_DOUBLE_EQ(t.duration_s, 1.0);
  EXPECT_EQ(t.text(), "2.5:1");
  const CaptureSpec open = parsed("30");
  EXPECT_DOUBLE_EQ(open.start_s, 30);
  EXPECT_LT(open.duration_s, 0);
  EXPECT_EQ(open.text(), "30");
  const CaptureSpec m = parsed("mark:iteration 12");
  EXPECT_EQ(m.kind, CaptureSpec::kMark);
  EXPECT_EQ(m.mark, "iteration 12");
  EXPECT_EQ(m.text(), "mark:iteration 12");
  EXPECT_EQ(parsed("mark:a:b").mark, "a:b");  // the name is the rest, colons included
  EXPECT_EQ(parsed("signal").kind, CaptureSpec::kSignal);
}

TEST(CaptureSpec, BadValuesAreRefused) {
  for (const char* v :
       {"-1", "abc", "1:", "1:0", "1:-2", ":3", "mark:", "nan", "inf", "0x10", "1e99", "2 s"}) {
    CaptureSpec w;
    std::string why;
    EXPECT_FALSE(parse_capture_spec(v, &w, &why)) << v;
    EXPECT_FALSE(why.empty()) << v;
  }
  CaptureSpec w;
  std::string why;
  EXPECT_FALSE(parse_capture_spec("mark:" + std::string(300, 'x'), &w, &why));
}

TEST(CaptureSpec, Signals) {
  std::string why;
  EXPECT_EQ(parse_capture_signal("USR2", &why), SIGUSR2);
  EXPECT_EQ(parse_capture_signal("SIGUSR1", &why), SIGUSR1);
  EXPECT_EQ(parse_capture_signal("none", &why), 0);
  EXPECT_EQ(parse_capture_signal("off", &why), 0);
  EXPECT_EQ(parse_capture_signal("40", &why), 40);
  for (const char* bad : {"KILL", "SIGSTOP", "SEGV", "9", "65", "USR3", "-1"})
    EXPECT_EQ(parse_capture_signal(bad, &why), -1) << bad;
  EXPECT_EQ(capture_signal_name(SIGUSR2), "SIGUSR2");
  EXPECT_EQ(capture_signal_name(40), "signal 40");
}

}  // namespace
}  // namespace fabtrace
