// A byte form for what processes of one `mpirun` exchange (parsed reports,
// the job's context, per-rank results of `fabtrace report --mpi`):
// fixed-width integers, doubles as their bits, strings and lists prefixed by
// their length. Same binary on both sides, so no version: not a file format.
//
// A struct's byte form is written once, as a template over the direction:
//   template <typename IO, typename S> void fields(IO& io, S& x) {
//     io(x.name, x.count, x.flag);
//     io.list(x.items, kMinItemBytes, [&](auto& item) { io(item.a, item.b); });
//   }
// called with a Writer and a const struct, or a Reader and one to fill: each
// field is written and read back in the same order at its own type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace fabtrace::report::byte_form {

class Writer {
 public:
  explicit Writer(std::string* out) : out_(out) {}
  template <typename T>
  void num(T v) {
    static_assert(std::is_arithmetic_v<T>);
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out_->append(b, sizeof(T));
  }
  void flag(bool v) { num<uint8_t>(v ? 1 : 0); }
  void str(const std::string& s) {
    num<uint64_t>(s.size());
    out_->append(s);
  }
  // Each value at its own type: a bool as a flag, a string with its length,
  // an array item by item.
  template <typename... T>
  void operator()(const T&... v) {
    (put(v), ...);
  }
  // A list: its length, then each item as `each` writes it.
  template <typename T, typename Each>
  void list(const std::vector<T>& v, size_t /*min_item*/, Each&& each) {
    num<uint64_t>(v.size());
    for (const T& x : v) each(x);
  }

 private:
  template <typename T>
  void put(const T& v) {
    if constexpr (std::is_same_v<T, bool>)
      flag(v);
    else if constexpr (std::is_same_v<T, std::string>)
      str(v);
    else if constexpr (std::is_array_v<T>)
      for (const auto& x : v) put(x);
    else if constexpr (std::is_enum_v<T>)
      num(static_cast<std::underlying_type_t<T>>(v));
    else
      num(v);
  }
  std::string* out_;
};

// Reads what Writer wrote; every read is checked against the buffer's end, and
// once one fails every later one does (ok() tells at the end).
class Reader {
 public:
  Reader(const char* p, size_t size, size_t pos) : p_(p), size_(size), pos_(pos) {}
  template <typename T>
  T num() {
    T v{};
    if (!ok_ || size_ - pos_ < sizeof(T)) {
      ok_ = false;
      return v;
    }
    std::memcpy(&v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  bool flag() { return num<uint8_t>() != 0; }
  std::string str() {
    const uint64_t n = num<uint64_t>();
    if (!ok_ || n > size_ - pos_) {
      ok_ = false;
      return {};
    }
    std::string s(p_ + pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return s;
  }
  // A list's length, refused when its items (at least `min_item` bytes each)
  // cannot all be in what is left of the buffer.
  size_t count(size_t min_item) {
    const uint64_t n = num<uint64_t>();
    if (!ok_ || n > (size_ - pos_) / min_item) {
      ok_ = false;
      return 0;
    }
    return static_cast<size_t>(n);
  }
  bool ok() const { return ok_; }
  size_t pos() const { return pos_; }
  // What Writer's operator() and list wrote, read back into the same fields.
  template <typename... T>
  void operator()(T&... v) {
    (get(v), ...);
  }
  template <typename T, typename Each>
  void list(std::vector<T>& v, size_t min_item, Each&& each) {
    v.resize(count(min_item));
    for (T& x : v) each(x);
  }

 private:
  template <typename T>
  void get(T& v) {
    if constexpr (std::is_same_v<T, bool>)
      v = flag();
    else if constexpr (std::is_same_v<T, std::string>)
      v = str();
    else if constexpr (std::is_array_v<T>)
      for (auto& x : v) get(x);
    else if constexpr (std::is_enum_v<T>)
      v = static_cast<T>(num<std::underlying_type_t<T>>());
    else
      v = num<T>();
  }
  const char* p_;
  size_t size_, pos_;
  bool ok_ = true;
};

}  // namespace fabtrace::report::byte_form
