#include "userspace/report/json_tree.h"

#include <nlohmann/json.hpp>

namespace fabtrace::report {

using Kind = JsonTree::Kind;

// nlohmann's SAX events, appended to the tree: a container's slot comes
// before its children's and is closed (end, size) when it ends.
class JsonTreeBuilder {
 public:
  explicit JsonTreeBuilder(JsonTree* t) : t_(t) {}

  bool null() { return add(Kind::kNull), true; }
  bool boolean(bool b) { return add(Kind::kBool).b = b, true; }
  bool number_integer(int64_t v) { return add(Kind::kInt).v.i = v, true; }
  bool number_unsigned(uint64_t v) { return add(Kind::kUint).v.u = v, true; }
  bool number_float(double v, const std::string&) { return add(Kind::kFloat).v.d = v, true; }
  bool string(std::string& s) {
    const uint32_t at = append(s);
    JsonTree::Slot& slot = add(Kind::kString);
    slot.v.s.at = at;
    slot.v.s.len = static_cast<uint32_t>(s.size());
    return true;
  }
  bool binary(nlohmann::json::binary_t&) { return false; }  // no such thing in JSON text
  bool start_object(size_t) { return open(Kind::kObject); }
  bool key(std::string& k) {
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
  uint32_t append(const std::string& s) {
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
  std::vector<uint32_t> open_;  // the containers not yet closed
  uint32_t key_at_ = 0, key_len_ = 0;
};

bool JsonTree::parse(const std::string& text, JsonError* error) {
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
  JsonTreeBuilder b(this);
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
