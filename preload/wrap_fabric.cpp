// Fabric and domain: the objects through which endpoints, CQs and AVs are made.
#include <rdma/fi_errno.h>

#include <new>

#include "common/clock.h"
#include "preload/objects.h"
#include "preload/op_tables.h"
#include "preload/provider_call.h"
#include "preload/runtime.h"

namespace fabtrace {

namespace {

FabricWrap* fabric_of(struct fid_fabric* f) {
  return FABTRACE_CONTAINER_OF(f->ops, FabricWrap, ops);
}
DomainWrap* domain_of(struct fid_domain* d) {
  return FABTRACE_CONTAINER_OF(d->ops, DomainWrap, ops);
}

int fabric_domain(struct fid_fabric* fabric, struct fi_info* info, struct fid_domain** dom,
                  void* context) {
  FabricWrap* w = fabric_of(fabric);
  return open_wrapped(
      dom, [&] { return w->real_ops->domain(fabric, info, dom, context); },
      [&](struct fid_domain* d) { return wrap_domain(d, w, info) != nullptr; });
}

int fabric_domain2(struct fid_fabric* fabric, struct fi_info* info, struct fid_domain** dom,
                   uint64_t flags, void* context) {
  FabricWrap* w = fabric_of(fabric);
  return open_wrapped(
      dom, [&] { return w->real_ops->domain2(fabric, info, dom, flags, context); },
      [&](struct fid_domain* d) { return wrap_domain(d, w, info) != nullptr; });
}

int domain_cq_open(struct fid_domain* domain, struct fi_cq_attr* attr, struct fid_cq** cq,
                   void* context) {
  return open_cq(domain_of(domain), attr, cq, context);
}

int domain_av_open(struct fid_domain* domain, struct fi_av_attr* attr, struct fid_av** av,
                   void* context) {
  DomainWrap* w = domain_of(domain);
  // Asynchronous AVs (FI_EVENT) report inserts on an EQ; they stay unwrapped,
  // their names are not resolved and links show the fi_addr_t number instead.
  const bool async = attr && (attr->flags & FI_EVENT);
  return open_wrapped(
      av, [&] { return w->real_ops->av_open(domain, attr, av, context); },
      [&](struct fid_av* a) { return async || wrap_av(a, w->addrlen) != nullptr; });
}

// fi_endpoint, fi_endpoint2 and fi_scalable_ep: an endpoint of this domain.
template <typename Open>
int open_ep(DomainWrap* w, struct fi_info* info, struct fid_ep** ep, Open&& open) {
  return open_wrapped(ep, open,
                      [&](struct fid_ep* e) { return wrap_ep(e, w, info, nullptr) != nullptr; });
}

int domain_endpoint(struct fid_domain* domain, struct fi_info* info, struct fid_ep** ep,
                    void* context) {
  DomainWrap* w = domain_of(domain);
  return open_ep(w, info, ep, [&] { return w->real_ops->endpoint(domain, info, ep, context); });
}

int domain_endpoint2(struct fid_domain* domain, struct fi_info* info, struct fid_ep** ep,
                     uint64_t flags, void* context) {
  DomainWrap* w = domain_of(domain);
  return open_ep(w, info, ep,
                 [&] { return w->real_ops->endpoint2(domain, info, ep, flags, context); });
}

int domain_scalable_ep(struct fid_domain* domain, struct fi_info* info, struct fid_ep** sep,
                       void* context) {
  DomainWrap* w = domain_of(domain);
  return open_ep(w, info, sep,
                 [&] { return w->real_ops->scalable_ep(domain, info, sep, context); });
}

int domain_srx_ctx(struct fid_domain* domain, struct fi_rx_attr* attr, struct fid_ep** rx_ep,
                   void* context) {
  DomainWrap* w = domain_of(domain);
  return open_wrapped(
      rx_ep, [&] { return w->real_ops->srx_ctx(domain, attr, rx_ep, context); },
      [&](struct fid_ep* e) {
        EpWrap* c = wrap_ep(e, w, nullptr, nullptr);
        if (c && attr) c->rx.op_flags = attr->op_flags;
        return c != nullptr;
      });
}

}  // namespace

FabricWrap* wrap_fabric(struct fid_fabric* fabric, const char* prov_name) {
  auto* w = new (std::nothrow) FabricWrap();
  if (!w) return nullptr;
  w->fabric = fabric;
  w->prov_name = prov_name ? prov_name : "?";
  w->real_ops = fabric->ops;
  copy_table(&w->ops, fabric->ops);
  FABTRACE_SHIM(w->ops, w->real_ops, fi_ops_fabric, domain, fabric_domain);
  FABTRACE_SHIM(w->ops, w->real_ops, fi_ops_fabric, domain2, fabric_domain2);
  fabric->ops = &w->ops;
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lk(rt.mu);
  rt.fabrics.push_back(w);
  return w;
}

DomainWrap* wrap_domain(struct fid_domain* domain, FabricWrap* fabric, const struct fi_info* info) {
  clock_add_pair();  // another point for the clock fit, off the data path
  auto* w = new (std::nothrow) DomainWrap();
  if (!w) return nullptr;
  w->domain = domain;
  w->fabric = fabric;
  if (info && info->domain_attr && info->domain_attr->name) w->name = info->domain_attr->name;
  if (info) w->addrlen = info->src_addrlen;
  // The application serializes every call into a FI_THREAD_DOMAIN domain.
  w->nic.serial = info && info->domain_attr && info->domain_attr->threading == FI_THREAD_DOMAIN;
  w->nic.set_bins(runtime().start_ticks, runtime().nic_bin_shift, runtime().nic_peak_span);
  w->real_ops = domain->ops;
  copy_table(&w->ops, domain->ops);
  FABTRACE_SHIM(w->ops, w->real_ops, fi_ops_domain, cq_open, domain_cq_open);
  FABTRACE_SHIM(w->ops, w->real_ops, fi_ops_domain, av_open, domain_av_open);
  FABTRACE_SHIM(w->ops, w->real_ops, fi_ops_domain, endpoint, domain_endpoint);
  FABTRACE_SHIM(w->ops, w->real_ops, fi_ops_domain, endpoint2, domain_endpoint2);
  FABTRACE_SHIM(w->ops, w->real_ops, fi_ops_domain, scalable_ep, domain_scalable_ep);
  FABTRACE_SHIM(w->ops, w->real_ops, fi_ops_domain, srx_ctx, domain_srx_ctx);
  domain->ops = &w->ops;
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lk(rt.mu);
  w->id = static_cast<uint32_t>(rt.domains.size());
  rt.domains.push_back(w);
  return w;
}

}  // namespace fabtrace
