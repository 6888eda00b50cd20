#include "common/decimal.h"

#include <cstdio>

namespace fabtrace {

bool parse_digits(const char* b, const char* e, uint64_t* out, const char** stop) {
  uint64_t v = 0;
  const char* p = b;
  for (; p < e && *p >= '0' && *p <= '9'; ++p) {
    const uint64_t d = static_cast<uint64_t>(*p - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  if (p == b) return false;
  *out = v;
  *stop = p;
  return true;
}

bool parse_decimal(const std::string& s, uint64_t* out) {
  const char* stop = nullptr;
  const char* e = s.data() + s.size();
  return parse_digits(s.data(), e, out, &stop) && stop == e;
}

bool parse_byte_size(const std::string& s, uint64_t* out) {
  const char* stop = nullptr;
  const char* e = s.data() + s.size();
  uint64_t v = 0;
  if (!parse_digits(s.data(), e, &v, &stop)) return false;
  const std::string unit(stop, e);
  static const struct {
    const char* name;
    unsigned shift;
  } units[] = {{"", 0},     {"B", 0},   {"K", 10},   {"KB", 10}, {"KiB", 10},
               {"M", 20},   {"MB", 20}, {"MiB", 20}, {"G", 30},  {"GB", 30},
               {"GiB", 30}, {"T", 40},  {"TB", 40},  {"TiB", 40}};
  for (const auto& u : units) {
    if (unit != u.name) continue;
    if (u.shift && v > (UINT64_MAX >> u.shift)) return false;
    *out = v << u.shift;
    return true;
  }
  return false;
}

std::string byte_size_text(uint64_t bytes) {
  static const char* const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  unsigned u = 0;
  double v = static_cast<double>(bytes);
  while (u + 1 < sizeof(names) / sizeof(names[0]) && bytes >= (1ULL << (10 * (u + 1)))) {
    ++u;
    v = static_cast<double>(bytes) / static_cast<double>(1ULL << (10 * u));
  }
  char b[48];
  if (u == 0 || v == static_cast<double>(static_cast<uint64_t>(v)))
    std::snprintf(b, sizeof(b), "%llu %s", static_cast<unsigned long long>(v), names[u]);
  else
    std::snprintf(b, sizeof(b), "%.1f %s", v, names[u]);
  return b;
}

}  // namespace fabtrace
