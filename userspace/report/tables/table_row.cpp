#include "userspace/report/tables/table_row.h"

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

#include "common/csv.h"

namespace fabtrace::report {

namespace {

// std::to_chars(v)'s text for a whole v below 2^53 in magnitude (most times
// in ns are), without its shortest-digits search: every such integer is a
// double, so its digits without the trailing zeros are the shortest that
// read back; written fixed ("200") or, when shorter, scientific ("2e+05"),
// fixed on a tie, as to_chars writes them. False for any other v.
bool whole_number_text(double v, char* buf, size_t* len) {
  if (!(v > -9007199254740992.0 && v < 9007199254740992.0)) return false;  // and NaN
  const auto i = static_cast<int64_t>(v);
  if (static_cast<double>(i) != v) return false;
  char* p = buf;
  if (std::signbit(v)) *p++ = '-';  // -0 too
  char digits[24];
  const auto r = std::to_chars(digits, digits + sizeof(digits), i < 0 ? -i : i);
  const auto n = static_cast<size_t>(r.ptr - digits);
  size_t d = n;  // significant digits
  while (d > 1 && digits[d - 1] == '0') --d;
  const size_t exp = n - 1;
  const size_t sci = d + (d > 1 ? 1 : 0) + 4;  // "e+NN": exp < 16
  if (sci < n) {
    *p++ = digits[0];
    if (d > 1) {
      *p++ = '.';
      std::memcpy(p, digits + 1, d - 1);
      p += d - 1;
    }
    *p++ = 'e';
    *p++ = '+';
    *p++ = static_cast<char>('0' + exp / 10);
    *p++ = static_cast<char>('0' + exp % 10);
  } else {
    std::memcpy(p, digits, n);
    p += n;
  }
  *len = static_cast<size_t>(p - buf);
  return true;
}

}  // namespace

void append_number_text(std::string* out, double v) {
  char buf[64];
  size_t len = 0;
  if (whole_number_text(v, buf, &len)) {
    out->append(buf, len);
    return;
  }
  const auto r = std::isfinite(v) ? std::to_chars(buf, buf + sizeof(buf), v)
                                  : std::to_chars_result{buf, std::errc::invalid_argument};
  if (r.ec == std::errc())
    out->append(buf, static_cast<size_t>(r.ptr - buf));
  else
    *out += '0';
}

std::string number_text(double v) {
  std::string s;
  append_number_text(&s, v);
  return s;
}

namespace {

// Bytes dump() writes as they are: printable ASCII other than '"' and '\'.
// Anything else (control characters, UTF-8, invalid bytes) goes through
// nlohmann itself, so its escapes and its errors stay what they were.
bool plain_json(const std::string& s) {
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u > 0x7e || c == '"' || c == '\\') return false;
  }
  return true;
}

}  // namespace

void append_json_string(std::string* out, const std::string& s) {
  if (plain_json(s)) {
    *out += '"';
    *out += s;
    *out += '"';
  } else {
    *out += nlohmann::json(s).dump();
  }
}

void append_json_double(std::string* out, double v) {
  if (!std::isfinite(v)) {
    *out += "null";
    return;
  }
  char buf[64];  // the size of nlohmann's own number buffer
  const char* end = nlohmann::detail::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, static_cast<size_t>(end - buf));
}

void append_json_u64(std::string* out, uint64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, static_cast<size_t>(r.ptr - buf));
}

void append_json_i64(std::string* out, int64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, static_cast<size_t>(r.ptr - buf));
}

void CsvRow::operator()(const char*, const std::string& v) {
  sep();
  // Most values need no quotes: appended as they are, without the copy
  // csv_quote returns (a heap string for an address).
  for (const char c : v)
    if (c == ',' || c == '"' || c == '\r' || c == '\n') {
      *out_ += csv_quote(v);
      return;
    }
  *out_ += v;
}
void CsvRow::operator()(const char*, double v) {
  sep();
  append_number_text(out_, v);
}
void CsvRow::operator()(const char*, bool v) {
  sep();
  *out_ += v ? "true" : "false";
}

void JsonRow::put_key(const char* key) {
  *out_ += first_ ? "\"" : ",\"";
  first_ = false;
  *out_ += key;  // the tables' own column names: plain ASCII
  *out_ += "\":";
}
void JsonRow::operator()(const char* key, const std::string& v) {
  put_key(key);
  append_json_string(out_, v);
}
void JsonRow::operator()(const char* key, double v) {
  put_key(key);
  append_json_double(out_, v);
}
void JsonRow::operator()(const char* key, bool v) {
  put_key(key);
  *out_ += v ? "true" : "false";
}

}  // namespace fabtrace::report
