#include "userspace/report/json_tree.h"

#include <charconv>
#include <cstdint>
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

// A parser for the JSON that fabtrace writes, ahead of nlohmann's, whose
// lexer (a virtual-free but per-character loop that copies every token) was
// half of `fabtrace report`'s time at a million link rows. It gives the
// builder the events nlohmann's parser gives, for the texts it takes:
// ASCII strings without \u escapes, integers that fit 64 bits, floats that
// std::from_chars reads without overflow or underflow (correctly rounded,
// as glibc's strtod that nlohmann calls). Anything else, valid or not, makes
// it stop (false), and the text is parsed again by nlohmann: its tree and
// its errors stay the reference. Iterative: depth is the builder's bound.
class FastParser {
 public:
  FastParser(const char* p, const char* end, JsonTreeBuilder* b) : p_(p), end_(end), b_(b) {}

  bool parse() {
    std::vector<char> open;  // '{' or '[' of the containers not yet closed
    bool want_value = true;
    for (;;) {
      skip_blanks();
      if (want_value) {
        if (p_ == end_) return false;
        const char c = *p_;
        if (c == '{' || c == '[') {
          ++p_;
          if (!(c == '{' ? b_->start_object(0) : b_->start_array(0))) return false;
          skip_blanks();
          if (p_ < end_ && *p_ == (c == '{' ? '}' : ']')) {
            ++p_;
            c == '{' ? b_->end_object() : b_->end_array();
            want_value = false;
            continue;
          }
          open.push_back(c);
          if (c == '{' && !key()) return false;
          continue;
        }
        if (!scalar()) return false;
        want_value = false;
        continue;
      }
      if (open.empty()) return p_ == end_;  // strict: nothing but blanks after the value
      if (p_ == end_) return false;
      const char in = open.back();
      if (*p_ == ',') {
        ++p_;
        if (in == '{') {
          skip_blanks();
          if (!key()) return false;
        }
        want_value = true;
      } else if (*p_ == (in == '{' ? '}' : ']')) {
        ++p_;
        in == '{' ? b_->end_object() : b_->end_array();
        open.pop_back();
      } else {
        return false;
      }
    }
  }

 private:
  void skip_blanks() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  // "key" then ':'.
  bool key() {
    std::string_view k;
    if (!string(&k) || !b_->key_text(k)) return false;
    skip_blanks();
    if (p_ == end_ || *p_ != ':') return false;
    ++p_;
    return true;
  }

  // A string at p_ (its opening quote): *out views the text itself, or
  // scratch_ when it has escapes.
  bool string(std::string_view* out) {
    if (p_ == end_ || *p_ != '"') return false;
    const char* start = ++p_;
    while (p_ < end_) {
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        *out = std::string_view(start, static_cast<size_t>(p_ - start));
        ++p_;
        return true;
      }
      if (c == '\\') return escaped(start, out);
      if (c < 0x20 || c >= 0x80) return false;  // nlohmann's error, or UTF-8 it checks
      ++p_;
    }
    return false;
  }

  bool escaped(const char* start, std::string_view* out) {
    scratch_.assign(start, static_cast<size_t>(p_ - start));
    while (p_ < end_) {
      const auto c = static_cast<unsigned char>(*p_++);
      if (c == '"') {
        *out = scratch_;
        return true;
      }
      if (c < 0x20 || c >= 0x80) return false;
      if (c != '\\') {
        scratch_ += static_cast<char>(c);
        continue;
      }
      if (p_ == end_) return false;
      switch (*p_++) {
        case '"':
          scratch_ += '"';
          break;
        case '\\':
          scratch_ += '\\';
          break;
        case '/':
          scratch_ += '/';
          break;
        case 'b':
          scratch_ += '\b';
          break;
        case 'f':
          scratch_ += '\f';
          break;
        case 'n':
          scratch_ += '\n';
          break;
        case 'r':
          scratch_ += '\r';
          break;
        case 't':
          scratch_ += '\t';
          break;
        default:
          return false;  // \u (code points, surrogate pairs): nlohmann's
      }
    }
    return false;
  }

  bool literal(std::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word)
      return false;
    p_ += word.size();
    return true;
  }

  bool scalar() {
    switch (*p_) {
      case '"': {
        std::string_view v;
        return string(&v) && b_->text(v);
      }
      case 't':
        return literal("true") && b_->boolean(true);
      case 'f':
        return literal("false") && b_->boolean(false);
      case 'n':
        return literal("null") && b_->null();
      default:
        return number();
    }
  }

  // nlohmann's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?; an
  // integer is unsigned unless it has a minus sign.
  bool number() {
    const char* start = p_;
    const bool minus = *p_ == '-';
    if (minus) ++p_;
    const auto digit = [this] { return p_ < end_ && *p_ >= '0' && *p_ <= '9'; };
    if (!digit()) return false;
    uint64_t v = 0;
    bool fits = true;
    if (*p_ == '0') {
      ++p_;
    } else {
      while (digit()) {
        const auto d = static_cast<uint64_t>(*p_++ - '0');
        if (v > (UINT64_MAX - d) / 10) fits = false;
        v = v * 10 + d;
      }
    }
    bool real = false;
    if (p_ < end_ && *p_ == '.') {
      ++p_;
      if (!digit()) return false;
      while (digit()) ++p_;
      real = true;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (!digit()) return false;
      while (digit()) ++p_;
      real = true;
    }
    if (!real) {
      if (!fits) return false;  // nlohmann reads it as a float
      if (!minus) return b_->number_unsigned(v);
      if (v > uint64_t{1} << 63) return false;
      return b_->number_integer(static_cast<int64_t>(0 - v));
    }
    double d = 0;
    const auto r = std::from_chars(start, p_, d);
    if (r.ec != std::errc() || r.ptr != p_) return false;  // out of range: nlohmann's
    return b_->number_float(d, no_text_);
  }

  const char* p_;
  const char* end_;
  JsonTreeBuilder* b_;
  std::string scratch_;
  const std::string no_text_;  // number_float's text, which the builder does not read
};

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
    JsonTreeBuilder fast(this, max_depth);
    if (FastParser(text.data(), text.data() + text.size(), &fast).parse()) return true;
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
