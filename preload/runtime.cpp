#include "preload/runtime.h"

#include "common/env.h"
#include "preload/provider_call.h"
#include "preload/stats.h"

namespace fabtrace {

thread_local int t_nested = 0;

std::atomic<Runtime*> g_runtime{nullptr};

Runtime* create_runtime() {
  static Runtime* r = new Runtime();  // thread-safe, once
  g_runtime.store(r, std::memory_order_release);
  return r;
}

bool runtime_configure() {
  static std::once_flag once;
  Runtime& rt = runtime();
  std::call_once(once, [&rt] {
    Config& c = rt.cfg;
    c.enabled = env_bool("FABTRACE", true);
    if (!c.enabled) return;
    c.dir = env_str("FABTRACE_DIR", ".");
    if (c.dir.empty()) c.dir = ".";
    c.to_stderr = c.dir == "stderr" || c.dir == "-";
    c.inflight = env_u64("FABTRACE_INFLIGHT", 16384, 64, 1u << 20);
    // (link, op, size) rows per thread: the shards hold the limit themselves.
    set_shard_max_cells(env_u64("FABTRACE_MAX_CELLS", Shard::kDefaultMaxCells, 16, 1ULL << 32));
    c.cqgap = env_bool("FABTRACE_CQGAP", true);
    c.json = env_bool("FABTRACE_JSON", true);
    c.stall_us = env_u64("FABTRACE_STALL_US", 1000, 1, 3600ULL * 1000000);
    c.slow_op_us = env_u64("FABTRACE_SLOW_OP_US", 1000, 1, 3600ULL * 1000000);
    rt.rank = detect_rank();
  });
  return rt.cfg.enabled;
}

}  // namespace fabtrace
