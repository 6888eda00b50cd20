#include "userspace/report/text/formats.h"

#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <ctime>

#include "common/printable.h"

namespace fabtrace::report {

std::string printf_str(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  const int n = std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (n < 0) return "";
  if (static_cast<size_t>(n) < sizeof(buf)) return std::string(buf, static_cast<size_t>(n));
  std::string big(static_cast<size_t>(n) + 1, '\0');
  va_start(ap, fmt);
  std::vsnprintf(&big[0], big.size(), fmt, ap);
  va_end(ap);
  big.resize(static_cast<size_t>(n));
  return big;
}

std::string fmt_ns(double ns) {
  if (!(ns == ns)) return "?";
  const double a = std::fabs(ns);
  if (a < 1e3) return printf_str("%.0f ns", ns);
  if (a < 1e6) return printf_str("%.*f us", a < 1e4 ? 2 : 1, ns / 1e3);
  if (a < 1e9) return printf_str("%.*f ms", a < 1e7 ? 2 : 1, ns / 1e6);
  return printf_str("%.3f s", ns / 1e9);
}

std::string fmt_size(uint64_t b) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  uint64_t v = b;
  while (u < 4 && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    ++u;
  }
  if (u > 0 || b < 10240) return std::to_string(v) + " " + units[u];
  // Not a multiple of 1 KiB and large: one decimal in the largest unit.
  double d = static_cast<double>(b);
  u = 0;
  while (u < 4 && d >= 1024) {
    d /= 1024;
    ++u;
  }
  return printf_str("%.1f %s", d, units[u]);
}

std::string fmt_row_size(const OpStats& row) {
  return row.size_unknown ? "size unknown (posted " + fmt_size(row.bytes) + ")"
                          : fmt_size(row.bytes);
}

std::string fmt_bytes(uint64_t b) {
  static const char* const units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  double d = static_cast<double>(b);
  int u = 0;
  while (u < 5 && d >= 1000) {
    d /= 1000;
    ++u;
  }
  if (u == 0) return std::to_string(b) + " B";
  return printf_str("%.1f %s", d, units[u]);
}

std::string fmt_count(uint64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

std::string fmt_gbps(double gbps) { return printf_str("%.3f GB/s", gbps); }

std::string fmt_wall(uint64_t wall_ns, bool with_date) {
  if (!wall_ns) return "?";
  const time_t sec = static_cast<time_t>(wall_ns / 1000000000ULL);
  const unsigned long us = static_cast<unsigned long>((wall_ns % 1000000000ULL) / 1000);
  struct tm tm;
  gmtime_r(&sec, &tm);
  char buf[64];
  if (with_date)
    std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  else
    std::strftime(buf, sizeof(buf), "%H:%M:%S", &tm);
  return printf_str("%s.%06lu UTC", buf, us);
}

// Host, rank, address, provider and op text comes from files anyone may have
// written: it reaches the terminal through printable() (no raw ESC or BEL, no
// line breaks).
std::string short_addr(const std::string& addr) {
  const size_t p = addr.find("://");
  if (p == std::string::npos || p + 3 >= addr.size()) return printable(addr);
  return printable(addr.substr(p + 3));
}

std::string short_addrs(const std::vector<std::string>& addrs, size_t max) {
  std::string s;
  for (size_t i = 0; i < addrs.size() && i < max; ++i) s += (i ? "," : "") + short_addr(addrs[i]);
  if (addrs.size() > max) s += " +" + std::to_string(addrs.size() - max) + " more";
  return s;
}

}  // namespace fabtrace::report
