// A small streaming JSON writer: objects, arrays, strings (escaped per RFC 8259),
// integers, doubles (finite; NaN/inf are written as null), booleans, null.
// Commas and nesting are tracked for the caller; output goes to a FILE*.
// Pretty mode indents by two spaces and ends the outermost container with a
// newline; compact mode writes no white space at all. Strings should be UTF-8:
// malformed bytes are written as U+FFFD.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace fabtrace {

class JsonWriter {
 public:
  explicit JsonWriter(std::FILE* out, bool pretty = true) : out_(out), pretty_(pretty) {}

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(const std::string& k);  // inside an object, before each value
  JsonWriter& value(const std::string& s);
  JsonWriter& value(const char* s);
  JsonWriter& value(uint64_t v);
  JsonWriter& value(int64_t v);
  JsonWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(unsigned v) { return value(static_cast<uint64_t>(v)); }
  JsonWriter& value(double v);
  JsonWriter& value(bool b);
  JsonWriter& null();

  template <typename T>
  JsonWriter& field(const std::string& k, const T& v) {
    key(k);
    return value(v);
  }

  static std::string escape(const std::string& s);  // without the surrounding quotes

 private:
  void before_value();
  void newline();
  std::FILE* out_;
  bool pretty_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

// Runs `fill` on a JsonWriter over memory and gives the text in *out; false
// when the memory stream could not be made or closed.
template <typename F>
bool json_text(std::string* out, F fill, bool pretty = false) {
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* f = ::open_memstream(&buf, &len);
  if (!f) return false;
  {
    JsonWriter w(f, pretty);
    fill(w);
  }
  const bool ok = std::fclose(f) == 0;
  if (ok && buf) out->assign(buf, len);
  std::free(buf);
  return ok;
}

}  // namespace fabtrace
