// Strings that a million link rows share: hosts, ranks, addresses, op names,
// verdicts. Each distinct value is held once for the life of the process and
// a row keeps a pointer to it (8 bytes, against a 32-byte std::string and,
// for an address, its 64-byte heap copy: 1M rows held 400 MB of them).
//
// The values are never freed: `fabtrace report` reads one job per process,
// and every value came from one of its files (a test process that loads many
// jobs keeps the union of their names). Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace fabtrace::report {

// An interned string: compares and copies as a pointer, reads as the string.
class Interned {
 public:
  Interned();  // ""
  const std::string& str() const { return s_->s; }
  // A number of its own, 0 .. interned_count() - 1 in the order values were
  // first interned: tables indexed by it stand in for hashing the strings.
  uint32_t id() const { return s_->id; }
  bool operator==(Interned o) const { return s_ == o.s_; }  // one copy per value
  bool operator!=(Interned o) const { return s_ != o.s_; }

  struct Held {
    std::string s;
    uint32_t id;
  };

 private:
  friend Interned intern(std::string_view s);
  explicit Interned(const Held* s) : s_(s) {}
  const Held* s_;
};

// The one copy of s.
Interned intern(std::string_view s);
// How many distinct values were interned so far (every id is below it).
size_t interned_count();

// The process that owns a link row's local side: (host, rank, pid), interned
// as one value (the rows of a rank share it).
struct RowOwner {
  std::string host, rank;
  long pid = 0;
};
const RowOwner& intern_owner(std::string_view host, std::string_view rank, long pid);
const RowOwner& no_owner();  // ("", "", 0)

}  // namespace fabtrace::report
