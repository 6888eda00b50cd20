// Where a provider's CQ and endpoint keep what the uprobe programs need to
// pair the completions of a CQ opened before the session (struct
// UprobeLayout), found in the helper's own objects' memory; and whether a CQ's
// read reaches its readfrom through the op table.
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <sys/uio.h>
#include <unistd.h>

#include <set>
#include <string>
#include <vector>

#include "bpf/uprobe_ops.h"
#include "userspace/record/uprobes/optable_probe.h"

namespace fabtrace {

namespace {

// Whether cq->ops->read reaches cq->ops->readfrom through the table: the read is
// called with a copy of the table whose readfrom only records that it was
// called (the helper's own CQ, empty; the table is put back at once).
fid_cq* g_spied_cq = nullptr;
ssize_t spy_readfrom(fid_cq* cq, void*, size_t, fi_addr_t*) {
  g_spied_cq = cq;
  return -FI_EAGAIN;
}

}  // namespace

bool read_calls_readfrom(fid_cq* cq) {
  fi_ops_cq* const real = cq->ops;
  fi_ops_cq spy = *real;
  spy.readfrom = spy_readfrom;
  g_spied_cq = nullptr;
  cq->ops = &spy;
  fi_cq_entry e;
  real->read(cq, &e, 1);
  cq->ops = real;
  return g_spied_cq == cq;
}

namespace {

// `n` words of this process's memory at `addr`, read without trusting that the
// object is that long (process_vm_readv: an unmapped tail reads short). The
// words not read are 0.
std::vector<uint64_t> words_at(const void* addr, size_t n) {
  std::vector<uint64_t> w(n, 0);
  iovec local{w.data(), n * sizeof(uint64_t)};
  iovec remote{const_cast<void*>(addr), n * sizeof(uint64_t)};
  if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) < 0) w.assign(n, 0);
  return w;
}

// The CQ's per-format function: past the fid_cq (fid, ops), the first word
// that is a different function of one library file in each format's CQ.
bool find_cq_format_fn(const std::vector<uint64_t> (&w)[5], UprobeLayout* l) {
  for (size_t i = sizeof(fid_cq) / 8; i < kLayoutWords; ++i) {
    std::string path;
    bool ok = true;
    for (int fmt = 1; fmt <= 4 && ok; ++fmt) {
      for (int o = 1; o < fmt; ++o) ok = ok && w[o][i] != w[fmt][i];
      std::string p;
      ok = ok && w[fmt][i] &&
           code_location(reinterpret_cast<const void*>(w[fmt][i]), &p, &l->fmt_fn[fmt]) &&
           (path.empty() || p == path);
      path = p;
    }
    if (ok) {
      l->path = real_path(path);
      l->cq_kind = FT_UP_CQ_FMT_FN;
      l->cq_fmt_off = i * 8;
      return true;
    }
  }
  return false;
}

}  // namespace

bool find_cq_format_word(const std::vector<uint64_t> (&w)[5], UprobeLayout* l) {
  for (size_t i = sizeof(fid_cq) / 4; i < 2 * kLayoutWords; ++i) {
    bool ok = true;
    for (uint64_t fmt = 1; fmt <= 4 && ok; ++fmt)
      ok = ((w[fmt][i / 2] >> (32 * (i % 2))) & 0xffffffffu) == fmt;
    if (ok) {
      l->cq_kind = FT_UP_CQ_FMT_WORD;
      l->cq_fmt_off = i * 4;
      return true;
    }
  }
  return false;
}

namespace {

// The words of the heap block that starts at `addr`, at most `most`: glibc
// keeps a block's size (low 3 bits: flags) in the word before it; `most` where
// that word does not look like one (not a block's start). The search stays in
// the object, not in the one malloc placed after it: sockets allocates an
// endpoint's attributes just after the endpoint, so in one process its CQs
// look one pointer away at a fixed distance past the endpoint's end, which
// holds in no other.
size_t object_words(uint64_t addr, size_t most) {
  const uint64_t size = words_at(reinterpret_cast<const void*>(addr - 8), 1)[0] & ~uint64_t{7};
  if (addr % 16 || size < 32 || size % 16 || size > (uint64_t{1} << 20)) return most;
  return std::min<size_t>(most, (size - 8) / 8);
}

// Where endpoint `ep` keeps its pointer to `cq`: a word of the endpoint, or
// of an object it points to, and so on, FT_UP_EP_HOPS_MAX pointers deep at
// the most; the shallowest, then the lowest offsets.
bool find_ep_cq(const void* ep, const void* cq, uint32_t* hops,
                uint64_t (&path)[FT_UP_EP_HOPS_MAX + 1]) {
  struct Node {
    uint64_t addr;
    std::vector<uint64_t> offs;
  };
  std::vector<Node> level = {{reinterpret_cast<uint64_t>(ep), {}}};
  std::set<uint64_t> seen = {level.front().addr};
  for (uint32_t depth = 0; depth <= FT_UP_EP_HOPS_MAX; ++depth) {
    std::vector<Node> next;
    for (const Node& n : level) {
      const size_t count = object_words(n.addr, kLayoutWords);
      const std::vector<uint64_t> w = words_at(reinterpret_cast<const void*>(n.addr), count);
      for (size_t i = 0; i < count; ++i) {
        if (w[i] == reinterpret_cast<uint64_t>(cq)) {
          for (uint32_t h = 0; h < depth; ++h) path[h] = n.offs[h];
          path[depth] = i * 8;
          *hops = depth;
          return true;
        }
        // An aligned pointer not followed yet (a number reads as nothing).
        if (depth < FT_UP_EP_HOPS_MAX && w[i] && w[i] % 8 == 0 && seen.insert(w[i]).second) {
          next.push_back({w[i], n.offs});
          next.back().offs.push_back(i * 8);
        }
      }
    }
    level = std::move(next);
  }
  return false;
}

}  // namespace

// The layout (struct UprobeLayout) from one CQ of each format and an endpoint
// whose transmit side is bound to cq[CONTEXT] and receive side to cq[TAGGED].
// *why says which part was not found.
bool find_layout(fid_cq* const (&cq)[5], fid_ep* ep, UprobeLayout* out, std::string* why) {
  UprobeLayout l;
  std::vector<uint64_t> w[5];
  for (int fmt = 1; fmt <= 4; ++fmt) w[fmt] = words_at(cq[fmt], kLayoutWords);
  if (!find_cq_format_fn(w, &l)) {
    std::string path;
    uint64_t off = 0;
    if (!find_cq_format_word(w, &l) || !code_location(fn_ptr(cq[1]->ops->read), &path, &off)) {
      *why = "no CQ format function or word found in its CQs' memory";
      return false;
    }
    l.path = real_path(path);
  }
  for (const int side : {FT_UP_TX, FT_UP_RX})
    if (!find_ep_cq(ep, cq[side == FT_UP_TX ? FI_CQ_FORMAT_CONTEXT : FI_CQ_FORMAT_TAGGED],
                    &l.ep_hops[side], l.ep_path[side])) {
      *why = std::string("its endpoint's ") + (side == FT_UP_TX ? "transmit" : "receive") +
             " CQ not found in its memory (" + std::to_string(FT_UP_EP_HOPS_MAX) +
             " pointers deep)";
      return false;
    }
  *out = l;
  return true;
}

}  // namespace fabtrace
