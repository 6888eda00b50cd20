// The inline part of Timeline::append, apart from timeline.h because it needs
// the Shard and Cell it appends for (preload/stats.h includes timeline.h).
#pragma once

#include "preload/inflight.h"
#include "preload/stats.h"
#include "preload/timeline.h"

namespace fabtrace {

inline void Timeline::put(OpChunk* ch, const OpRecord* rec, uint64_t end, uint64_t bytes,
                          uint32_t link, bool error, uint16_t flags) {
  const uint32_t i = ch->committed.load(std::memory_order_relaxed);
  ch->e[i] = oplog::OpEntry{rec->start,
                            end,
                            bytes,
                            link,
                            rec->tid,
                            static_cast<uint8_t>(rec->kind),
                            error ? uint8_t{1} : uint8_t{0},
                            flags,
                            0};
  ch->committed.store(i + 1, std::memory_order_release);  // the writer may read it now
}

inline void Timeline::append(Shard* s, Cell* c, const OpRecord* rec, uint64_t end, uint64_t bytes,
                             bool error, uint16_t flags) {
  // fast_min_bytes_ is kSlowPathOnly under a NIC filter, which the slow path applies;
  // so is the capture window when the op is outside it.
  if (__builtin_expect(s && c && c->link_id < kMaxLinks && bytes >= fast_min_bytes_ &&
                           in_window(rec->start, end),
                       1)) {
    OpChunk* ch = s->timeline.chunk.load(std::memory_order_relaxed);
    if (ch && ch->committed.load(std::memory_order_relaxed) < OpChunk::kEntries) {
      put(ch, rec, end, bytes, c->link_id, error, flags);
      return;
    }
  }
  append_slow(s, c, rec, end, bytes, error, flags);
}

}  // namespace fabtrace
