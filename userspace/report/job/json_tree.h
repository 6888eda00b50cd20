// A JSON document read with rapidjson's SAX reader (nlohmann's for what
// rapidjson refuses or could read otherwise) into two flat arrays (the
// values in document order, and one buffer of their strings), for reading a
// rank's report: nlohmann's DOM allocates a map node, and often a key string,
// per value, and that was half of `fabtrace report`'s time on a job of 1M
// link rows.
//
// A JsonNode answers what the report reader asks of a value with the answers
// nlohmann's DOM gives: its type and type name, a member by key (the last one
// when a key repeats, as the DOM keeps), numbers converted as get<T>()
// converts them, and dump() for messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fabtrace::report {

class JsonNode;

// Why a text is not a JSON document, as nlohmann tells it.
struct JsonError {
  size_t byte = 0;   // where the parser stopped
  int id = 0;        // nlohmann's exception id: 1xx a syntax error, 406 a number overflow
  std::string what;  // its message
  bool syntax() const { return id >= 100 && id < 200; }
  bool too_deep() const { return id == kTooDeep; }
  static constexpr int kTooDeep = 501;  // ours: nested deeper than parse()'s max_depth
};

class JsonTree {
 public:
  enum class Kind : uint8_t { kNull, kBool, kInt, kUint, kFloat, kString, kArray, kObject };

  // Parses text (strict: nothing but blanks after the value). False, with
  // *error, where nlohmann's DOM parser would have thrown, or (too_deep())
  // at the first array or object nested deeper than max_depth (0: any
  // depth). Both SAX parsers keep their own stacks, so the bound is for
  // what walks the tree recursively (dump()), checked as the parse goes
  // rather than by a pass over the text before it.
  // A tree parses many texts with the space of the largest so far (a
  // parsing thread keeps one: no page faults for every report).
  bool parse(const std::string& text, JsonError* error, int max_depth = 0);
  JsonNode root() const;
  // Frees the space when it is more than `bytes` (after an unusually large text).
  void trim(size_t bytes);

 private:
  friend class JsonNode;
  friend class JsonTreeBuilder;
  struct Slot {
    Kind kind = Kind::kNull;
    bool b = false;
    uint32_t end = 0;                  // index past this value's subtree
    uint32_t size = 0;                 // array elements / object members
    uint32_t key_at = 0, key_len = 0;  // in strings_: the member's key in its object
    union {
      int64_t i;
      uint64_t u;
      double d;
      struct {
        uint32_t at, len;
      } s;
    } v{};
  };
  std::vector<Slot> slots_;
  std::string strings_;
};

class JsonNode {
 public:
  using Kind = JsonTree::Kind;
  Kind kind() const { return slot().kind; }
  bool is_null() const { return kind() == Kind::kNull; }
  bool is_boolean() const { return kind() == Kind::kBool; }
  bool is_number_integer() const { return kind() == Kind::kInt || kind() == Kind::kUint; }
  bool is_number_unsigned() const { return kind() == Kind::kUint; }
  bool is_number_float() const { return kind() == Kind::kFloat; }
  bool is_number() const { return is_number_integer() || is_number_float(); }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_array() const { return kind() == Kind::kArray; }
  bool is_object() const { return kind() == Kind::kObject; }
  const char* type_name() const;  // nlohmann's: "null", "boolean", "number", "string", ...

  // Numbers converted as nlohmann's get<T>() converts them (a plain cast).
  int64_t get_i64() const;
  uint64_t get_u64() const;
  double get_double() const;
  bool get_bool() const { return slot().b; }
  std::string_view str() const;  // a string's bytes (unescaped); "" for other kinds

  // Elements of an array, members of an object (repeated keys counted: the
  // reader asks the size of arrays only); 0 otherwise.
  size_t size() const { return is_array() || is_object() ? slot().size : 0; }
  // The member `key` of an object (the last of repeated keys); false when absent.
  bool find(std::string_view key, JsonNode* out) const;
  bool contains(std::string_view key) const {
    JsonNode n;
    return find(key, &n);
  }
  // Children of an array or object in document order: for (JsonNode c =
  // n.first(); c.valid(); c = c.next(n)).
  JsonNode first() const;
  JsonNode next(const JsonNode& parent) const;
  bool valid() const { return tree_ != nullptr; }
  // A value's JSON text as nlohmann's dump() writes it (for messages).
  std::string dump() const;
  std::string_view key() const;  // a member's key in its object ("" elsewhere)

  JsonNode() = default;

 private:
  friend class JsonTree;
  JsonNode(const JsonTree* t, uint32_t i) : tree_(t), index_(i) {}
  const JsonTree::Slot& slot() const { return tree_->slots_[index_]; }
  template <typename T>
  T number_as() const;
  const JsonTree* tree_ = nullptr;
  uint32_t index_ = 0;
};

inline JsonNode JsonTree::root() const { return slots_.empty() ? JsonNode() : JsonNode(this, 0); }

}  // namespace fabtrace::report
