#include "preload/stats.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "preload/probes.h"

namespace fabtrace {

__thread Shard* t_shard __attribute__((tls_model("initial-exec"))) = nullptr;
std::atomic<uint32_t> g_live_epoch{1};

namespace {
std::atomic<Shard*> g_shards{nullptr};
std::atomic<uint64_t> g_max_cells{Shard::kDefaultMaxCells};

uint64_t hash_key(const CellKey& k) {
  uint64_t h = reinterpret_cast<uintptr_t>(k.ep) * 0x9E3779B97F4A7C15ULL;
  h ^= (k.peer + 0x632BE59BD9B4E019ULL) * 0xBF58476D1CE4E5B9ULL;
  h ^= (k.bytes + static_cast<uint64_t>(k.kind)) * 0x94D049BB133111EBULL;
  return h ^ (h >> 29);
}
}  // namespace

Shard* new_shard() {
  Shard* s = new (std::nothrow) Shard();
  if (!s) return nullptr;
  s->max_cells = g_max_cells.load(std::memory_order_relaxed);
  Shard* head = g_shards.load(std::memory_order_relaxed);
  do {
    s->next = head;
  } while (!g_shards.compare_exchange_weak(head, s, std::memory_order_release,
                                           std::memory_order_relaxed));
  t_shard = s;
  // This thread's first fabric activity: tell a session who it is.
  if (probes::thread_start_on()) probes::fire_thread_start();
  return s;
}

void set_shard_max_cells(uint64_t n) { g_max_cells.store(n, std::memory_order_relaxed); }

Shard* all_shards() { return g_shards.load(std::memory_order_acquire); }

Cell* Shard::cell_slow(const EpWrap* ep, fi_addr_t peer, uint64_t bytes, OpKind kind,
                       bool size_unknown) {
  const CellKey k{ep, peer, bytes, kind, size_unknown};
  // A cell that exists is found whatever the limit: the limit stops new cells
  // only (it was checked before the lookup, so a full shard lost every op of
  // its existing cells but the last one used).
  if (cap) {
    for (uint64_t j = hash_key(k) & (cap - 1); Cell* c = slots[j]; j = (j + 1) & (cap - 1))
      if (c->key == k) return mru = c;
  }
  if (used >= max_cells) {
    ++cells_full;
    return nullptr;
  }
  if (used * 2 >= cap) {
    // Grow (or create) the open-addressing table: rare, off the steady state.
    const uint64_t ncap = cap ? cap * 2 : 64;
    Cell** ns = static_cast<Cell**>(std::calloc(ncap, sizeof(Cell*)));
    if (!ns) return nullptr;
    for (uint64_t i = 0; i < cap; ++i) {
      Cell* c = slots[i];
      if (!c) continue;
      uint64_t j = hash_key(c->key) & (ncap - 1);
      while (ns[j]) j = (j + 1) & (ncap - 1);
      ns[j] = c;
    }
    // The old table is not freed: the report at exit or the live publisher
    // may be walking it from another thread. It is at most half the size of
    // the live one. A reader that loads the new cap (acquire) sees the new
    // table; one that loads the old cap indexes either table within bounds.
    __atomic_store_n(&slots, ns, __ATOMIC_RELEASE);
    __atomic_store_n(&cap, ncap, __ATOMIC_RELEASE);
  }
  uint64_t j = hash_key(k) & (cap - 1);
  while (slots[j]) j = (j + 1) & (cap - 1);
  Cell* c = new (std::nothrow) Cell();
  if (!c) return nullptr;
  c->key = k;
  __atomic_store_n(&slots[j], c, __ATOMIC_RELEASE);  // the key before the cell is seen
  ++used;
  return mru = c;
}

void Shard::reset() {
  for (uint64_t i = 0; i < cap; ++i) {
    if (!slots[i]) continue;
    const CellKey k = slots[i]->key;
    *slots[i] = Cell();
    slots[i]->key = k;
  }
  cells_full = 0;
  timeline.chunk.store(nullptr, std::memory_order_relaxed);
  timeline.dropped = timeline.filtered = 0;
  for (PollStats& p : cq) p = PollStats();
  for (NicLocal& l : nic) l = NicLocal();
  give_nics_merge_space();
}

}  // namespace fabtrace
