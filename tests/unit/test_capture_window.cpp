// FABTRACE_OPS_WINDOW and FABTRACE_OPS_SIGNAL: every accepted form, and what is refused.
#include "common/capture_window.h"

#include <gtest/gtest.h>
#include <signal.h>

namespace fabtrace {
namespace {

CaptureWindow parsed(const std::string& v) {
  CaptureWindow w;
  std::string why;
  EXPECT_TRUE(parse_capture_window(v, &w, &why)) << v << ": " << why;
  return w;
}

TEST(CaptureWindow, Forms) {
  EXPECT_EQ(parsed("").kind, CaptureWindow::kWhole);
  EXPECT_EQ(parsed("all").kind, CaptureWindow::kWhole);
  const CaptureWindow t = parsed("2.5:1");
  EXPECT_EQ(t.kind, CaptureWindow::kTime);
  EXPECT_DOUBLE_EQ(t.start_s, 2.5);
  EXPECT_DOUBLE_EQ(t.duration_s, 1.0);
  EXPECT_EQ(t.text(), "2.5:1");
  const CaptureWindow open = parsed("30");
  EXPECT_DOUBLE_EQ(open.start_s, 30);
  EXPECT_LT(open.duration_s, 0);
  EXPECT_EQ(open.text(), "30");
  const CaptureWindow m = parsed("mark:iteration 12");
  EXPECT_EQ(m.kind, CaptureWindow::kMark);
  EXPECT_EQ(m.mark, "iteration 12");
  EXPECT_EQ(m.text(), "mark:iteration 12");
  EXPECT_EQ(parsed("mark:a:b").mark, "a:b");  // the name is the rest, colons included
  EXPECT_EQ(parsed("signal").kind, CaptureWindow::kSignal);
}

TEST(CaptureWindow, BadValuesAreRefused) {
  for (const char* v :
       {"-1", "abc", "1:", "1:0", "1:-2", ":3", "mark:", "nan", "inf", "0x10", "1e99", "2 s"}) {
    CaptureWindow w;
    std::string why;
    EXPECT_FALSE(parse_capture_window(v, &w, &why)) << v;
    EXPECT_FALSE(why.empty()) << v;
  }
  CaptureWindow w;
  std::string why;
  EXPECT_FALSE(parse_capture_window("mark:" + std::string(300, 'x'), &w, &why));
}

TEST(CaptureWindow, Signals) {
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
