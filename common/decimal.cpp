#include "common/decimal.h"

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

}  // namespace fabtrace
