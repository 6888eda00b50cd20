// Endpoint shapes beyond the plain endpoint: a scalable endpoint whose tx and rx
// contexts each complete into their own CQ, and a shared receive context that
// takes the endpoint's receives.
#include <rdma/fi_endpoint.h>

#include <cstring>
#include <string>

#include "fabric.h"
#include "oob.h"

namespace ftapp {
namespace {

void check(int ret, const std::string& what) {
  if (ret != 0) throw FamilyError(what + " failed: " + fi_strerror(ret < 0 ? -ret : ret));
}

fid_cq* open_cq(fid_domain* domain, fi_cq_format format) {
  fi_cq_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.format = format;
  attr.wait_obj = FI_WAIT_NONE;
  fid_cq* cq = nullptr;
  check(fi_cq_open(domain, &attr, &cq, nullptr), "fi_cq_open(context cq)");
  return cq;
}

}  // namespace

void Fabric::open_scalable(fi_info* ep_info, const FabricSpec& spec) {
  check(fi_scalable_ep(domain, ep_info, &ep, nullptr), "fi_scalable_ep");
  check(fi_scalable_ep_bind(ep, &av->fid, 0), "fi_scalable_ep_bind(av)");
  for (size_t i = 0; i < spec.contexts; ++i) {
    const std::string n = "[" + std::to_string(i) + "]";
    fid_ep* tx = nullptr;
    check(fi_tx_context(ep, static_cast<int>(i), nullptr, &tx, nullptr), "fi_tx_context" + n);
    tx_ctx.push_back(tx);
    tx_ctx_cq.push_back(open_cq(domain, cq_format_));
    check(fi_ep_bind(tx, &tx_ctx_cq.back()->fid, FI_TRANSMIT), "fi_ep_bind(tx context cq)" + n);
    check(fi_enable(tx), "fi_enable(tx context)" + n);
    fid_ep* rx = nullptr;
    check(fi_rx_context(ep, static_cast<int>(i), nullptr, &rx, nullptr), "fi_rx_context" + n);
    rx_ctx.push_back(rx);
    rx_ctx_cq.push_back(open_cq(domain, cq_format_));
    check(fi_ep_bind(rx, &rx_ctx_cq.back()->fid, FI_RECV), "fi_ep_bind(rx context cq)" + n);
    check(fi_enable(rx), "fi_enable(rx context)" + n);
  }
  check(fi_enable(ep), "fi_enable(scalable ep)");
}

void Fabric::open_srx(fi_info* ep_info) {
  ep_info->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
  if (srx == nullptr)
    check(fi_srx_context(domain, ep_info->rx_attr, &srx, nullptr), "fi_srx_context");
}

void Fabric::close_contexts(std::vector<std::string>* errs) {
  for (std::vector<fid_ep*>* v : {&tx_ctx, &rx_ctx}) {
    for (fid_ep* c : *v) {
      int ret = fi_close(&c->fid);
      if (ret != 0) errs->push_back(std::string("fi_close(context) failed: ") + fi_strerror(-ret));
    }
    v->clear();
  }
}

}  // namespace ftapp
