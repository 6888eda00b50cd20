#include "common/printable.h"

namespace fabtrace {

namespace {

// The escape for byte c at in[i] (C1 controls arrive as UTF-8 "\xC2\x80".."\xC2\x9F"
// and take two bytes); 0 when it passes unchanged. *used is the bytes consumed.
size_t escape_of(const unsigned char* in, size_t len, size_t i, char out[9], size_t* used) {
  static const char kHex[] = "0123456789abcdef";
  const unsigned char c = in[i];
  *used = 1;
  auto hex = [&](unsigned char b, size_t at) {
    out[at] = '\\';
    out[at + 1] = 'x';
    out[at + 2] = kHex[b >> 4];
    out[at + 3] = kHex[b & 15];
  };
  if (c == '\n' || c == '\t' || c == '\r') {
    out[0] = '\\';
    out[1] = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
    return 2;
  }
  if (c < 0x20 || c == 0x7f) {
    hex(c, 0);
    return 4;
  }
  if (c == 0xC2 && i + 1 < len && in[i + 1] >= 0x80 && in[i + 1] <= 0x9F) {
    hex(c, 0);
    hex(in[i + 1], 4);
    *used = 2;
    return 8;
  }
  return 0;
}

}  // namespace

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  const auto* in = reinterpret_cast<const unsigned char*>(s.data());
  for (size_t i = 0; i < s.size();) {
    char esc[9];
    size_t used;
    const size_t n = escape_of(in, s.size(), i, esc, &used);
    if (n)
      out.append(esc, n);
    else
      out += s[i];
    i += used;
  }
  return out;
}

size_t printable_into(char* out, size_t cap, const char* in, size_t len) {
  if (cap == 0) return 0;
  const auto* u = reinterpret_cast<const unsigned char*>(in);
  size_t o = 0;
  for (size_t i = 0; i < len;) {
    char esc[9];
    size_t used;
    const size_t n = escape_of(u, len, i, esc, &used);
    const char* src = n ? esc : in + i;
    const size_t k = n ? n : 1;
    if (o + k > cap - 1) break;
    for (size_t j = 0; j < k; ++j) out[o++] = src[j];
    i += used;
  }
  out[o] = '\0';
  return o;
}

}  // namespace fabtrace
