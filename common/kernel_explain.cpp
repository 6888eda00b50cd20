#include "common/kernel_explain.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace fabtrace {

namespace {

std::string ms(uint64_t ns) {
  char b[32];
  std::snprintf(b, sizeof(b), "%.1f", static_cast<double>(ns) / 1e6);
  return b;
}

std::string task(const ft_task_time& t) {
  char comm[FT_COMM_LEN + 1] = {};
  for (int i = 0; i < FT_COMM_LEN && t.comm[i]; ++i)
    comm[i] = (t.comm[i] >= 0x20 && t.comm[i] < 0x7f) ? t.comm[i] : '?';
  return std::string(comm[0] ? comm : "?") + "[" + std::to_string(t.pid) + "]";
}

}  // namespace

std::string human_ns(uint64_t ns) {
  char b[32];
  // The unit is chosen on the rounded value: 999999 ns is "1.000 ms", not
  // "1000.0 us".
  if (ns >= 999999500ULL)
    std::snprintf(b, sizeof(b), "%.3f s", static_cast<double>(ns) / 1e9);
  else if (ns >= 999950)
    std::snprintf(b, sizeof(b), "%.3f ms", static_cast<double>(ns) / 1e6);
  else if (ns >= 1000)
    std::snprintf(b, sizeof(b), "%.1f us", static_cast<double>(ns) / 1e3);
  else
    std::snprintf(b, sizeof(b), "%llu ns", static_cast<unsigned long long>(ns));
  return b;
}

std::vector<BreakdownPart> breakdown_parts(const ft_breakdown& w) {
  return {{"on-cpu", w.on_cpu_ns},   {"runnable", w.runnable_ns},   {"futex", w.futex_ns},
          {"sleep", w.sleep_ns},     {"nanosleep", w.nanosleep_ns}, {"disk", w.disk_ns},
          {"stopped", w.stopped_ns}, {"other", w.other_ns},         {"irq", w.irq_ns},
          {"softirq", w.softirq_ns}};
}

bool breakdown_valid(const ft_breakdown& w) {
  if (w.start > w.end) return false;
  const uint64_t len = w.end - w.start;
  // The parts outside IRQs are disjoint pieces of the window (an off-CPU
  // interval is clipped to it; on-CPU is the rest): their sum is the window's
  // length at most, give or take a nanosecond per part.
  uint64_t sum = 0;
  for (const BreakdownPart& p : breakdown_parts(w)) {
    if (p.ns > len) return false;
    const std::string n = p.name;
    if (n != "irq" && n != "softirq") sum += p.ns;
  }
  return sum <= len + 16;
}

std::string wait_on_name(uint32_t on) {
  switch (on) {
    case FT_ON_PIPE:
      return "pipe";
    case FT_ON_SOCKET:
      return "socket";
    case FT_ON_FILE:
      return "file";
    case FT_ON_CHAR:
      return "character device";
    case FT_ON_OTHER:
      return "other file";
    default:
      return "";
  }
}

std::string page_faults_text(const ft_breakdown& w) {
  const std::string n = std::to_string(w.faults) + " page faults";
  if (w.flags & FT_WIN_PARTIAL_FAULT) return "at least " + n;
  if (w.flags & FT_WIN_FAULTS_PRORATED) return "about " + n;
  return n;
}

const char* faults_bound(const ft_breakdown& w) {
  if (w.flags & FT_WIN_PARTIAL_FAULT) return "at_least";
  if (w.flags & FT_WIN_FAULTS_PRORATED) return "about";
  return "exact";
}

namespace {

// The causes a window's time is split into, each with its words and its
// class (breakdown_cause), in the order the verdict weighs them.
struct Cause {
  uint64_t ns;
  std::string text;
  const char* cls;
};

std::vector<Cause> causes_of(const ft_breakdown& w) {
  std::vector<Cause> causes = {
      {w.runnable_ns,
       w.top[0].pid ? "preempted by " + task(w.top[0]) : "runnable, waiting for a CPU",
       "preempted"},
      {w.stopped_ns, "stopped (SIGSTOP or a debugger)", "stopped"},
      {w.futex_ns, "blocked in futex", "futex"},
      {w.nanosleep_ns, "sleeping (nanosleep)", "nanosleep"},
  };
  // The sleeping syscalls by name (and what they waited on); the rest of the
  // blocked-sleep time in no syscall the kernel named.
  uint64_t named = 0;
  for (const ft_sleep_call& c : w.sleep_calls) {
    if (!c.ns || c.syscall < 0) continue;
    const std::string on = wait_on_name(c.wait_on);
    causes.push_back({c.ns,
                      "blocked in " + syscall_name(c.syscall) + (on.empty() ? "" : " (" + on + ")"),
                      "sleep"});
    named += c.ns;
  }
  causes.push_back(
      {w.sleep_ns > named ? w.sleep_ns - named : 0, "blocked in a sleeping syscall", "sleep"});
  causes.push_back({w.disk_ns, "in uninterruptible sleep (I/O or page-in)", "disk"});
  causes.push_back({w.other_ns, "off CPU (cause not seen)", "other"});
  // On-CPU time net of the IRQs taken on it.
  const uint64_t irqs = w.irq_ns + w.softirq_ns;
  const uint64_t run = w.on_cpu_ns > irqs ? w.on_cpu_ns - irqs : 0;
  causes.push_back({run, "on CPU", "on-cpu"});
  causes.push_back({irqs, "in interrupt handlers on its CPU", "interrupts"});
  return causes;
}

std::vector<Cause>::const_iterator top_cause(const std::vector<Cause>& causes) {
  return std::max_element(causes.begin(), causes.end(),
                          [](const Cause& a, const Cause& b) { return a.ns < b.ns; });
}

}  // namespace

const char* breakdown_cause(const ft_breakdown& w) {
  if (!breakdown_valid(w)) return "malformed";
  const std::vector<Cause> causes = causes_of(w);
  return top_cause(causes)->cls;
}

std::string breakdown_verdict(const ft_breakdown& w) {
  if (!breakdown_valid(w)) return kMalformedBreakdown;
  const uint64_t len = w.end > w.start ? w.end - w.start : 0;
  const std::vector<Cause> causes = causes_of(w);
  const auto top = top_cause(causes);
  std::string s = top->text + " for " + ms(top->ns) + " of " + ms(len) + " ms";
  if (top->text == "on CPU") s += " (running, not polling)";
  // A second cause that took a fifth of the window or more.
  for (const Cause& c : causes)
    if (&c != &*top && c.ns * 5 >= len && c.ns > 0) s += "; " + c.text + " " + ms(c.ns) + " ms";
  if (w.top[1].pid && w.top[1].ns * 5 >= len)
    s += "; also " + task(w.top[1]) + " " + ms(w.top[1].ns) + " ms";
  if (w.faults) s += "; " + page_faults_text(w);
  if (w.migrations) s += "; " + std::to_string(w.migrations) + " CPU migrations";
  if (w.flags & FT_WIN_UNKNOWN_THREAD)
    s += " (the kernel did not know this thread)";
  else if (w.flags & (FT_WIN_PARTIAL_OFF | FT_WIN_PARTIAL_IRQ | FT_WIN_PARTIAL_FAULT))
    s += " (the kernel's history did not reach the window's start)";
  return s;
}

std::string syscall_name(int32_t nr) {
  if (nr < 0) return "";
#if defined(__x86_64__)
  static const std::map<int32_t, const char*> names = {
      {0, "read"},           {1, "write"},
      {7, "poll"},           {17, "pread64"},
      {18, "pwrite64"},      {23, "select"},
      {34, "pause"},         {35, "nanosleep"},
      {43, "accept"},        {45, "recvfrom"},
      {47, "recvmsg"},       {61, "wait4"},
      {202, "futex"},        {230, "clock_nanosleep"},
      {19, "readv"},         {20, "writev"},
      {42, "connect"},       {44, "sendto"},
      {46, "sendmsg"},       {295, "preadv"},
      {296, "pwritev"},      {307, "sendmmsg"},
      {232, "epoll_wait"},   {270, "pselect6"},
      {271, "ppoll"},        {281, "epoll_pwait"},
      {288, "accept4"},      {299, "recvmmsg"},
      {441, "epoll_pwait2"}, {449, "futex_waitv"}};
  const auto it = names.find(nr);
  if (it != names.end()) return it->second;
#endif
  return "syscall " + std::to_string(nr);
}

std::string offcpu_cause(const ft_offcpu& r) {
  switch (r.off_kind) {
    case FT_OFF_PREEMPTED:
      return "preempted";
    case FT_OFF_STOPPED:
      return "stopped";
    case FT_OFF_DISK:
      return "disk";
    case FT_OFF_SLEEP: {
      const std::string sc = syscall_name(r.syscall);
      if (sc == "futex" || sc == "futex_waitv") return "futex";
      if (sc.empty()) return "sleep";
      const std::string on = wait_on_name(r.wait_on);
      return "sleep:" + sc + (on.empty() ? "" : "(" + on + ")");
    }
    default:
      return "other";
  }
}

const char* softirq_name(uint32_t vec) {
  static const char* const n[] = {"HI",       "TIMER",   "NET_TX", "NET_RX",  "BLOCK",
                                  "IRQ_POLL", "TASKLET", "SCHED",  "HRTIMER", "RCU"};
  return vec < sizeof(n) / sizeof(n[0]) ? n[vec] : "?";
}

}  // namespace fabtrace
