// One row of a table written field by field, as CSV or as a JSON object, with
// no JSON document built per row (a job of 1M link rows spent most of its
// table time building and dumping those).
//
// The text is the one nlohmann::json's dump() made of the row object before:
// compact `{"key":value,...}`, strings escaped as dump() escapes them, doubles
// by the same shortest round-trip text (nlohmann::detail::to_chars), NaN and
// infinities as null; in CSV, strings quoted by csv_quote, doubles by
// number_text, integers and booleans as in JSON.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

namespace fabtrace::report {

// The shortest text that reads back as exactly v (0 for NaN and infinities).
std::string number_text(double v);
void append_number_text(std::string* out, double v);  // the same, appended to *out

// Appends the JSON text of a value (a string escaped and quoted).
void append_json_string(std::string* out, const std::string& s);
void append_json_double(std::string* out, double v);
void append_json_u64(std::string* out, uint64_t v);
void append_json_i64(std::string* out, int64_t v);
template <typename T>
void append_json_int(std::string* out, T v) {
  if constexpr (std::is_signed_v<T>)
    append_json_i64(out, static_cast<int64_t>(v));
  else
    append_json_u64(out, static_cast<uint64_t>(v));
}

// The fields of a row go through the same callable for both formats: a
// table's `fields(row, sink)` calls sink(key, value) once per column, in order.
class CsvRow {
 public:
  explicit CsvRow(std::string* out) : out_(out) {}
  void operator()(const char* key, const std::string& v);
  void operator()(const char* key, double v);
  void operator()(const char* key, bool v);
  void operator()(const char* key, const char* v) = delete;  // would pick bool: pass a string
  template <typename T, typename = std::enable_if_t<std::is_integral_v<T>>>
  void operator()(const char*, T v) {
    sep();
    append_json_int(out_, v);
  }
  void end() { *out_ += '\n'; }

 private:
  void sep() {
    if (!first_) *out_ += ',';
    first_ = false;
  }
  std::string* out_;
  bool first_ = true;
};

class JsonRow {
 public:
  explicit JsonRow(std::string* out) : out_(out) { *out_ += '{'; }
  void operator()(const char* key, const std::string& v);
  void operator()(const char* key, double v);
  void operator()(const char* key, bool v);
  void operator()(const char* key, const char* v) = delete;  // would pick bool: pass a string
  template <typename T, typename = std::enable_if_t<std::is_integral_v<T>>>
  void operator()(const char* key, T v) {
    put_key(key);
    append_json_int(out_, v);
  }
  void end() { *out_ += '}'; }

 private:
  void put_key(const char* key);
  std::string* out_;
  bool first_ = true;
};

}  // namespace fabtrace::report
