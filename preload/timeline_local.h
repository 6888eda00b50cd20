// A thread's share of the per-op timeline: the chunk it appends to and its
// counts, kept inside the thread's Shard (preload/stats.h). Apart from
// preload/timeline.h so that the shard needs nothing of the Timeline.
#pragma once

#include <atomic>
#include <cstdint>

#include "common/oplog_format.h"

namespace fabtrace {

struct OpChunk {
  static constexpr uint32_t kEntries = 1636;  // about 64 KiB
  std::atomic<uint32_t> committed{0};         // entries the owner has written
  uint32_t flushed = 0;                       // entries the writer has written (writer only)
  std::atomic<uint32_t> free_next{0};         // free stack link: index + 1, 0 = none
  OpChunk* full_next = nullptr;               // full list link
  oplog::OpEntry e[kEntries];
};

// Per-thread timeline state, inside the thread's Shard.
struct TimelineLocal {
  std::atomic<OpChunk*> chunk{nullptr};  // written by the owner, read by the writer
  uint64_t dropped = 0;                  // no free chunk
  uint64_t filtered = 0;                 // below the byte floor or not on the selected NIC
  uint64_t outside = 0;                  // outside the capture window
};

}  // namespace fabtrace
