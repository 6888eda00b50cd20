// "multiep" family: one domain (one NIC) per rank with several endpoints, each
// with its own address, all on the domain's CQs and AV. Endpoint i of each
// rank sends --count messages to endpoint i of the other and receives as many.
// The result says how many domains and endpoints the rank opened: a tracer
// must count one NIC per domain, whatever its number of addresses; and where
// each op went (link_ops: each endpoint's address and its peer's, as the
// provider prints them), which a tracer's links must match.
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>

#include <cstring>
#include <string>
#include <vector>

#include "env.h"
#include "families.h"

namespace ftapp {
namespace {

constexpr size_t kEndpoints = 4;  // the Fabric's own and three more

void check(int ret, const char* what) {
  if (ret != 0)
    throw FamilyError(std::string(what) + " failed: " + fi_strerror(ret < 0 ? -ret : ret));
}

// Opens the extra endpoints on the Fabric's domain, bound like its own.
std::vector<fid_ep*> open_more(Fabric& f, size_t n) {
  std::vector<fid_ep*> eps;
  for (size_t i = 0; i < n; ++i) {
    fid_ep* ep = nullptr;
    check(fi_endpoint(f.domain, f.info, &ep, nullptr), "fi_endpoint");
    eps.push_back(ep);
    check(fi_ep_bind(ep, &f.av->fid, 0), "fi_ep_bind(av)");
    check(fi_ep_bind(ep, &f.txcq->fid, FI_TRANSMIT), "fi_ep_bind(txcq)");
    check(fi_ep_bind(ep, &f.rxcq->fid, FI_RECV), "fi_ep_bind(rxcq)");
    check(fi_enable(ep), "fi_enable");
  }
  return eps;
}

// `addr` as the AV's provider prints it (fi_av_straddr).
std::string straddr(fid_av* av, const void* addr) {
  char buf[256];
  size_t len = sizeof(buf);
  const char* s = fi_av_straddr(av, addr, buf, &len);
  return s ? s : "?";
}

// The peer `a` as a tracer names it: its AV entry looked up, then printed.
std::string peer_name(fid_av* av, fi_addr_t a) {
  char raw[256];
  size_t len = sizeof(raw);
  if (fi_av_lookup(av, a, raw, &len) != 0 || len > sizeof(raw)) return "?";
  return straddr(av, raw);
}

}  // namespace

void run_multiep(Env& env) {
  Fabric& f = env.fab;
  std::string why;
  if (f.msg_ep) why = "needs RDM endpoints";
  if (f.mr_mode & FI_MR_ENDPOINT) why = "memory registered per endpoint";
  env.agree_supported("multiep", env.rank == 0 ? &why : nullptr);
  const bool tagged = (env.caps & FI_TAGGED) != 0;
  std::vector<fid_ep*> eps = {f.ep};
  std::vector<fid_ep*> more;
  try {
    more = open_more(f, kEndpoints - 1);
    eps.insert(eps.end(), more.begin(), more.end());
    // Addresses of the extra endpoints, in order; the peer's go into our AV.
    std::string names;
    for (fid_ep* ep : more) {
      const std::string n = get_name(&ep->fid);
      names += std::string(1, static_cast<char>(n.size())) + n;
    }
    env.send("names", names);
    const std::string theirs = env.recv("names");
    std::vector<fi_addr_t> peers = {f.peer};
    for (size_t off = 0; off < theirs.size();) {
      const size_t len = static_cast<unsigned char>(theirs[off]);
      fi_addr_t a = FI_ADDR_UNSPEC;
      if (fi_av_insert(f.av, theirs.data() + off + 1, 1, &a, 0, nullptr) != 1)
        throw FamilyError("fi_av_insert of a peer endpoint failed");
      peers.push_back(a);
      off += 1 + len;
    }
    if (peers.size() != eps.size()) throw FamilyError("the peer has a different endpoint count");

    const size_t size = env.opt.size;
    const size_t n = env.opt.count;
    Buffer* buf = f.alloc(2 * eps.size() * n * size, false);
    std::vector<OpCtx*> pending;
    const char* rfn = tagged ? "fi_trecv" : "fi_recv";
    const char* sfn = tagged ? "fi_tsend" : "fi_send";
    for (size_t e = 0; e < eps.size(); ++e)
      for (size_t k = 0; k < n; ++k) {
        uint8_t* p = buf->data + (e * n + k) * size;
        OpCtx* ctx = env.ctxs.make(rfn, 0, static_cast<uint32_t>(k), e);
        if (tagged)
          env.post(rfn, ctx,
                   [&] { return fi_trecv(eps[e], p, size, buf->desc, FI_ADDR_UNSPEC, k, 0, ctx); });
        else
          env.post(rfn, ctx,
                   [&] { return fi_recv(eps[e], p, size, buf->desc, FI_ADDR_UNSPEC, ctx); });
        pending.push_back(ctx);
      }
    env.sync("posted");
    uint8_t* out = buf->data + eps.size() * n * size;
    std::memset(out, 0x3c, eps.size() * n * size);
    for (size_t e = 0; e < eps.size(); ++e)
      for (size_t k = 0; k < n; ++k) {
        uint8_t* p = out + (e * n + k) * size;
        OpCtx* ctx = env.ctxs.make(sfn, 0, static_cast<uint32_t>(k), e);
        if (tagged)
          env.post(sfn, ctx,
                   [&] { return fi_tsend(eps[e], p, size, buf->desc, peers[e], k, ctx); });
        else
          env.post(sfn, ctx, [&] { return fi_send(eps[e], p, size, buf->desc, peers[e], ctx); });
        pending.push_back(ctx);
      }
    for (OpCtx* c : pending) env.wait_done(c);
    for (size_t e = 0; e < eps.size(); ++e) {
      const std::string local = straddr(f.av, get_name(&eps[e]->fid).data());
      env.stats.link_ops(sfn, local, peer_name(f.av, peers[e]), n);
      env.stats.link_ops(rfn, local, "(any)", n);
    }
    env.sync("done");
  } catch (...) {
    for (fid_ep* ep : more) fi_close(&ep->fid);
    throw;
  }
  for (fid_ep* ep : more) check(fi_close(&ep->fid), "fi_close(ep)");
  env.stats.opened("domains", 1);
  env.stats.opened("endpoints", eps.size());
}

}  // namespace ftapp
