// What a stall or slow-op window means in words, off-CPU causes, syscall names
// and durations (common/kernel_explain.*), on hand-built records.
#include "common/kernel_explain.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "tests/unit/expect_each.h"

namespace fabtrace {
namespace {

constexpr uint64_t kMs = 1000000;
constexpr uint64_t kT0 = 5000 * kMs;

ft_breakdown breakdown(uint64_t len_ns) {
  ft_breakdown w{};
  w.start = kT0;
  w.end = kT0 + len_ns;
  return w;
}

void set_top(ft_breakdown* w, int i, uint32_t pid, uint64_t ns, const char* comm) {
  w->top[i].pid = pid;
  w->top[i].ns = ns;
  std::memset(w->top[i].comm, 0, FT_COMM_LEN);
  std::strncpy(w->top[i].comm, comm, FT_COMM_LEN);
}

TEST(KernelExplain, PreemptedByANamedTask) {
  ft_breakdown w = breakdown(50200000);
  w.runnable_ns = 48100000;
  w.on_cpu_ns = 2100000;
  set_top(&w, 0, 4312, 48100000, "stress-ng");
  EXPECT_EQ(breakdown_verdict(w), "preempted by stress-ng[4312] for 48.1 of 50.2 ms");

  // A second task that ran a fifth of the window or more, faults, migrations.
  set_top(&w, 1, 4313, 12 * kMs, "kworker/3:1");
  w.faults = 120;
  w.migrations = 2;
  EXPECT_EQ(breakdown_verdict(w),
            "preempted by stress-ng[4312] for 48.1 of 50.2 ms; also kworker/3:1[4313] 12.0 ms; "
            "120 page faults; 2 CPU migrations");
  // Under a fifth: not named.
  w.top[1].ns = 10 * kMs;
  w.faults = w.migrations = 0;
  EXPECT_EQ(breakdown_verdict(w), "preempted by stress-ng[4312] for 48.1 of 50.2 ms");
}

TEST(KernelExplain, RunnableWithoutATaskAndUnprintableNames) {
  ft_breakdown w = breakdown(20 * kMs);
  w.runnable_ns = 15 * kMs;
  w.on_cpu_ns = 5 * kMs;
  EXPECT_EQ(breakdown_verdict(w), "runnable, waiting for a CPU for 15.0 of 20.0 ms; on CPU 5.0 ms");
  set_top(&w, 0, 77, 15 * kMs,
          "a\x01\x7f"
          "b");
  EXPECT_EQ(breakdown_verdict(w), "preempted by a??b[77] for 15.0 of 20.0 ms; on CPU 5.0 ms");
  set_top(&w, 0, 78, 15 * kMs, "");
  EXPECT_EQ(breakdown_verdict(w), "preempted by ?[78] for 15.0 of 20.0 ms; on CPU 5.0 ms");
  // A comm that fills the field, without a NUL.
  std::memset(w.top[0].comm, 'x', FT_COMM_LEN);
  EXPECT_EQ(breakdown_verdict(w), "preempted by " + std::string(FT_COMM_LEN, 'x') +
                                      "[78] for 15.0 of 20.0 ms; on CPU 5.0 ms");
}

// One window with nothing but the times it holds (no named task, no flags),
// and the verdict they make: the largest part leads, a second part large
// enough follows.
using Ns = decltype(ft_breakdown::on_cpu_ns);
struct VerdictCase {
  const char* name;
  uint64_t len_ns;
  std::vector<std::pair<Ns ft_breakdown::*, uint64_t>> times;
  const char* verdict;
};

class BreakdownVerdict : public ::testing::TestWithParam<VerdictCase> {};

TEST_P(BreakdownVerdict, NamesWhatTheWindowWasSpentOn) {
  const VerdictCase& c = GetParam();
  ft_breakdown w = breakdown(c.len_ns);
  for (const auto& t : c.times) w.*t.first = t.second;
  EXPECT_EQ(breakdown_verdict(w), c.verdict);
}

INSTANTIATE_TEST_SUITE_P(
    KernelExplain, BreakdownVerdict,
    ::testing::Values(
        VerdictCase{"Stopped",
                    200400000,
                    {{&ft_breakdown::stopped_ns, 200 * kMs}, {&ft_breakdown::on_cpu_ns, 400000}},
                    "stopped (SIGSTOP or a debugger) for 200.0 of 200.4 ms"},
        VerdictCase{"Futex",
                    10 * kMs,
                    {{&ft_breakdown::futex_ns, 9800000}, {&ft_breakdown::on_cpu_ns, 200000}},
                    "blocked in futex for 9.8 of 10.0 ms"},
        VerdictCase{"Disk",
                    30 * kMs,
                    {{&ft_breakdown::disk_ns, 20 * kMs}, {&ft_breakdown::on_cpu_ns, 10 * kMs}},
                    "in uninterruptible sleep (I/O or page-in) for 20.0 of 30.0 ms; on CPU "
                    "10.0 ms"},
        VerdictCase{"Nanosleep",
                    10 * kMs,
                    {{&ft_breakdown::nanosleep_ns, 9 * kMs}, {&ft_breakdown::on_cpu_ns, 1 * kMs}},
                    "sleeping (nanosleep) for 9.0 of 10.0 ms"},
        VerdictCase{"SleepThenFutex",
                    10 * kMs,
                    {{&ft_breakdown::sleep_ns, 6 * kMs},
                     {&ft_breakdown::futex_ns, 3 * kMs},
                     {&ft_breakdown::on_cpu_ns, 1 * kMs}},
                    "blocked in a sleeping syscall for 6.0 of 10.0 ms; blocked in futex 3.0 ms"},
        VerdictCase{"CauseNotSeen",
                    10 * kMs,
                    {{&ft_breakdown::other_ns, 10 * kMs}},
                    "off CPU (cause not seen) for 10.0 of 10.0 ms"},
        VerdictCase{"OnCpu",
                    50 * kMs,
                    {{&ft_breakdown::on_cpu_ns, 49900000}},
                    "on CPU for 49.9 of 50.0 ms (running, not polling)"},
        // IRQ and softirq time is inside on-CPU time; here it dominates.
        VerdictCase{"InterruptsInsideOnCpu",
                    10 * kMs,
                    {{&ft_breakdown::on_cpu_ns, 10 * kMs},
                     {&ft_breakdown::irq_ns, 6 * kMs},
                     {&ft_breakdown::softirq_ns, 2 * kMs}},
                    "in interrupt handlers on its CPU for 8.0 of 10.0 ms; on CPU 2.0 ms"},
        // IRQs beyond the on-CPU time (separate histories): on CPU counts as 0.
        VerdictCase{"InterruptsBeyondOnCpu",
                    10 * kMs,
                    {{&ft_breakdown::on_cpu_ns, 1 * kMs},
                     {&ft_breakdown::irq_ns, 3 * kMs},
                     {&ft_breakdown::runnable_ns, 9 * kMs}},
                    "runnable, waiting for a CPU for 9.0 of 10.0 ms; in interrupt handlers on "
                    "its CPU 3.0 ms"}),
    [](const ::testing::TestParamInfo<VerdictCase>& i) { return std::string(i.param.name); });

TEST(KernelExplain, HistoryNotes) {
  ft_breakdown w = breakdown(50 * kMs);
  w.futex_ns = 40 * kMs;
  w.on_cpu_ns = 10 * kMs;
  const std::string base = "blocked in futex for 40.0 of 50.0 ms; on CPU 10.0 ms";
  for (uint32_t f : {FT_WIN_PARTIAL_OFF, FT_WIN_PARTIAL_IRQ, FT_WIN_PARTIAL_FAULT}) {
    w.flags = f;
    EXPECT_EQ(breakdown_verdict(w),
              base + " (the kernel's history did not reach the window's start)")
        << f;
  }
  // What the kernel fills in for a thread it had no state for: all on CPU.
  w = breakdown(5 * kMs);
  w.on_cpu_ns = 5 * kMs;
  w.flags = FT_WIN_UNKNOWN_THREAD | FT_WIN_PARTIAL_OFF | FT_WIN_PARTIAL_IRQ | FT_WIN_PARTIAL_FAULT;
  EXPECT_EQ(breakdown_verdict(w),
            "on CPU for 5.0 of 5.0 ms (running, not polling) (the kernel did not know this "
            "thread)");
}

TEST(KernelExplain, BreakdownParts) {
  ft_breakdown w = breakdown(100);
  w.on_cpu_ns = 1;
  w.runnable_ns = 2;
  w.futex_ns = 3;
  w.sleep_ns = 4;
  w.nanosleep_ns = 5;
  w.disk_ns = 6;
  w.stopped_ns = 7;
  w.other_ns = 8;
  w.irq_ns = 9;
  w.softirq_ns = 10;
  const std::vector<BreakdownPart> parts = breakdown_parts(w);
  const char* const names[] = {"on-cpu", "runnable", "futex", "sleep", "nanosleep",
                               "disk",   "stopped",  "other", "irq",   "softirq"};
  ASSERT_EQ(parts.size(), 10u);
  for (size_t i = 0; i < parts.size(); ++i) {
    EXPECT_STREQ(parts[i].name, names[i]);
    EXPECT_EQ(parts[i].ns, i + 1);
  }
}

ft_offcpu offcpu(uint8_t kind, int32_t syscall) {
  ft_offcpu r{};
  r.off_kind = kind;
  r.syscall = syscall;
  return r;
}

TEST(KernelExplain, OffCpuCauses) {
  EXPECT_EQ(offcpu_cause(offcpu(FT_OFF_PREEMPTED, -1)), "preempted");
  EXPECT_EQ(offcpu_cause(offcpu(FT_OFF_STOPPED, -1)), "stopped");
  EXPECT_EQ(offcpu_cause(offcpu(FT_OFF_DISK, 0)), "disk");
  EXPECT_EQ(offcpu_cause(offcpu(FT_OFF_OTHER, -1)), "other");
  EXPECT_EQ(offcpu_cause(offcpu(0, -1)), "other");
  EXPECT_EQ(offcpu_cause(offcpu(99, 202)), "other");
  EXPECT_EQ(offcpu_cause(offcpu(FT_OFF_SLEEP, -1)), "sleep");
  EXPECT_EQ(offcpu_cause(offcpu(FT_OFF_SLEEP, 100000)), "sleep:syscall 100000");
#if defined(__x86_64__)
  EXPECT_EQ(offcpu_cause(offcpu(FT_OFF_SLEEP, 202)), "futex");
  EXPECT_EQ(offcpu_cause(offcpu(FT_OFF_SLEEP, 449)), "futex");
  EXPECT_EQ(offcpu_cause(offcpu(FT_OFF_SLEEP, 232)), "sleep:epoll_wait");
  EXPECT_EQ(offcpu_cause(offcpu(FT_OFF_SLEEP, 35)), "sleep:nanosleep");
  ft_offcpu piped = offcpu(FT_OFF_SLEEP, 0);
  piped.wait_on = FT_ON_PIPE;
  EXPECT_EQ(offcpu_cause(piped), "sleep:read(pipe)");
  piped.syscall = 47;
  piped.wait_on = FT_ON_SOCKET;
  EXPECT_EQ(offcpu_cause(piped), "sleep:recvmsg(socket)");
#endif
}

// A thread blocked in a sleeping syscall is named by it and by what it waited
// on; what the named syscalls do not hold of the sleep stays generic.
TEST(KernelExplain, SleepingSyscallsNamed) {
  ft_breakdown w = breakdown(200 * kMs);
  w.sleep_ns = 190 * kMs;
  w.on_cpu_ns = 10 * kMs;
  w.sleep_calls[0] = {190 * kMs, 0, FT_ON_PIPE};
#if defined(__x86_64__)
  EXPECT_EQ(breakdown_verdict(w), "blocked in read (pipe) for 190.0 of 200.0 ms");
  w.sleep_calls[0] = {120 * kMs, 232, FT_ON_NONE};
  w.sleep_calls[1] = {50 * kMs, 45, FT_ON_SOCKET};
  EXPECT_EQ(breakdown_verdict(w),
            "blocked in epoll_wait for 120.0 of 200.0 ms; blocked in recvfrom (socket) 50.0 ms");
  w.sleep_calls[0] = {20 * kMs, 1, FT_ON_FILE};
  w.sleep_calls[1] = {};
  EXPECT_EQ(breakdown_verdict(w), "blocked in a sleeping syscall for 170.0 of 200.0 ms");
#endif
}

// The page faults of a window: a count, "about" one where a burst over an edge
// was prorated, "at least" one where the history did not reach the start.
TEST(KernelExplain, PageFaultCountsSayWhatTheyAre) {
  ft_breakdown w = breakdown(50 * kMs);
  w.on_cpu_ns = 50 * kMs;
  w.faults = 131072;
  EXPECT_EQ(page_faults_text(w), "131072 page faults");
  EXPECT_STREQ(faults_bound(w), "exact");
  EXPECT_NE(breakdown_verdict(w).find("; 131072 page faults"), std::string::npos);
  w.flags = FT_WIN_FAULTS_PRORATED;
  EXPECT_EQ(page_faults_text(w), "about 131072 page faults");
  EXPECT_STREQ(faults_bound(w), "about");
  w.flags = FT_WIN_PARTIAL_FAULT | FT_WIN_FAULTS_PRORATED;
  EXPECT_EQ(page_faults_text(w), "at least 131072 page faults");
  EXPECT_STREQ(faults_bound(w), "at_least");
  EXPECT_NE(breakdown_verdict(w).find("; at least 131072 page faults"), std::string::npos);
}

TEST(KernelExplain, SyscallNames) {
  test::expect_each<int32_t, std::string>(syscall_name,
                                          {{-1, ""}, {-38, ""}, {100000, "syscall 100000"}});
#if defined(__x86_64__)
  // open (2) is not one a thread blocks in.
  test::expect_each<int32_t, std::string>(syscall_name, {{0, "read"},
                                                         {202, "futex"},
                                                         {230, "clock_nanosleep"},
                                                         {232, "epoll_wait"},
                                                         {281, "epoll_pwait"},
                                                         {441, "epoll_pwait2"},
                                                         {2, "syscall 2"}});
#endif
}

TEST(KernelExplain, SoftirqNames) {
  // softirq_name never gives a null name: its text is compared as a string.
  test::expect_each<uint32_t, std::string>(
      softirq_name,
      {{0, "HI"}, {2, "NET_TX"}, {3, "NET_RX"}, {9, "RCU"}, {10, "?"}, {0xffffffffu, "?"}});
}

TEST(KernelExplain, HumanDurations) {
  const std::vector<std::pair<uint64_t, const char*>> cases = {
      {0, "0 ns"},
      {890, "890 ns"},
      {999, "999 ns"},
      {1000, "1.0 us"},
      {56700, "56.7 us"},
      {999949, "999.9 us"},
      // Values that round up to the next unit are written in it.
      {999950, "1.000 ms"},
      {999999, "1.000 ms"},
      {1000000, "1.000 ms"},
      {1234000, "1.234 ms"},
      {999999499, "999.999 ms"},
      {999999500, "1.000 s"},
      {1000000000, "1.000 s"},
      {1500000000, "1.500 s"},
      {3600000000000ULL, "3600.000 s"},
  };
  for (const auto& c : cases) EXPECT_EQ(human_ns(c.first), c.second) << c.first;
}

}  // namespace
}  // namespace fabtrace
