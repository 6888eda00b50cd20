#include "userspace/report/table_row.h"

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

#include "common/csv.h"
#include "userspace/report/tables.h"

namespace fabtrace::report {

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
