#include "userspace/report/job/json_tree.h"

// SSE2 is x86-64's baseline: rapidjson skips blanks and scans strings 16
// bytes at a time, in aligned loads that may read past the text's end within
// its 16 bytes (never across a page): not under AddressSanitizer or
// ThreadSanitizer, which call that a read of memory the text does not own
// (TSan: heap-use-after-free in JsonTree.* when the bytes after the text
// belonged to a freed block).
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FABTRACE_SANITIZED 1
#endif
#endif
#if defined(__SSE2__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__) && \
    !defined(FABTRACE_SANITIZED)
#define RAPIDJSON_SSE2
#endif
#include <rapidjson/reader.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string_view>
#include <system_error>

namespace fabtrace::report {

using Kind = JsonTree::Kind;

// nlohmann's SAX events, appended to the tree: a container's slot comes
// before its children's and is closed (end, size) when it ends.
class JsonTreeBuilder {
 public:
  JsonTreeBuilder(JsonTree* t, int max_depth) : t_(t), max_depth_(max_depth) {}

  bool null() { return add(Kind::kNull), true; }
  bool boolean(bool b) { return add(Kind::kBool).b = b, true; }
  bool number_integer(int64_t v) { return add(Kind::kInt).v.i = v, true; }
  bool number_unsigned(uint64_t v) { return add(Kind::kUint).v.u = v, true; }
  bool number_float(double v, const std::string&) { return add(Kind::kFloat).v.d = v, true; }
  bool string(std::string& s) { return text(s); }
  bool text(std::string_view s) {
    const uint32_t at = append(s);
    JsonTree::Slot& slot = add(Kind::kString);
    slot.v.s.at = at;
    slot.v.s.len = static_cast<uint32_t>(s.size());
    return true;
  }
  bool binary(nlohmann::json::binary_t&) { return false; }  // no such thing in JSON text
  bool start_object(size_t) { return open(Kind::kObject); }
  bool key(std::string& k) { return key_text(k); }
  bool key_text(std::string_view k) {
    key_at_ = append(k);
    key_len_ = static_cast<uint32_t>(k.size());
    return true;
  }
  bool end_object() { return close(); }
  bool start_array(size_t) { return open(Kind::kArray); }
  bool end_array() { return close(); }
  bool parse_error(size_t byte, const std::string&, const nlohmann::detail::exception& e) {
    error_.byte = byte;
    error_.id = e.id;
    error_.what = e.what();
    return false;
  }

  JsonError error_;

 private:
  uint32_t append(std::string_view s) {
    const auto at = static_cast<uint32_t>(t_->strings_.size());
    t_->strings_ += s;
    return at;
  }
  JsonTree::Slot& add(Kind k) {
    if (!open_.empty()) ++t_->slots_[open_.back()].size;
    JsonTree::Slot& s = t_->slots_.emplace_back();
    s.kind = k;
    s.key_at = key_at_;
    s.key_len = key_len_;
    key_at_ = key_len_ = 0;
    s.end = static_cast<uint32_t>(t_->slots_.size());
    return s;
  }
  bool open(Kind k) {
    if (max_depth_ > 0 && open_.size() >= static_cast<size_t>(max_depth_)) {
      error_ = JsonError{0, JsonError::kTooDeep,
                         "nested deeper than " + std::to_string(max_depth_) + " levels"};
      return false;
    }
    add(k);
    open_.push_back(static_cast<uint32_t>(t_->slots_.size() - 1));
    return true;
  }
  bool close() {
    t_->slots_[open_.back()].end = static_cast<uint32_t>(t_->slots_.size());
    open_.pop_back();
    return true;
  }

  JsonTree* t_;
  int max_depth_;
  std::vector<uint32_t> open_;  // the containers not yet closed
  uint32_t key_at_ = 0, key_len_ = 0;
};

namespace {

// rapidjson's SAX events (its Reader, whose lexer does not copy every
// token: nlohmann's was half of `fabtrace report`'s time at a million link
// rows) given to the builder as nlohmann's parser would give them. Where
// rapidjson takes what nlohmann refuses (a lone low surrogate, \uDC00..\uDFFF,
// written as UTF-8) or a number from_chars cannot read, the handler stops
// and nlohmann parses the text again.
class RapidJsonEvents {
 public:
  explicit RapidJsonEvents(JsonTreeBuilder* b) : b_(b) {}
  bool Null() { return b_->null(); }
  bool Bool(bool v) { return b_->boolean(v); }
  // Numbers come as their text (kParseNumbersAsStringsFlag), read here as
  // nlohmann reads them: an integer is unsigned unless it has a minus sign,
  // one beyond 64 bits a float; floats by std::from_chars, correctly rounded
  // as glibc's strtod that nlohmann calls (out of range: nlohmann's error
  // or value). Not rapidjson's own readers: 1.1's full-precision one reads
  // 99e307 as -3.1e-308 and reads out of bounds on
  // 8.1165387018314769226613525791665272705155e-335; its plain one is not
  // correctly rounded.
  bool RawNumber(const char* s, rapidjson::SizeType n, bool) {
    const char* end = s + n;
    if (std::find_if(s, end, [](char c) { return c == '.' || c == 'e' || c == 'E'; }) == end) {
      if (*s == '-') {
        int64_t v = 0;
        const auto r = std::from_chars(s, end, v);
        if (r.ec == std::errc() && r.ptr == end) return b_->number_integer(v);
      } else {
        uint64_t v = 0;
        const auto r = std::from_chars(s, end, v);
        if (r.ec == std::errc() && r.ptr == end) return b_->number_unsigned(v);
      }
    }
    double d = 0;
    const auto r = std::from_chars(s, end, d);
    return r.ec == std::errc() && r.ptr == end && b_->number_float(d, no_text_);
  }
  // Not called with kParseNumbersAsStringsFlag; the Reader's interface.
  bool Int(int) { return false; }
  bool Uint(unsigned) { return false; }
  bool Int64(int64_t) { return false; }
  bool Uint64(uint64_t) { return false; }
  bool Double(double) { return false; }
  bool String(const char* s, rapidjson::SizeType n, bool) {
    return no_surrogate(s, n) && b_->text(std::string_view(s, n));
  }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    return no_surrogate(s, n) && b_->key_text(std::string_view(s, n));
  }
  bool StartObject() { return b_->start_object(0); }
  bool EndObject(rapidjson::SizeType) { return b_->end_object(); }
  bool StartArray() { return b_->start_array(0); }
  bool EndArray(rapidjson::SizeType) { return b_->end_array(); }

 private:
  // The input is ASCII or its UTF-8 validated (kParseValidateEncodingFlag),
  // so a surrogate's encoding (ED A0..BF) in a string came from a \u escape.
  static bool no_surrogate(const char* s, size_t n) {
    const char* end = s + n;
    for (const char* p = s; (p = static_cast<const char*>(memchr(p, 0xED, end - p))) != nullptr;) {
      if (++p < end && static_cast<unsigned char>(*p) >= 0xA0) return false;
    }
    return true;
  }

  JsonTreeBuilder* b_;
  const std::string no_text_;  // number_float's text, which the builder does not read
};

// Numbers as text (see RawNumber); iterative: depth is the builder's bound,
// not the thread's stack.
constexpr unsigned kRapidJsonFlags =
    rapidjson::kParseNumbersAsStringsFlag | rapidjson::kParseIterativeFlag;

// Whether every byte is below 0x80, 8 at a time. Reports are ASCII (names
// escaped), and rapidjson's UTF-8 validation, which nlohmann's strictness
// needs for other bytes, was 92M of its 307M instructions on the 128-rank
// job; ASCII needs none, and without it rapidjson scans strings 16 bytes at
// a time.
bool ascii(std::string_view s) {
  uint64_t any = 0;
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    memcpy(&w, s.data() + i, 8);
    any |= w;
  }
  for (; i < s.size(); ++i) any |= static_cast<unsigned char>(s[i]);
  return (any & 0x8080808080808080ULL) == 0;
}

// Parses text into the builder; false on any error, or a NUL byte that
// rapidjson took for the text's end.
template <unsigned kFlags>
bool rapidjson_parse(const std::string& text, JsonTreeBuilder* builder) {
  RapidJsonEvents events(builder);
  rapidjson::StringStream in(text.c_str());
  rapidjson::Reader reader;
  return !reader.Parse<kFlags>(in, events).IsError() && in.Tell() == text.size();
}

}  // namespace

bool JsonTree::parse(const std::string& text, JsonError* error, int max_depth) {
  slots_.clear();
  strings_.clear();
  // Offsets are 32-bit: a text under 4 GiB has fewer values and string bytes.
  if (text.size() >= (uint64_t{1} << 32)) {
    *error = JsonError{0, 500, "document of 4 GiB or more"};
    return false;
  }
  // A report has about one value per 16 bytes of text: no regrowth of the
  // array (its copies were the tree's largest cost) for most texts.
  slots_.reserve(text.size() / 16 + 16);
  strings_.reserve(text.size() / 4 + 16);
  {
    // Any failure, and nlohmann parses the text again: its tree and its
    // errors stay the reference.
    JsonTreeBuilder fast(this, max_depth);
    if (ascii(text)
            ? rapidjson_parse<kRapidJsonFlags>(text, &fast)
            : rapidjson_parse<kRapidJsonFlags | rapidjson::kParseValidateEncodingFlag>(text, &fast))
      return true;
    slots_.clear();
    strings_.clear();
  }
  JsonTreeBuilder b(this, max_depth);
  if (nlohmann::json::sax_parse(text, &b)) return true;
  slots_.clear();
  strings_.clear();
  *error = std::move(b.error_);
  return false;
}

void JsonTree::trim(size_t bytes) {
  if (slots_.capacity() * sizeof(Slot) + strings_.capacity() <= bytes) return;
  std::vector<Slot>().swap(slots_);
  std::string().swap(strings_);
}

const char* JsonNode::type_name() const {
  switch (kind()) {
    case Kind::kNull:
      return "null";
    case Kind::kBool:
      return "boolean";
    case Kind::kInt:
    case Kind::kUint:
    case Kind::kFloat:
      return "number";
    case Kind::kString:
      return "string";
    case Kind::kArray:
      return "array";
    case Kind::kObject:
      return "object";
  }
  return "?";
}

// A number as nlohmann's get<T>() gives it: a plain cast of what was parsed.
template <typename T>
T JsonNode::number_as() const {
  const JsonTree::Slot& s = slot();
  switch (s.kind) {
    case Kind::kInt:
      return static_cast<T>(s.v.i);
    case Kind::kUint:
      return static_cast<T>(s.v.u);
    case Kind::kFloat:
      return static_cast<T>(s.v.d);
    default:
      return T{0};
  }
}

int64_t JsonNode::get_i64() const { return number_as<int64_t>(); }
uint64_t JsonNode::get_u64() const { return number_as<uint64_t>(); }
double JsonNode::get_double() const { return number_as<double>(); }

std::string_view JsonNode::str() const {
  const JsonTree::Slot& s = slot();
  if (s.kind != Kind::kString) return {};
  return std::string_view(tree_->strings_).substr(s.v.s.at, s.v.s.len);
}

std::string_view JsonNode::key() const {
  const JsonTree::Slot& s = slot();
  return std::string_view(tree_->strings_).substr(s.key_at, s.key_len);
}

JsonNode JsonNode::first() const {
  if (size() == 0) return JsonNode();
  return JsonNode(tree_, index_ + 1);
}

JsonNode JsonNode::next(const JsonNode& parent) const {
  const uint32_t n = slot().end;
  return n < parent.slot().end ? JsonNode(tree_, n) : JsonNode();
}

bool JsonNode::find(std::string_view key_wanted, JsonNode* out) const {
  if (!is_object()) return false;
  bool found = false;
  for (JsonNode c = first(); c.valid(); c = c.next(*this)) {
    if (c.key() == key_wanted) {
      *out = c;  // the last one wins, as in nlohmann's DOM
      found = true;
    }
  }
  return found;
}

namespace {

nlohmann::json to_json(const JsonNode& n) {
  switch (n.kind()) {
    case Kind::kNull:
      return nullptr;
    case Kind::kBool:
      return n.get_bool();
    case Kind::kInt:
      return n.get_i64();
    case Kind::kUint:
      return n.get_u64();
    case Kind::kFloat:
      return n.get_double();
    case Kind::kString:
      return std::string(n.str());
    case Kind::kArray: {
      nlohmann::json a = nlohmann::json::array();
      for (JsonNode c = n.first(); c.valid(); c = c.next(n)) a.push_back(to_json(c));
      return a;
    }
    case Kind::kObject: {
      nlohmann::json o = nlohmann::json::object();
      for (JsonNode c = n.first(); c.valid(); c = c.next(n)) o[std::string(c.key())] = to_json(c);
      return o;
    }
  }
  return nullptr;
}

}  // namespace

std::string JsonNode::dump() const { return to_json(*this).dump(); }

}  // namespace fabtrace::report
