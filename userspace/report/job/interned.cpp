#include "userspace/report/job/interned.h"

#include <functional>
#include <memory>
#include <mutex>
#include <tuple>
#include <unordered_map>

namespace fabtrace::report {

namespace {

// Keys are views of the values they map to (heap-held, never moved).
struct Strings {
  std::mutex mu;
  std::unordered_map<std::string_view, std::unique_ptr<Interned::Held>> by_value;
};

Strings& strings() {
  static Strings* s = new Strings;  // never destroyed: rows may outlive static destruction
  return *s;
}

struct OwnerKey {
  std::string_view host, rank;
  long pid;
  bool operator==(const OwnerKey& o) const {
    return pid == o.pid && host == o.host && rank == o.rank;
  }
};
struct OwnerHash {
  size_t operator()(const OwnerKey& k) const {
    const std::hash<std::string_view> h;
    return h(k.host) * 31 + h(k.rank) * 7 + std::hash<long>()(k.pid);
  }
};
struct Owners {
  std::mutex mu;
  std::unordered_map<OwnerKey, std::unique_ptr<RowOwner>, OwnerHash> by_value;
};

Owners& owners() {
  static Owners* o = new Owners;
  return *o;
}

}  // namespace

Interned::Interned() {
  static const Held* const empty = intern("").s_;  // rows are made by the million
  s_ = empty;
}

Interned intern(std::string_view s) {
  Strings& t = strings();
  const std::lock_guard<std::mutex> lock(t.mu);
  const auto it = t.by_value.find(s);
  if (it != t.by_value.end()) return Interned(it->second.get());
  auto held = std::make_unique<Interned::Held>(
      Interned::Held{std::string(s), static_cast<uint32_t>(t.by_value.size())});
  const Interned::Held* p = held.get();
  t.by_value.emplace(std::string_view(p->s), std::move(held));
  return Interned(p);
}

size_t interned_count() {
  Strings& t = strings();
  const std::lock_guard<std::mutex> lock(t.mu);
  return t.by_value.size();
}

const RowOwner& intern_owner(std::string_view host, std::string_view rank, long pid) {
  Owners& t = owners();
  const std::lock_guard<std::mutex> lock(t.mu);
  const auto it = t.by_value.find(OwnerKey{host, rank, pid});
  if (it != t.by_value.end()) return *it->second;
  auto held = std::make_unique<RowOwner>(RowOwner{std::string(host), std::string(rank), pid});
  const RowOwner& o = *held;
  t.by_value.emplace(OwnerKey{o.host, o.rank, o.pid}, std::move(held));
  return o;
}

const RowOwner& no_owner() {
  static const RowOwner& o = intern_owner("", "", 0);
  return o;
}

}  // namespace fabtrace::report
