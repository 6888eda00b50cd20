// Address vectors: each inserted address gets its readable name at insert time,
// so that link labels never need the provider at report time.
#include <rdma/fi_errno.h>

#include <new>
#include <vector>

#include "preload/objects.h"
#include "preload/op_tables.h"
#include "preload/provider_call.h"
#include "preload/runtime.h"

namespace fabtrace {

namespace {

AvWrap* av_of(struct fid_av* av) { return FABTRACE_CONTAINER_OF(av->ops, AvWrap, ops); }

// `raw` is the inserted address array when the caller had one (fi_av_insert):
// providers that resolve addresses lazily (ofi_rxd) cannot look an entry up
// yet, but can still print the address that was inserted.
void remember(AvWrap* w, const fi_addr_t* addrs, size_t n, const void* raw_in) {
  if (!FABTRACE_HAS_OP(w->real_ops, fi_ops_av, lookup) ||
      !FABTRACE_HAS_OP(w->real_ops, fi_ops_av, straddr))
    return;
  std::vector<std::pair<fi_addr_t, std::string>> got;
  got.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (addrs[i] == FI_ADDR_NOTAVAIL) continue;
    char raw[256];
    size_t rl = sizeof(raw);
    const void* a = raw;
    if (w->real_ops->lookup(w->av, addrs[i], raw, &rl) != 0 || rl > sizeof(raw)) {
      if (!raw_in || !w->addrlen) continue;
      a = static_cast<const char*>(raw_in) + i * w->addrlen;
    }
    char str[256];
    size_t sl = sizeof(str);
    const char* s = w->real_ops->straddr(w->av, a, str, &sl);
    if (s) got.emplace_back(addrs[i], s);
  }
  std::lock_guard<std::mutex> lk(w->mu);
  for (auto& g : got) w->names[g.first] = std::move(g.second);
}

// Runs an insert, giving the provider an output array when the application
// passed none (FI_AV_TABLE allows that), then names what was inserted.
template <typename Call>
int insert_and_remember(AvWrap* w, fi_addr_t* fi_addr, size_t count, const void* raw, Call&& call) {
  std::vector<fi_addr_t> tmp;
  fi_addr_t* out = fi_addr;
  if (!out && count) {
    tmp.assign(count, FI_ADDR_NOTAVAIL);
    out = tmp.data();
  }
  const int ret = call_nested([&] { return call(out); });
  if (ret > 0 && out) remember(w, out, count, raw);
  return ret;
}

int av_insert(struct fid_av* av, const void* addr, size_t count, fi_addr_t* fi_addr, uint64_t flags,
              void* context) {
  AvWrap* w = av_of(av);
  return insert_and_remember(w, fi_addr, count, addr, [&](fi_addr_t* out) {
    return w->real_ops->insert(av, addr, count, out, flags, context);
  });
}

int av_insertsvc(struct fid_av* av, const char* node, const char* service, fi_addr_t* fi_addr,
                 uint64_t flags, void* context) {
  AvWrap* w = av_of(av);
  return insert_and_remember(w, fi_addr, 1, nullptr, [&](fi_addr_t* out) {
    return w->real_ops->insertsvc(av, node, service, out, flags, context);
  });
}

int av_insertsym(struct fid_av* av, const char* node, size_t nodecnt, const char* service,
                 size_t svccnt, fi_addr_t* fi_addr, uint64_t flags, void* context) {
  AvWrap* w = av_of(av);
  return insert_and_remember(w, fi_addr, nodecnt * svccnt, nullptr, [&](fi_addr_t* out) {
    return w->real_ops->insertsym(av, node, nodecnt, service, svccnt, out, flags, context);
  });
}

}  // namespace

std::string AvWrap::name_of(fi_addr_t a) {
  std::lock_guard<std::mutex> lk(mu);
  auto it = names.find(a);
  return it == names.end() ? std::string() : it->second;
}

AvWrap* wrap_av(struct fid_av* av, size_t addrlen) {
  auto* w = new (std::nothrow) AvWrap();
  if (!w) return nullptr;
  w->av = av;
  w->addrlen = addrlen;
  w->real_ops = av->ops;
  copy_table(&w->ops, av->ops);
  FABTRACE_SHIM(w->ops, w->real_ops, fi_ops_av, insert, av_insert);
  FABTRACE_SHIM(w->ops, w->real_ops, fi_ops_av, insertsvc, av_insertsvc);
  FABTRACE_SHIM(w->ops, w->real_ops, fi_ops_av, insertsym, av_insertsym);
  av->ops = &w->ops;
  return w;
}

AvWrap* av_wrap_of(struct fid* fid) {
  if (!fid || fid->fclass != FI_CLASS_AV) return nullptr;
  auto* av = FABTRACE_CONTAINER_OF(fid, struct fid_av, fid);
  // Ours exactly when its table is one of our copies: our insert shim is in it.
  if (!av->ops || av->ops->insert != av_insert) return nullptr;
  return av_of(av);
}

}  // namespace fabtrace
