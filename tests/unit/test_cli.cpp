// The one command-line parser (userspace/cli/cli.h) on a command declared
// here: the traced command split off after `--` (or, for a command that allows
// it, at the first argument that is no option), numbers in decimal only,
// --help, and a wrong command line told in one line with exit code 2.
#include "userspace/cli/cli.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace fabtrace::cli {
namespace {

struct Parsed {
  std::string dir;
  bool flag = false;
  std::vector<uint64_t> pids;
  double ratio = 0;
  std::vector<std::string> command;
  int runs = 0;
};

// `t [-d DIR] [--flag] [--pid N]... [--] CMD...`, and `u [--] CMD` (only after --).
int parse(const std::vector<std::string>& args, Parsed* p, std::string* err = nullptr) {
  Cli cli;
  CLI::App* t = cli.add_command(cli.app(), "t", "a traced command", [p] { return ++p->runs, 0; });
  t->add_option("-d,--dir", p->dir, "a directory")->type_name("DIR");
  t->add_flag("--flag", p->flag, "a flag");
  add_number(
      t, "--pid", "a pid", 1, 100, [p](uint64_t v) { p->pids.push_back(v); }, true);
  add_ratio(t, "--ratio", "a ratio", 1, 50, [p](double v) { p->ratio = v; });
  cli.add_traced_command(t, &p->command, true);
  CLI::App* u = cli.add_command(cli.app(), "u", "after -- only", [p] { return ++p->runs, 0; });
  u->add_flag("--flag", p->flag, "a flag");
  cli.add_traced_command(u, &p->command, false);
  testing::internal::CaptureStderr();
  testing::internal::CaptureStdout();
  const int rc = cli.run(args);
  testing::internal::GetCapturedStdout();
  const std::string e = testing::internal::GetCapturedStderr();
  if (err) *err = e;
  return rc;
}

TEST(Cli, TheTracedCommandIsSplitOff) {
  Parsed p;
  ASSERT_EQ(parse({"t", "--flag", "-d", "out", "--", "app", "-x", "--flag"}, &p), 0);
  EXPECT_TRUE(p.flag);
  EXPECT_EQ(p.dir, "out");
  EXPECT_EQ(p.command, (std::vector<std::string>{"app", "-x", "--flag"}));
  EXPECT_EQ(p.runs, 1);

  // Without --: from the first argument that is neither an option nor its value.
  p = Parsed();
  ASSERT_EQ(parse({"t", "--dir", "app", "--pid", "7", "app", "--help", "--", "y"}, &p), 0);
  EXPECT_EQ(p.dir, "app");
  EXPECT_EQ(p.pids, std::vector<uint64_t>{7});
  EXPECT_EQ(p.command, (std::vector<std::string>{"app", "--help", "--", "y"}));

  p = Parsed();
  ASSERT_EQ(parse({"t", "--dir=a", "--pid", "1", "--pid", "2", "app"}, &p), 0);
  EXPECT_EQ(p.dir, "a");
  EXPECT_EQ(p.pids, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(p.command, std::vector<std::string>{"app"});

  // Only after -- for u: a bare word is an unexpected argument.
  p = Parsed();
  ASSERT_EQ(parse({"u", "--flag", "--", "app"}, &p), 0);
  EXPECT_EQ(p.command, std::vector<std::string>{"app"});
  std::string err;
  EXPECT_EQ(parse({"u", "app"}, &p, &err), kUsageError);
  EXPECT_EQ(err, "fabtrace u: unexpected argument 'app' (fabtrace u --help)\n");
}

// A ratio (fabtrace diff --threshold 1.2): digits, a point, at most 6
// decimals; nothing strtod would also take.
TEST(Cli, RatiosInDecimalOnly) {
  Parsed p;
  std::string err;
  ASSERT_EQ(parse({"t", "--ratio", "1.25", "app"}, &p), 0);
  EXPECT_DOUBLE_EQ(p.ratio, 1.25);
  ASSERT_EQ(parse({"t", "--ratio", "3", "app"}, &p), 0);
  EXPECT_DOUBLE_EQ(p.ratio, 3);
  ASSERT_EQ(parse({"t", "--ratio", "1.000001", "app"}, &p), 0);
  EXPECT_DOUBLE_EQ(p.ratio, 1.000001);
  ASSERT_EQ(parse({"t", "--ratio", "01.05", "app"}, &p), 0);
  EXPECT_DOUBLE_EQ(p.ratio, 1.05);
  for (const char* v : {"1.", ".5", "-1.2", "+1.2", "1e1", "1.2.3", "0x2", " 2", "2 ", "inf", "nan",
                        "1.0000001", "0.99", "50.1", ""})
    EXPECT_EQ(parse({"t", "--ratio", v, "app"}, &p), kUsageError) << v;
  EXPECT_EQ(parse({"t", "--ratio", "1e1", "app"}, &p, &err), kUsageError);
  EXPECT_EQ(err,
            "fabtrace t: --ratio: takes a number from 1 to 50 (digits, a point, at most 6 "
            "decimals), not '1e1' (fabtrace t --help)\n");
}

TEST(Cli, AWrongCommandLineIsOneLineAndExitCode2) {
  Parsed p;
  std::string err;
  EXPECT_EQ(parse({"t", "--nope", "app"}, &p, &err), kUsageError);
  EXPECT_EQ(err, "fabtrace t: unknown option --nope (fabtrace t --help)\n");
  EXPECT_EQ(parse({"t", "--pid", "0x10", "app"}, &p, &err), kUsageError);
  EXPECT_EQ(err,
            "fabtrace t: --pid: takes a whole number from 1 to 100, not '0x10' (fabtrace t "
            "--help)\n");
  // strtoull would take these: a sign (-1 as 2^64-1), a blank, a base prefix.
  for (const char* v : {"-1", " 5", "5 ", "+5", "0x5", "101", ""})
    EXPECT_EQ(parse({"t", "--pid", v, "app"}, &p), kUsageError) << v;
  EXPECT_EQ(p.runs, 0);
  // Decimal: 010 is ten (strtoull's base 0 reads eight).
  ASSERT_EQ(parse({"t", "--pid", "010", "app"}, &p), 0);
  EXPECT_EQ(p.pids, std::vector<uint64_t>{10});
  p = Parsed();
  EXPECT_EQ(parse({"t", "--dir"}, &p, &err), kUsageError);
  EXPECT_EQ(err, "fabtrace t: --dir needs a value (fabtrace t --help)\n");
  EXPECT_EQ(parse({"nope"}, &p, &err), kUsageError);
  EXPECT_EQ(err, "fabtrace: unknown command 'nope' (fabtrace --help)\n");
  EXPECT_EQ(p.runs, 0);
  // --help: exit 0, nothing run.
  EXPECT_EQ(parse({"t", "--help"}, &p), 0);
  EXPECT_EQ(p.runs, 0);
}

}  // namespace
}  // namespace fabtrace::cli
