#include "common/json_writer.h"

#include <charconv>
#include <cinttypes>
#include <cmath>

namespace fabtrace {

namespace {

// Length of the well-formed UTF-8 sequence starting at s[i] (1..4), or 0 when
// the bytes there are not one (stray continuation byte, overlong form,
// surrogate, beyond U+10FFFF, truncated).
size_t utf8_len(const std::string& s, size_t i) {
  const auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = at(i);
  const size_t left = s.size() - i;
  const auto cont = [&](size_t k) { return (at(i + k) & 0xC0) == 0x80; };
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return left >= 2 && cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (left < 3 || !cont(1) || !cont(2)) return 0;
    const unsigned char c1 = at(i + 1);
    if (c == 0xE0 && c1 < 0xA0) return 0;  // overlong
    if (c == 0xED && c1 > 0x9F) return 0;  // UTF-16 surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (left < 4 || !cont(1) || !cont(2) || !cont(3)) return 0;
    const unsigned char c1 = at(i + 1);
    if (c == 0xF0 && c1 < 0x90) return 0;  // overlong
    if (c == 0xF4 && c1 > 0x8F) return 0;  // > U+10FFFF
    return 4;
  }
  return 0;
}

}  // namespace

std::string JsonWriter::escape(const std::string& s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() + 2);
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xF];
        } else if (c < 0x80) {
          out += static_cast<char>(c);
        } else {
          // JSON text is UTF-8: pass well-formed sequences through, replace
          // each byte of a malformed one with U+FFFD.
          const size_t n = utf8_len(s, i);
          if (n == 0) {
            out += "\\ufffd";
            ++i;
          } else {
            out.append(s, i, n);
            i += n;
          }
          continue;
        }
    }
    ++i;
  }
  return out;
}

void JsonWriter::newline() {
  if (!pretty_ || !out_) return;
  std::fputc('\n', out_);
  for (size_t i = 0; i < first_.size(); ++i) std::fputs("  ", out_);
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (first_.empty()) return;
  if (!first_.back() && out_) std::fputc(',', out_);
  first_.back() = false;
  newline();
}

JsonWriter& JsonWriter::begin_object() {
  before_value();
  if (out_) std::fputc('{', out_);
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  before_value();
  if (out_) std::fputc('[', out_);
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  if (first_.empty()) return *this;  // unbalanced: ignore rather than write bad JSON
  if (after_key_) null();            // a key without a value
  const bool empty = first_.back();
  first_.pop_back();
  if (!empty) newline();
  if (out_) {
    std::fputc('}', out_);
    if (pretty_ && first_.empty()) std::fputc('\n', out_);
  }
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  if (first_.empty()) return *this;
  after_key_ = false;
  const bool empty = first_.back();
  first_.pop_back();
  if (!empty) newline();
  if (out_) {
    std::fputc(']', out_);
    if (pretty_ && first_.empty()) std::fputc('\n', out_);
  }
  return *this;
}

JsonWriter& JsonWriter::key(const std::string& k) {
  if (after_key_) null();  // the previous key got no value
  before_value();
  if (out_) {
    std::fputc('"', out_);
    std::fputs(escape(k).c_str(), out_);
    std::fputs(pretty_ ? "\": " : "\":", out_);
  }
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(const std::string& s) {
  before_value();
  if (out_) {
    std::fputc('"', out_);
    std::fputs(escape(s).c_str(), out_);
    std::fputc('"', out_);
  }
  return *this;
}

JsonWriter& JsonWriter::value(const char* s) {
  if (!s) return null();
  return value(std::string(s));
}

JsonWriter& JsonWriter::value(uint64_t v) {
  before_value();
  if (out_) std::fprintf(out_, "%" PRIu64, v);
  return *this;
}

JsonWriter& JsonWriter::value(int64_t v) {
  before_value();
  if (out_) std::fprintf(out_, "%" PRId64, v);
  return *this;
}

JsonWriter& JsonWriter::value(double v) {
  if (!std::isfinite(v)) return null();
  before_value();
  // Shortest text that reads back as the same double, independent of the
  // locale ("0.1", "3", "1e+20", "2.5e-07").
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof(buf) - 1, v);
  if (r.ec == std::errc()) {
    *r.ptr = '\0';
  } else {
    std::snprintf(buf, sizeof(buf), "%.17g", v);  // not reached: 64 bytes always suffice
  }
  if (out_) std::fputs(buf, out_);
  return *this;
}

JsonWriter& JsonWriter::value(bool b) {
  before_value();
  if (out_) std::fputs(b ? "true" : "false", out_);
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  if (out_) std::fputs("null", out_);
  return *this;
}

}  // namespace fabtrace
