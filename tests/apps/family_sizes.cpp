// "sizes" family: messages of several sizes, 0 bytes included, into receive
// buffers of --size bytes, over each interface the provider has (tagged, then
// untagged). The ground truth of how receives should be filed: the program
// knows from its own plan how many messages of each size its receives got
// (received_sizes in the result), whatever the CQ format tells; when the
// format carries a length it checks every completion's against the plan too.
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "env.h"
#include "families.h"

namespace ftapp {
namespace {

// 0, 1, 64, 256, 1000 bytes and the posted size itself, as far as they fit.
std::vector<size_t> plan_sizes(size_t posted) {
  std::vector<size_t> v;
  for (size_t s : {size_t{0}, size_t{1}, size_t{64}, size_t{256}, size_t{1000}, posted})
    if (s <= posted && std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
  return v;
}

void sender(Env& env, bool tagged, const std::vector<size_t>& sizes) {
  Fabric& f = env.fab;
  const size_t posted = env.opt.size;
  const size_t total = env.opt.count * sizes.size();
  Buffer* buf = f.alloc(env.opt.window * posted, false);
  std::memset(buf->data, 0x5a, buf->len);
  SlotPool win(env, env.opt.window, nullptr);
  const char* fn = tagged ? "fi_tsend" : "fi_send";
  env.recv(std::string(fn) + " ready");  // every first receive is posted
  for (size_t i = 0; i < total; ++i) {
    const size_t slot = win.acquire();
    uint8_t* p = buf->data + slot * posted;
    const size_t len = sizes[i % sizes.size()];
    OpCtx* ctx = env.ctxs.make(fn, 0, static_cast<uint32_t>(i), slot);
    if (tagged)
      env.post(fn, ctx, [&] { return fi_tsend(f.ep, p, len, buf->desc, f.peer, i, ctx); });
    else
      env.post(fn, ctx, [&] { return fi_send(f.ep, p, len, buf->desc, f.peer, ctx); });
    win.set(slot, ctx);
  }
  win.drain();
  env.sync(std::string(fn) + " done");
}

void receiver(Env& env, bool tagged, const std::vector<size_t>& sizes) {
  Fabric& f = env.fab;
  const size_t posted = env.opt.size;
  const size_t total = env.opt.count * sizes.size();
  const size_t rx_depth = std::min<size_t>(f.info->rx_attr->size, 256);
  const size_t nslots = std::min(total, std::max(env.opt.window, rx_depth));
  Buffer* buf = f.alloc(nslots * posted, false);
  const char* fn = tagged ? "fi_trecv" : "fi_recv";
  std::map<uint64_t, uint64_t> by_len;  // from the completions' lengths, when they have one
  size_t with_len = 0;
  SlotPool win(env, nslots, [&](OpCtx* c) {
    if (!c->comp.has_flags) return;
    ++with_len;
    ++by_len[c->comp.len];
    if (tagged && c->comp.len != sizes[c->seq % sizes.size()])
      env.stats.data_error(std::string(fn) + " #" + std::to_string(c->seq) + ": length " +
                           std::to_string(c->comp.len) + ", sent " +
                           std::to_string(sizes[c->seq % sizes.size()]));
  });
  for (size_t i = 0; i < total; ++i) {
    if (i == nslots) env.send(std::string(tagged ? "fi_tsend" : "fi_send") + " ready");
    const size_t slot = win.acquire();
    uint8_t* p = buf->data + slot * posted;
    OpCtx* ctx = env.ctxs.make(fn, 0, static_cast<uint32_t>(i), slot);
    if (tagged)
      env.post(fn, ctx,
               [&] { return fi_trecv(f.rx_ep, p, posted, buf->desc, FI_ADDR_UNSPEC, i, 0, ctx); });
    else
      env.post(fn, ctx,
               [&] { return fi_recv(f.rx_ep, p, posted, buf->desc, FI_ADDR_UNSPEC, ctx); });
    win.set(slot, ctx);
  }
  if (total <= nslots) env.send(std::string(tagged ? "fi_tsend" : "fi_send") + " ready");
  win.drain();
  // Every message of the plan arrived into one of these receives.
  std::map<uint64_t, uint64_t> planned;
  for (size_t i = 0; i < total; ++i) ++planned[sizes[i % sizes.size()]];
  for (const auto& kv : planned)
    for (uint64_t k = 0; k < kv.second; ++k) env.stats.received(fn, kv.first);
  if (with_len == total && by_len != planned)
    env.stats.data_error(std::string(fn) + ": the completions' lengths differ from the plan");
  env.sync(std::string(tagged ? "fi_tsend" : "fi_send") + " done");
}

}  // namespace

void run_sizes(Env& env) {
  const std::vector<size_t> sizes = plan_sizes(env.opt.size);
  for (bool tagged : {true, false}) {
    if (!(env.caps & (tagged ? FI_TAGGED : FI_MSG))) continue;
    if (env.rank == 0)
      sender(env, tagged, sizes);
    else
      receiver(env, tagged, sizes);
  }
}

}  // namespace ftapp
