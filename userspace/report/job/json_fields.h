// The typed field readers of report_reader.cpp: each reads one key of a JSON
// object (json_tree.h) within the bounds of common/input_limits.h, or throws
// BadField naming it ("nics[2].busy_ns is negative"). The first bad field of a
// report is the one its message names.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/input_limits.h"
#include "userspace/report/job/json_tree.h"

namespace fabtrace::report::json_fields {

// Thrown by the field readers below; caught in parse_process_report.
struct BadField {
  std::string what;
};

using Node = JsonNode;

// An object's members looked up among a fixed list of keys, found in one pass
// over its members: find() on the object scans them all (the last of
// repeated keys wins), and the reader asks an op row (a million of them in a
// job of 1024 ranks) for about 20 keys. Lookups start where the last one
// ended: the list is in the order the reader asks, so most cost one compare.
// A key not in the list is looked up on the object.
template <size_t N>
class Members {
 public:
  Members(const Node& obj, const std::string_view (&keys)[N]) : obj_(obj), keys_(keys) {
    size_t at = 0;
    for (Node c = obj.first(); c.valid(); c = c.next(obj)) {
      const size_t i = slot_of(c.key(), at);
      if (i == N) continue;  // a key the reader does not ask for
      found_[i] = c;         // a repeated key: the last one stays, as with find()
      at = i + 1;
    }
  }
  bool find(std::string_view key, Node* out) const {
    const size_t i = slot_of(key, next_);
    if (i == N) return obj_.find(key, out);
    next_ = i + 1;
    if (!found_[i].valid()) return false;
    *out = found_[i];
    return true;
  }
  bool contains(std::string_view key) const {
    Node n;
    return find(key, &n);
  }

 private:
  // The index of key in keys_, looking from `from` on and round; N if absent.
  size_t slot_of(std::string_view key, size_t from) const {
    for (size_t k = 0; k < N; ++k) {
      const size_t i = (from + k) % N;
      if (keys_[i] == key) return i;
    }
    return N;
  }
  const Node& obj_;
  const std::string_view (&keys_)[N];
  Node found_[N];
  mutable size_t next_ = 0;
};

// A non-negative JSON integer (a float only when it is one); null (NaN or inf
// in the writer) reads as 0. Bounded by the callers below.
template <typename Obj>
uint64_t get_number(const Obj& obj, const char* key, const std::string& where, bool required) {
  Node it;
  if (!obj.find(key, &it)) {
    if (required) throw BadField{where + key + " is missing"};
    return 0;
  }
  if (it.is_null()) return 0;
  if (it.is_number_unsigned()) return it.get_u64();
  if (it.is_number_integer()) {
    if (it.get_i64() < 0) throw BadField{where + key + " is negative"};
    return static_cast<uint64_t>(it.get_i64());
  }
  if (it.is_number_float()) {
    uint64_t v = 0;
    // Checked before the cast: a double beyond uint64 would make it undefined.
    if (!double_to_count(it.get_double(), &v))
      throw BadField{where + key + " is not a count (" + it.dump() + ")"};
    return v;
  }
  throw BadField{where + key + " is " + it.type_name() + ", not a number"};
}

// A count (at most limits::kMaxCount).
template <typename Obj>
uint64_t get_u64(const Obj& obj, const char* key, const std::string& where, bool required = false) {
  const uint64_t v = get_number(obj, key, where, required);
  if (!count_ok(v)) throw BadField{where + key + " is out of range (" + std::to_string(v) + ")"};
  return v;
}

// A time in ns (at most limits::kMaxTimeNs).
template <typename Obj>
uint64_t get_time_ns(const Obj& obj, const char* key, const std::string& where) {
  const uint64_t v = get_number(obj, key, where, false);
  if (!time_ns_ok(v))
    throw BadField{where + key + " is beyond any clock (" + std::to_string(v) + ")"};
  return v;
}

// A finite number in [lo, hi] (by default a non-negative time in ns, a
// rate or a share: every double of a report is one of those).
template <typename Obj>
double get_double(const Obj& obj, const char* key, const std::string& where, double lo = 0.0,
                  double hi = static_cast<double>(limits::kMaxTimeNs)) {
  Node it;
  if (!obj.find(key, &it) || it.is_null()) return 0.0;
  if (!it.is_number()) throw BadField{where + key + " is " + it.type_name() + ", not a number"};
  const double v = it.get_double();
  if (!finite_in(v, lo, hi)) throw BadField{where + key + " is out of range (" + it.dump() + ")"};
  return v;
}

template <typename Obj>
bool get_bool(const Obj& obj, const char* key, const std::string& where) {
  Node it;
  if (!obj.find(key, &it) || it.is_null()) return false;
  if (!it.is_boolean()) throw BadField{where + key + " is " + it.type_name() + ", not a boolean"};
  return it.get_bool();
}

template <typename Obj>
std::string get_string(const Obj& obj, const char* key, const std::string& where,
                       bool required = false) {
  Node it;
  if (!obj.find(key, &it)) {
    if (required) throw BadField{where + key + " is missing"};
    return "";
  }
  if (it.is_string()) {
    const std::string_view v = it.str();
    if (v.size() > limits::kMaxStringBytes)
      throw BadField{where + key + " is " + std::to_string(v.size()) + " bytes long, more than " +
                     std::to_string(limits::kMaxStringBytes)};
    return std::string(v);
  }
  // A launcher-given rank written as a number by another tool: accept it.
  if (it.is_number_integer()) return std::to_string(it.get_i64());
  throw BadField{where + key + " is " + it.type_name() + ", not a string"};
}

// The array `key` of obj; false when absent or null.
inline bool get_array(const Node& obj, const char* key, const std::string& where, Node* arr) {
  if (!obj.find(key, arr) || arr->is_null()) return false;
  if (!arr->is_array()) throw BadField{where + key + " is " + arr->type_name() + ", not an array"};
  return true;
}

inline const Node& as_object(const Node& v, const std::string& where) {
  if (!v.is_object()) throw BadField{where + " is " + v.type_name() + ", not an object"};
  return v;
}

// Calls each(element, index) for every element of an array.
template <typename Each>
void for_each_element(const Node& arr, Each&& each) {
  size_t i = 0;
  for (Node e = arr.first(); e.valid(); e = e.next(arr)) each(e, i++);
}

// Calls each(object, where) for every element of the array `key` of obj,
// which must each be an object; `where` ("nics[2].") prefixes messages.
template <typename Each>
void for_each_object(const Node& obj, const char* key, const std::string& where, Each&& each) {
  Node arr;
  if (!get_array(obj, key, where, &arr)) return;
  for_each_element(arr, [&](const Node& e, size_t i) {
    const std::string w = where + key + "[" + std::to_string(i) + "]";
    each(as_object(e, w), w + ".");
  });
}

// One number of a report struct: a count or a double (get_u64 / get_double's
// bounds). A struct's numbers are read from a table, in its order: the first
// bad one is the one a message names.
template <typename T>
struct NumField {
  const char* key;
  uint64_t T::*count;
  double T::*real;
};
template <typename T>
constexpr NumField<T> count_field(const char* key, uint64_t T::*m) {
  return {key, m, nullptr};
}
template <typename T>
constexpr NumField<T> real_field(const char* key, double T::*m) {
  return {key, nullptr, m};
}

template <typename Obj, typename T, size_t N>
void read_numbers(const Obj& obj, const std::string& where, const NumField<T> (&fields)[N], T* x) {
  for (const NumField<T>& f : fields) {
    if (f.count)
      x->*f.count = get_u64(obj, f.key, where);
    else
      x->*f.real = get_double(obj, f.key, where);
  }
}

}  // namespace fabtrace::report::json_fields
