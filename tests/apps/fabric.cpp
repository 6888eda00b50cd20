#include "fabric.h"

#include <rdma/fi_domain.h>

#include <cstdlib>
#include <cstring>

#include "oob.h"

namespace ftapp {
namespace {

void check(int ret, const char* what) {
  if (ret != 0) {
    throw FamilyError(std::string(what) + " failed: " + fi_strerror(ret < 0 ? -ret : ret));
  }
}

void close_fid(fid_t fid, const char* what, std::vector<std::string>* errs) {
  if (fid == nullptr) return;
  int ret = fi_close(fid);
  if (ret != 0) errs->push_back(std::string("fi_close(") + what + ") failed: " + fi_strerror(-ret));
}

}  // namespace

std::string encode_remote(const Buffer& b) {
  RemoteMem m{b.remote_addr, b.key, b.len};
  return std::string(reinterpret_cast<const char*>(&m), sizeof m);
}

RemoteMem decode_remote(const std::string& s) {
  RemoteMem m;
  if (s.size() != sizeof m) throw FamilyError("bad remote memory descriptor from peer");
  std::memcpy(&m, s.data(), sizeof m);
  return m;
}

fi_info* query_info(const Options& opt, uint64_t caps, const FabricSpec& spec, std::string* why) {
  const bool thread_safe = spec.thread_safe;
  fi_info* hints = fi_allocinfo();
  if (hints == nullptr) {
    *why = "fi_allocinfo failed";
    return nullptr;
  }
  hints->fabric_attr->prov_name = strdup(opt.prov.c_str());
  hints->ep_attr->type = opt.ep_type;
  hints->caps = caps;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->domain_attr->mr_mode =
      FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
  if (thread_safe) hints->domain_attr->threading = FI_THREAD_SAFE;
  if (opt.av_type != FI_AV_UNSPEC) hints->domain_attr->av_type = opt.av_type;
  if (spec.contexts > 0) hints->ep_attr->tx_ctx_cnt = hints->ep_attr->rx_ctx_cnt = spec.contexts;
  if (spec.shared_rx) hints->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
  fi_info* info = nullptr;
  int ret =
      fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), nullptr, nullptr, 0, hints, &info);
  fi_freeinfo(hints);
  if (ret != 0 || info == nullptr) {
    std::string capstr = fi_tostr(&caps, FI_TYPE_CAPS);
    while (!capstr.empty() && (capstr.back() == ' ' || capstr.back() == '\n')) capstr.pop_back();
    *why = "fi_getinfo found no " + opt.prov +
           (opt.ep_type == FI_EP_MSG ? " FI_EP_MSG" : " FI_EP_RDM") + " endpoint with caps [" +
           capstr + "]" + (thread_safe ? " and FI_THREAD_SAFE" : "") +
           (spec.contexts > 0 ? " and " + std::to_string(spec.contexts) + " tx/rx contexts" : "") +
           (spec.shared_rx ? " and a shared receive context" : "") + ": " +
           fi_strerror(ret < 0 ? -ret : ret);
    return nullptr;
  }
  return info;
}

Fabric::~Fabric() { close(); }

void Fabric::open(const Options& opt, int rank, fi_info* fi, const FabricSpec& spec, Oob& oob) {
  info = fi;
  spec_ = spec;
  msg_ep = info->ep_attr->type == FI_EP_MSG;
  mr_mode = static_cast<uint64_t>(info->domain_attr->mr_mode);
  inject_size = info->tx_attr->inject_size;
  cq_data_size = info->domain_attr->cq_data_size;
  tx_iov_limit = info->tx_attr->iov_limit ? info->tx_attr->iov_limit : 1;
  rx_iov_limit = info->rx_attr->iov_limit ? info->rx_attr->iov_limit : 1;
  rma_iov_limit = info->tx_attr->rma_iov_limit ? info->tx_attr->rma_iov_limit : 1;
  selective_ = spec.tx_selective && rank == 0;

  check(fi_fabric(info->fabric_attr, &fabric, nullptr), "fi_fabric");
  if (msg_ep) {
    fi_eq_attr eq_attr;
    std::memset(&eq_attr, 0, sizeof eq_attr);
    eq_attr.size = 16;
    eq_attr.wait_obj = FI_WAIT_UNSPEC;
    check(fi_eq_open(fabric, &eq_attr, &eq, nullptr), "fi_eq_open");
  }
  check(fi_domain(fabric, info, &domain, nullptr), "fi_domain");
  open_cqs(opt, spec);
  int timeout_ms = opt.timeout_s * 1000;
  if (msg_ep) {
    connect_msg(*this, oob, rank, timeout_ms);
  } else {
    fi_av_attr av_attr;
    std::memset(&av_attr, 0, sizeof av_attr);
    av_attr.type = opt.av_type;
    if (av_attr.type == FI_AV_UNSPEC) av_attr.type = info->domain_attr->av_type;
    if (av_attr.type == FI_AV_UNSPEC) av_attr.type = FI_AV_TABLE;
    av_attr.count = 4;
    while ((size_t{1} << rx_ctx_bits) < spec.contexts) ++rx_ctx_bits;
    av_attr.rx_ctx_bits = rx_ctx_bits;
    check(fi_av_open(domain, &av_attr, &av, nullptr), "fi_av_open");
    open_ep(info, spec, selective_);
    connect_rdm(*this, oob, timeout_ms);
  }
}

void Fabric::open_cqs(const Options& opt, const FabricSpec& spec) {
  fi_cq_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.format = opt.cq_format;
  cq_format_ = opt.cq_format;
  attr.size = 0;
  attr.wait_obj = spec.cq_wait ? FI_WAIT_UNSPEC : FI_WAIT_NONE;
  int ret = fi_cq_open(domain, &attr, &txcq, nullptr);
  if (ret != 0 && spec.cq_wait) {
    attr.wait_obj = FI_WAIT_NONE;
    ret = fi_cq_open(domain, &attr, &txcq, nullptr);
  }
  check(ret, "fi_cq_open");
  cq_has_wait = attr.wait_obj != FI_WAIT_NONE;
  if (spec.single_cq) {
    rxcq = txcq;
  } else {
    check(fi_cq_open(domain, &attr, &rxcq, nullptr), "fi_cq_open");
  }
}

void Fabric::open_ep(fi_info* ep_info, const FabricSpec& spec, bool selective) {
  if (selective) ep_info->tx_attr->op_flags &= ~FI_COMPLETION;
  ep_info->rx_attr->op_flags |= spec.rx_op_flags;
  if (spec.contexts > 0) {
    open_scalable(ep_info, spec);
    return;
  }
  if (spec.shared_rx) open_srx(ep_info);
  check(fi_endpoint(domain, ep_info, &ep, nullptr), "fi_endpoint");
  rx_ep = srx != nullptr ? srx : ep;
  if (srx != nullptr) check(fi_ep_bind(ep, &srx->fid, 0), "fi_ep_bind(srx)");
  if (msg_ep) {
    check(fi_ep_bind(ep, &eq->fid, 0), "fi_ep_bind(eq)");
  } else {
    check(fi_ep_bind(ep, &av->fid, 0), "fi_ep_bind(av)");
  }
  uint64_t sel = selective ? FI_SELECTIVE_COMPLETION : 0;
  if (spec.single_cq) {
    check(fi_ep_bind(ep, &txcq->fid, FI_TRANSMIT | FI_RECV | sel), "fi_ep_bind(cq)");
  } else {
    check(fi_ep_bind(ep, &txcq->fid, FI_TRANSMIT | sel), "fi_ep_bind(txcq)");
    check(fi_ep_bind(ep, &rxcq->fid, FI_RECV), "fi_ep_bind(rxcq)");
  }
  check(fi_enable(ep), "fi_enable");
}

Buffer* Fabric::alloc(size_t len, bool remote_access) {
  auto b = std::make_unique<Buffer>();
  void* p = nullptr;
  size_t alloc_len = len == 0 ? 64 : len;
  if (posix_memalign(&p, 4096, alloc_len) != 0) throw FamilyError("out of memory");
  std::memset(p, 0, alloc_len);
  b->data = static_cast<uint8_t*>(p);
  b->len = len;
  if (remote_access || (mr_mode & FI_MR_LOCAL)) {
    uint64_t access = FI_SEND | FI_RECV | FI_READ | FI_WRITE;
    if (remote_access) access |= FI_REMOTE_READ | FI_REMOTE_WRITE;
    uint64_t requested_key = next_key_++;
    int ret = fi_mr_reg(domain, p, alloc_len, access, 0, requested_key, 0, &b->mr, nullptr);
    if (ret != 0) {
      std::free(p);
      check(ret, "fi_mr_reg");
    }
    if (mr_mode & FI_MR_ENDPOINT) {
      ret = fi_mr_bind(b->mr, &ep->fid, 0);
      if (ret == 0) ret = fi_mr_enable(b->mr);
      if (ret != 0) {
        fi_close(&b->mr->fid);
        std::free(p);
        check(ret, "fi_mr_bind/fi_mr_enable");
      }
    }
    b->desc = fi_mr_desc(b->mr);
    b->key = fi_mr_key(b->mr);
    if (b->key == FI_KEY_NOTAVAIL) {
      fi_close(&b->mr->fid);
      std::free(p);
      throw FamilyError("fi_mr_key: key not available");
    }
  }
  b->remote_addr = (mr_mode & FI_MR_VIRT_ADDR) ? reinterpret_cast<uint64_t>(p) : 0;
  bufs_.push_back(std::move(b));
  return bufs_.back().get();
}

std::vector<std::string> Fabric::close() {
  std::vector<std::string> errs;
  bool ep_mrs = (mr_mode & FI_MR_ENDPOINT) != 0;
  if (ep_mrs) {
    for (auto& b : bufs_) {
      close_fid(b->mr ? &b->mr->fid : nullptr, "mr", &errs);
      b->mr = nullptr;
    }
  }
  close_contexts(&errs);
  close_fid(ep ? &ep->fid : nullptr, "ep", &errs);
  ep = rx_ep = nullptr;
  close_fid(srx ? &srx->fid : nullptr, "srx", &errs);
  srx = nullptr;
  close_fid(pep ? &pep->fid : nullptr, "pep", &errs);
  pep = nullptr;
  if (rxcq != txcq) close_fid(rxcq ? &rxcq->fid : nullptr, "rxcq", &errs);
  rxcq = nullptr;
  close_fid(txcq ? &txcq->fid : nullptr, "txcq", &errs);
  txcq = nullptr;
  for (fid_cq* cq : tx_ctx_cq) close_fid(&cq->fid, "context cq", &errs);
  for (fid_cq* cq : rx_ctx_cq) close_fid(&cq->fid, "context cq", &errs);
  tx_ctx_cq.clear();
  rx_ctx_cq.clear();
  for (auto& b : bufs_) {
    close_fid(b->mr ? &b->mr->fid : nullptr, "mr", &errs);
    b->mr = nullptr;
  }
  close_fid(av ? &av->fid : nullptr, "av", &errs);
  av = nullptr;
  close_fid(domain ? &domain->fid : nullptr, "domain", &errs);
  domain = nullptr;
  close_fid(eq ? &eq->fid : nullptr, "eq", &errs);
  eq = nullptr;
  close_fid(fabric ? &fabric->fid : nullptr, "fabric", &errs);
  fabric = nullptr;
  for (auto& b : bufs_) std::free(b->data);
  bufs_.clear();
  if (info != nullptr) fi_freeinfo(info);
  info = nullptr;
  if (conn_info_ != nullptr) fi_freeinfo(conn_info_);
  conn_info_ = nullptr;
  return errs;
}

}  // namespace ftapp
