// A byte form for what processes of one `mpirun` exchange (parsed reports,
// the job's context, per-rank results of `fabtrace report --mpi`):
// fixed-width integers, doubles as their bits, strings and lists prefixed by
// their length. Same binary on both sides, so no version: not a file format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

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

 private:
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

 private:
  const char* p_;
  size_t size_, pos_;
  bool ok_ = true;
};

}  // namespace fabtrace::report::byte_form
