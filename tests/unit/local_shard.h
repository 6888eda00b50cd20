// A statistics shard of a test's own (not on the list of all shards); its
// cells are freed at the end. Below 32 cells its table never grows, so no
// table is left behind.
#pragma once

#include <cstdlib>

#include "preload/stats.h"

namespace fabtrace {
namespace test {

struct LocalShard {
  Shard s;
  LocalShard() = default;
  LocalShard(const LocalShard&) = delete;
  LocalShard& operator=(const LocalShard&) = delete;
  ~LocalShard() {
    for (uint64_t i = 0; i < s.cap; ++i) delete s.slots[i];
    std::free(s.slots);
  }
};

}  // namespace test
}  // namespace fabtrace
