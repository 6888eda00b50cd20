#include "userspace/record/uprobes/optable_probe.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <climits>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "bpf/uprobe_ops.h"
#include "common/addr_format.h"
#include "common/op_kinds.h"
#include "userspace/record/uprobes/probe_place.h"

namespace fabtrace {

bool file_offset_in(uint64_t addr, uint64_t bias, const std::vector<ElfLoad>& loads,
                    uint64_t* offset) {
  if (addr < bias) return false;
  const uint64_t rel = addr - bias;
  for (const ElfLoad& l : loads) {
    if (rel >= l.vaddr && rel - l.vaddr < l.memsz) {
      *offset = rel - l.vaddr + l.offset;
      return true;
    }
  }
  return false;
}

std::string real_path(const std::string& p) {
  char buf[PATH_MAX];
  if (p.empty()) {
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    if (n <= 0) return "";
    return std::string(buf, static_cast<size_t>(n));
  }
  if (realpath(p.c_str(), buf)) return buf;
  return p;
}

namespace {

struct Lookup {
  uint64_t addr = 0;
  bool found = false;
  std::string path;
  uint64_t offset = 0;
};

int find_object(struct dl_phdr_info* info, size_t, void* data) {
  auto* q = static_cast<Lookup*>(data);
  std::vector<ElfLoad> loads;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& p = info->dlpi_phdr[i];
    if (p.p_type == PT_LOAD) loads.push_back({p.p_vaddr, p.p_memsz, p.p_offset});
  }
  uint64_t off = 0;
  if (!file_offset_in(q->addr, info->dlpi_addr, loads, &off)) return 0;
  q->found = true;
  q->offset = off;
  q->path = info->dlpi_name ? info->dlpi_name : "";
  return 1;
}

// The dlsym'd exported entry points (libfabric is opened at run time: the
// collector does not link it).
struct Fabric {
  void* handle = nullptr;
  int (*getinfo)(uint32_t, const char*, const char*, uint64_t, const fi_info*, fi_info**) = nullptr;
  void (*freeinfo)(fi_info*) = nullptr;
  fi_info* (*dupinfo)(const fi_info*) = nullptr;
  int (*fabric)(fi_fabric_attr*, fid_fabric**, void*) = nullptr;
  bool open(std::string* why) {
    if (handle) return true;
    handle = dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      *why = std::string("cannot open libfabric.so.1: ") + dlerror();
      return false;
    }
    getinfo = reinterpret_cast<decltype(getinfo)>(dlsym(handle, "fi_getinfo"));
    freeinfo = reinterpret_cast<decltype(freeinfo)>(dlsym(handle, "fi_freeinfo"));
    dupinfo = reinterpret_cast<decltype(dupinfo)>(dlsym(handle, "fi_dupinfo"));
    fabric = reinterpret_cast<decltype(fabric)>(dlsym(handle, "fi_fabric"));
    if (!getinfo || !freeinfo || !dupinfo || !fabric) {
      *why = "libfabric.so.1 lacks fi_getinfo/fi_freeinfo/fi_dupinfo/fi_fabric";
      return false;
    }
    return true;
  }
};

Fabric& fabric_lib() {
  static Fabric f;
  return f;
}

}  // namespace

std::string fabric_library_path() {
  std::string why, lib;
  uint64_t off = 0;
  if (!fabric_lib().open(&why) || !code_location(fn_ptr(fabric_lib().getinfo), &lib, &off))
    return "";
  return real_path(lib);
}

namespace {

// Appends the site of `fn` for (table, op) (its description: describe_site).
void add_site(std::vector<OpSite>* out, const std::string& prov, const char* table, const char* op,
              const void* fn) {
  OpSite s;
  if (!fn || !describe_site(prov, table, op, &s)) return;
  std::string path;
  if (!code_location(fn, &path, &s.offset)) return;
  s.path = real_path(path);
  out->push_back(s);
}

// The nine ops of fi_ops_msg and fi_ops_tagged, in the tables' order (both
// tables are `size` and then these): where each keeps its context, length and
// peer (the tagged ops put tag and ignore after the peer, so it is at the same
// argument in both tables).
struct OpSlot {
  const char* name;
  OpKind msg, tagged;
  uint32_t msg_ctx, tagged_ctx, len, peer;
};
constexpr uint32_t kMsgPeer = FT_UP_PEER_MSG;
constexpr OpSlot kOpSlots[9] = {
    {"recv", OpKind::kRecv, OpKind::kTrecv, FT_UP_CTX_ARG6, FT_UP_CTX_ARG8, FT_UP_LEN_ARG3,
     FT_UP_PEER_ARG(5)},
    {"recvv", OpKind::kRecvv, OpKind::kTrecvv, FT_UP_CTX_ARG6, FT_UP_CTX_ARG8, FT_UP_LEN_IOV,
     FT_UP_PEER_ARG(5)},
    {"recvmsg", OpKind::kRecvmsg, OpKind::kTrecvmsg, FT_UP_CTX_MSG, FT_UP_CTX_TMSG, FT_UP_LEN_MSG,
     kMsgPeer},
    {"send", OpKind::kSend, OpKind::kTsend, FT_UP_CTX_ARG6, FT_UP_CTX_ARG7, FT_UP_LEN_ARG3,
     FT_UP_PEER_ARG(5)},
    {"sendv", OpKind::kSendv, OpKind::kTsendv, FT_UP_CTX_ARG6, FT_UP_CTX_ARG7, FT_UP_LEN_IOV,
     FT_UP_PEER_ARG(5)},
    {"sendmsg", OpKind::kSendmsg, OpKind::kTsendmsg, FT_UP_CTX_MSG, FT_UP_CTX_TMSG, FT_UP_LEN_MSG,
     kMsgPeer},
    {"inject", OpKind::kInject, OpKind::kTinject, FT_UP_CTX_NONE, FT_UP_CTX_NONE, FT_UP_LEN_ARG3,
     FT_UP_PEER_ARG(4)},
    {"senddata", OpKind::kSenddata, OpKind::kTsenddata, FT_UP_CTX_ARG7, FT_UP_CTX_ARG8,
     FT_UP_LEN_ARG3, FT_UP_PEER_ARG(6)},
    {"injectdata", OpKind::kInjectdata, OpKind::kTinjectdata, FT_UP_CTX_NONE, FT_UP_CTX_NONE,
     FT_UP_LEN_ARG3, FT_UP_PEER_ARG(5)},
};
static_assert(offsetof(fi_ops_msg, recv) == sizeof(size_t) &&
                  offsetof(fi_ops_msg, injectdata) == sizeof(size_t) + 8 * sizeof(void*) &&
                  offsetof(fi_ops_tagged, recv) == sizeof(size_t) &&
                  offsetof(fi_ops_tagged, injectdata) == sizeof(size_t) + 8 * sizeof(void*),
              "fi_ops_msg / fi_ops_tagged: size, then the nine ops of kOpSlots");

template <typename Table>
void add_ops(std::vector<OpSite>* out, const std::string& prov, const Table* t, bool tagged) {
  if (!t) return;
  void* fns[9];
  std::memcpy(fns, reinterpret_cast<const char*>(t) + sizeof(size_t), sizeof(fns));
  for (size_t i = 0; i < 9; ++i) {
    add_site(out, prov, tagged ? "tagged" : "msg", kOpSlots[i].name, fns[i]);
  }
}

// One op of fi_ops_rma or fi_ops_atomic: where it keeps its context, length
// and peer (the argument positions of rdma/fi_rma.h and fi_atomic.h, counting
// ep as 1).
struct TableSlot {
  const char* name;
  OpKind kind;
  uint32_t ctx, len, peer;
};
constexpr TableSlot kRmaSlots[9] = {
    {"read", OpKind::kRead, FT_UP_CTX_ARG8, FT_UP_LEN_ARG3, FT_UP_PEER_ARG(5)},
    {"readv", OpKind::kReadv, FT_UP_CTX_ARG8, FT_UP_LEN_IOV, FT_UP_PEER_ARG(5)},
    {"readmsg", OpKind::kReadmsg, FT_UP_CTX_RMSG, FT_UP_LEN_MSG, kMsgPeer},
    {"write", OpKind::kWrite, FT_UP_CTX_ARG8, FT_UP_LEN_ARG3, FT_UP_PEER_ARG(5)},
    {"writev", OpKind::kWritev, FT_UP_CTX_ARG8, FT_UP_LEN_IOV, FT_UP_PEER_ARG(5)},
    {"writemsg", OpKind::kWritemsg, FT_UP_CTX_RMSG, FT_UP_LEN_MSG, kMsgPeer},
    {"inject", OpKind::kInjectWrite, FT_UP_CTX_NONE, FT_UP_LEN_ARG3, FT_UP_PEER_ARG(4)},
    {"writedata", OpKind::kWritedata, FT_UP_CTX_STACK(9), FT_UP_LEN_ARG3, FT_UP_PEER_ARG(6)},
    {"injectdata", OpKind::kInjectWritedata, FT_UP_CTX_NONE, FT_UP_LEN_ARG3, FT_UP_PEER_ARG(5)},
};
static_assert(offsetof(fi_ops_rma, read) == sizeof(size_t) &&
                  offsetof(fi_ops_rma, injectdata) == sizeof(size_t) + 8 * sizeof(void*),
              "fi_ops_rma: size, then the nine ops of kRmaSlots");
constexpr TableSlot kAtomicSlots[10] = {
    {"write", OpKind::kAtomic, FT_UP_CTX_STACK(10), FT_UP_LEN_ATOMIC(FT_UP_LEN_ACOUNT, 8),
     FT_UP_PEER_ARG(5)},
    {"writev", OpKind::kAtomicv, FT_UP_CTX_STACK(10), FT_UP_LEN_ATOMIC(FT_UP_LEN_AIOC, 8),
     FT_UP_PEER_ARG(5)},
    {"writemsg", OpKind::kAtomicmsg, FT_UP_CTX_AMSG, FT_UP_LEN_AMSG, kMsgPeer},
    {"inject", OpKind::kInjectAtomic, FT_UP_CTX_NONE, FT_UP_LEN_ATOMIC(FT_UP_LEN_ACOUNT, 7),
     FT_UP_PEER_ARG(4)},
    {"readwrite", OpKind::kFetchAtomic, FT_UP_CTX_STACK(12), FT_UP_LEN_ATOMIC(FT_UP_LEN_ACOUNT, 10),
     FT_UP_PEER_ARG(7)},
    {"readwritev", OpKind::kFetchAtomicv, FT_UP_CTX_STACK(13), FT_UP_LEN_ATOMIC(FT_UP_LEN_AIOC, 11),
     FT_UP_PEER_ARG(8)},
    {"readwritemsg", OpKind::kFetchAtomicmsg, FT_UP_CTX_AMSG_FLAGS6, FT_UP_LEN_AMSG, kMsgPeer},
    {"compwrite", OpKind::kCompareAtomic, FT_UP_CTX_STACK(14),
     FT_UP_LEN_ATOMIC(FT_UP_LEN_ACOUNT, 12), FT_UP_PEER_ARG(9)},
    {"compwritev", OpKind::kCompareAtomicv, FT_UP_CTX_STACK(16),
     FT_UP_LEN_ATOMIC(FT_UP_LEN_AIOC, 14), FT_UP_PEER_ARG(11)},
    {"compwritemsg", OpKind::kCompareAtomicmsg, FT_UP_CTX_AMSG_FLAGS9, FT_UP_LEN_AMSG, kMsgPeer},
};
static_assert(offsetof(fi_ops_atomic, write) == sizeof(size_t) &&
                  offsetof(fi_ops_atomic, compwritemsg) == sizeof(size_t) + 9 * sizeof(void*),
              "fi_ops_atomic: size, then the ten ops of kAtomicSlots");

// The ops of an RMA or atomic table (`size`, then N function pointers). Their
// completions come on the transmit side.
template <size_t N>
void add_table(std::vector<OpSite>* out, const std::string& prov, const char* table, const void* t,
               const TableSlot (&slots)[N]) {
  if (!t) return;
  void* fns[N];
  std::memcpy(fns, static_cast<const char*>(t) + sizeof(size_t), sizeof(fns));
  for (size_t i = 0; i < N; ++i) add_site(out, prov, table, slots[i].name, fns[i]);
}

}  // namespace

OpSite op_site(const std::string& provider, const std::string& table, const std::string& op,
               uint32_t role, OpKind kind, uint32_t ctx, uint32_t len, uint32_t peer) {
  OpSite s;
  s.peer = peer;
  s.provider = provider;
  s.table = table;
  s.op = op;
  s.role = role;
  s.op_kind = static_cast<uint32_t>(kind);
  s.ctx = ctx;
  s.len = len;
  return s;
}

bool describe_site(const std::string& provider, const std::string& table, const std::string& op,
                   OpSite* out) {
  static const std::map<std::pair<std::string, std::string>, uint32_t> kOthers = {
      {{"domain", "cq_open"}, FT_UP_ROLE_CQ_OPEN}, {{"ep", "bind"}, FT_UP_ROLE_EP_BIND},
      {{"cq", "read"}, FT_UP_ROLE_CQ_READ},        {{"cq", "readfrom"}, FT_UP_ROLE_CQ_READ},
      {{"cq", "sread"}, FT_UP_ROLE_CQ_READ},       {{"cq", "sreadfrom"}, FT_UP_ROLE_CQ_READ},
      {{"cm", "getname"}, FT_UP_ROLE_GETNAME},     {{"av", "insert"}, FT_UP_ROLE_AV_INSERT},
      {{"pep", "getname"}, FT_UP_ROLE_GETNAME},    {{"domain", "endpoint"}, FT_UP_ROLE_EP_OPEN},
      {{"cm", "connect"}, FT_UP_ROLE_CONNECT}};
  const auto it = kOthers.find({table, op});
  if (it != kOthers.end()) {
    *out = op_site(provider, table, op, it->second, OpKind::kCount);
    return true;
  }
  if (table == "msg" || table == "tagged") {
    const bool tagged = table == "tagged";
    for (const OpSlot& o : kOpSlots)
      if (op == o.name) {
        *out = op_site(provider, table, op, FT_UP_ROLE_OP, tagged ? o.tagged : o.msg,
                       tagged ? o.tagged_ctx : o.msg_ctx, o.len, o.peer);
        return true;
      }
    return false;
  }
  const auto slot = [&](const TableSlot* b, const TableSlot* e) {
    for (const TableSlot* t = b; t != e; ++t)
      if (op == t->name) {
        *out = op_site(provider, table, op, FT_UP_ROLE_OP, t->kind, t->ctx, t->len, t->peer);
        return true;
      }
    return false;
  };
  if (table == "rma") return slot(std::begin(kRmaSlots), std::end(kRmaSlots));
  if (table == "atomic") return slot(std::begin(kAtomicSlots), std::end(kAtomicSlots));
  return false;
}

bool code_location(const void* addr, std::string* path, uint64_t* offset) {
  Lookup q;
  q.addr = reinterpret_cast<uint64_t>(addr);
  dl_iterate_phdr(find_object, &q);
  if (!q.found) return false;
  *path = q.path.empty() ? real_path("") : q.path;
  *offset = q.offset;
  return true;
}

std::string hex_offset(uint64_t offset) {
  char b[32];
  std::snprintf(b, sizeof(b), "+0x%llx", static_cast<unsigned long long>(offset));
  return b;
}

uint32_t op_args_read(const OpSite& site) {
  uint32_t m = 1u << 1;
  auto arg = [&m](uint32_t n) {
    if (n >= 1 && n <= 16) m |= 1u << n;
  };
  if (FT_UP_CTX_IS_STACK(site.ctx)) arg(FT_UP_CTX_STACK_ARG(site.ctx));
  switch (site.ctx) {
    case FT_UP_CTX_ARG6:
      arg(6);
      break;
    case FT_UP_CTX_ARG7:
      arg(7);
      break;
    case FT_UP_CTX_ARG8:
      arg(8);
      break;
    case FT_UP_CTX_MSG:
    case FT_UP_CTX_TMSG:
    case FT_UP_CTX_RMSG:
    case FT_UP_CTX_AMSG:
      arg(2);
      arg(3);  // its flags
      break;
    case FT_UP_CTX_AMSG_FLAGS6:
      arg(2);
      arg(6);
      break;
    case FT_UP_CTX_AMSG_FLAGS9:
      arg(2);
      arg(9);
      break;
    default:
      break;
  }
  switch (FT_UP_LEN_KIND(site.len)) {
    case FT_UP_LEN_ARG3:
      arg(3);
      break;
    case FT_UP_LEN_ACOUNT:
      arg(3);
      arg(FT_UP_LEN_DT_ARG(site.len));
      break;
    case FT_UP_LEN_IOV:
      arg(2);
      arg(4);
      break;
    case FT_UP_LEN_AIOC:
      arg(2);
      arg(4);
      arg(FT_UP_LEN_DT_ARG(site.len));
      break;
    case FT_UP_LEN_MSG:
    case FT_UP_LEN_AMSG:
      arg(2);
      break;
    default:
      break;
  }
  if (site.peer == FT_UP_PEER_MSG)
    arg(2);
  else
    arg(site.peer);
  return m;
}

uint64_t probe_offset(const std::string& path, uint64_t offset) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return offset;
  unsigned char b[4] = {};
  const ssize_t n = ::pread(fd, b, sizeof(b), static_cast<off_t>(offset));
  ::close(fd);
  if (n == 4 && is_endbr64(b)) return offset + 4;
  return offset;
}

namespace {

// Provider `prov`'s info for an `ep_type` endpoint with `caps`, as an
// application would ask for it, or NULL with *why. Only an info of that very
// provider: asked for "tcp" with FI_EP_RDM, libfabric offers "tcp;ofi_rxm",
// whose functions are another provider's.
fi_info* provider_info(const std::string& prov, int threading, int ep_type, uint64_t caps,
                       std::string* why) {
  Fabric& f = fabric_lib();
  if (!f.open(why)) return nullptr;
  fi_info* hints = f.dupinfo(nullptr);
  if (!hints) {
    *why = "fi_dupinfo failed";
    return nullptr;
  }
  hints->ep_attr->type = static_cast<fi_ep_type>(ep_type);
  hints->caps = caps;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints->domain_attr->threading = static_cast<fi_threading>(threading);
  hints->fabric_attr->prov_name = strdup(prov.c_str());
  fi_info* list = nullptr;
  const int ret = f.getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &list);
  f.freeinfo(hints);
  if (ret || !list) {
    *why = prov + ": fi_getinfo: " + std::to_string(ret);
    return nullptr;
  }
  fi_info* info = nullptr;
  for (const fi_info* i = list; i && !info; i = i->next)
    if (i->fabric_attr && i->fabric_attr->prov_name && prov == i->fabric_attr->prov_name)
      info = f.dupinfo(i);
  f.freeinfo(list);
  if (!info) *why = prov + ": fi_getinfo offers only other providers' endpoints of this type";
  return info;
}

// What the endpoints and the peers are: the endpoint's getname and the AV's
// insert (an RDM endpoint's), with the provider's address format, and the
// length of its addresses (the helper's own endpoint's: an application inserts
// what its peers' getname gave) as the insert's stride; FI_ADDR_STR's strings
// are walked one by one (0). Which form the provider's straddr prints (the
// preload's labels): told from what it prints for that same address.
void add_name_sites(std::vector<OpSite>* out, const std::string& prov, const fi_info* info,
                    fid_ep* ep, fid_av* av) {
  const uint32_t format = info->addr_format;
  // Without an AV (a MSG endpoint) the form is not known here: the same
  // getname seen with one gives it (dedupe_sites).
  uint32_t addrlen = 0, form = av ? kStraddrLibfabric : kStraddrUnknown;
  char name[256];
  size_t len = sizeof(name);
  if (ep->cm && ep->cm->getname && ep->cm->getname(&ep->fid, name, &len) == 0 &&
      len <= sizeof(name)) {
    addrlen = format == FI_ADDR_STR ? 0 : static_cast<uint32_t>(len);
    char str[256];
    size_t sl = sizeof(str);
    const char* s =
        av && av->ops && av->ops->straddr ? av->ops->straddr(av, name, str, &sl) : nullptr;
    if (s && s == format_addr(format, name, len) && s != fabric_straddr(format, name, len))
      form = kStraddrPlain;
  } else if (format != FI_ADDR_STR) {
    av = nullptr;  // the stride is not known: the insert is not probed
  }
  const size_t before = out->size();
  if (ep->cm) add_site(out, prov, "cm", "getname", fn_ptr(ep->cm->getname));
  if (av && av->ops) add_site(out, prov, "av", "insert", fn_ptr(av->ops->insert));
  for (size_t i = before; i < out->size(); ++i) {
    (*out)[i].addr_format = format;
    (*out)[i].addrlen = (*out)[i].role == FT_UP_ROLE_AV_INSERT ? addrlen : 0;
    (*out)[i].straddr_form = form;
  }
}

// The bytes of a sockaddr that name it: family, port and address (not
// sockaddr_in's zero padding); 0 for another family.
size_t sockaddr_name_len(const sockaddr_storage& a) {
  return a.ss_family == AF_INET ? 8 : a.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : 0;
}

// Whether `ep`'s own address (its getname) is the local address of the
// socket its connect makes: tcp's is, sockets' is not (its endpoint listens
// on a port of its own, and connects from another). Told by connecting it to
// `pep` (listening here) and looking for a socket of this process whose
// local address is the endpoint's name and whose peer is the listener. Then
// the connect's probe names a connecting endpoint whose program never asks
// its name (ft_up_connect_ret): its site's addrlen is that name's length.
uint32_t connect_names_endpoint(fid_fabric* fab, fid_ep* ep, fid_pep* pep) {
  fid_eq* eq = nullptr;
  fi_eq_attr ea{};
  ea.wait_obj = FI_WAIT_NONE;
  if (fi_eq_open(fab, &ea, &eq, nullptr) != 0) return 0;
  uint32_t named = 0;
  sockaddr_storage listener{}, name{};
  size_t len = sizeof(listener);
  if (fi_pep_bind(pep, &eq->fid, 0) == 0 && fi_listen(pep) == 0 &&
      fi_getname(&pep->fid, &listener, &len) == 0 && sockaddr_name_len(listener) &&
      fi_connect(ep, &listener, nullptr, 0) == 0) {
    // The connect is asynchronous: its socket is named at once on loopback,
    // connected soon after; looked for during 200 ms at most.
    for (int tries = 0; tries < 20 && !named; ++tries) {
      len = sizeof(name);
      size_t n = 0;
      if (fi_getname(&ep->fid, &name, &len) == 0 && (n = sockaddr_name_len(name)) != 0) {
        for (int fd = 0; fd < 1024 && !named; ++fd) {
          sockaddr_storage mine{}, peer{};
          socklen_t ml = sizeof(mine), pl = sizeof(peer);
          if (getsockname(fd, reinterpret_cast<sockaddr*>(&mine), &ml) != 0 ||
              getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) != 0)
            continue;
          // The peer's port: the listener's (its address may be the one the
          // listener was bound to as "any").
          if (std::memcmp(&mine, &name, n) == 0 && peer.ss_family == listener.ss_family &&
              std::memcmp(reinterpret_cast<char*>(&peer) + 2,
                          reinterpret_cast<char*>(&listener) + 2, 2) == 0)
            named = static_cast<uint32_t>(n);
        }
      }
      if (!named) usleep(10000);
    }
  }
  fi_close(&eq->fid);
  return named;
}

// A connected endpoint's peer (it has no AV): besides the domain's endpoint
// open (fi_endpoint: the info's dest_addr; probed for every endpoint type),
// the endpoint's connect (fi_connect's address), with the provider's address format for a connect
// of an endpoint opened before the session. Its own address where its program does not ask it: the
// passive endpoint's getname (the listener an accepted connection's info names without its port, on
// tcp), where it is not the endpoint's.
void add_conn_sites(std::vector<OpSite>* out, const std::string& prov, fi_info* info,
                    fid_fabric* fab, fid_ep* ep) {
  const size_t before = out->size();
  if (ep->cm) add_site(out, prov, "cm", "connect", fn_ptr(ep->cm->connect));
  fid_pep* pep = nullptr;
  uint32_t named = 0;
  if (fi_passive_ep(fab, info, &pep, nullptr) == 0) {
    if (pep->cm && (!ep->cm || pep->cm->getname != ep->cm->getname))
      add_site(out, prov, "pep", "getname", fn_ptr(pep->cm->getname));
    // Last: the endpoint is connected then (nothing is probed after it).
    if (ep->cm) named = connect_names_endpoint(fab, ep, pep);
    fi_close(&pep->fid);
  }
  for (size_t i = before; i < out->size(); ++i) {
    (*out)[i].addr_format = info->addr_format;
    (*out)[i].straddr_form = kStraddrPlain;  // not asked: connected names are "ip:port"
    if ((*out)[i].role == FT_UP_ROLE_CONNECT) (*out)[i].addrlen = named;
  }
}

}  // namespace

const char* ep_type_name(int ep_type) {
  return ep_type == FI_EP_MSG ? "FI_EP_MSG" : ep_type == FI_EP_DGRAM ? "FI_EP_DGRAM" : "FI_EP_RDM";
}

bool probe_provider_here(const std::string& prov, int threading, int ep_type,
                         std::vector<OpSite>* out, std::string* why,
                         std::vector<std::string>* notes, UprobeLayout* layout) {
  Fabric& f = fabric_lib();
  // RMA and atomics asked for with msg and tagged: one open finds all four
  // tables (the msg and tagged ones are those of an open without them: the
  // providers choose those by threading, not by these caps). A provider that
  // offers fewer (no atomics, tcp's MSG endpoint no tagged) is opened with
  // what it offers (no caps asked: its default ones).
  fi_info* info = nullptr;
  for (const uint64_t asked : {uint64_t{FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC},
                               uint64_t{FI_MSG | FI_TAGGED}, uint64_t{0}})
    if (!info) info = provider_info(prov, threading, ep_type, asked, why);
  if (!info) return false;
  const uint64_t caps = info->caps;
  const bool msg_ep = ep_type == FI_EP_MSG;
  int ret = 0;
  fid_fabric* fab = nullptr;
  fid_domain* dom = nullptr;
  fid_cq* cq[5] = {};  // [enum fi_cq_format], 1..4: the layout compares them
  fid_av* av = nullptr;
  fid_eq* eq = nullptr;
  fid_ep* ep = nullptr;
  const char* step = "fi_fabric";
  ret = f.fabric(info->fabric_attr, &fab, nullptr);
  if (!ret) {
    step = "fi_domain";
    ret = fi_domain(fab, info, &dom, nullptr);
  }
  for (int fmt = FI_CQ_FORMAT_CONTEXT; !ret && fmt <= FI_CQ_FORMAT_TAGGED; ++fmt) {
    step = "fi_cq_open";
    fi_cq_attr ca{};
    ca.format = static_cast<fi_cq_format>(fmt);
    ca.wait_obj = FI_WAIT_NONE;
    ret = fi_cq_open(dom, &ca, &cq[fmt], nullptr);
  }
  if (!ret && msg_ep) {
    // A connection-oriented endpoint reports its connection on an EQ.
    step = "fi_eq_open";
    fi_eq_attr ea{};
    ea.wait_obj = FI_WAIT_NONE;
    ret = fi_eq_open(fab, &ea, &eq, nullptr);
  } else if (!ret) {
    step = "fi_av_open";
    fi_av_attr aa{};
    aa.type = FI_AV_MAP;
    ret = fi_av_open(dom, &aa, &av, nullptr);
  }
  if (!ret) {
    step = "fi_endpoint";
    ret = fi_endpoint(dom, info, &ep, nullptr);
  }
  // Transmit and receive on two different CQs: the layout finds each pointer once.
  if (!ret) {
    step = "fi_ep_bind(cq)";
    ret = fi_ep_bind(ep, &cq[FI_CQ_FORMAT_CONTEXT]->fid, FI_TRANSMIT);
  }
  if (!ret) ret = fi_ep_bind(ep, &cq[FI_CQ_FORMAT_TAGGED]->fid, FI_RECV);
  if (!ret) {
    step = msg_ep ? "fi_ep_bind(eq)" : "fi_ep_bind(av)";
    ret = fi_ep_bind(ep, msg_ep ? &eq->fid : &av->fid, 0);
  }
  if (!ret) {
    step = "fi_enable";
    ret = fi_enable(ep);
  }
  if (!ret) {
    fid_cq* const read_cq = cq[FI_CQ_FORMAT_CONTEXT];
    // The tables as they are after fi_enable: what the application calls.
    add_site(out, prov, "domain", "cq_open", fn_ptr(dom->ops->cq_open));
    add_site(out, prov, "ep", "bind", fn_ptr(ep->fid.ops->bind));
    // libfabric's utility CQ read is a tail call of readfrom through the op table
    // (its first instruction must be single-stepped, 8-10 us a hit here): where
    // it is, the readfrom probe sees every read and the read is not probed.
    if (read_calls_readfrom(read_cq)) {
      if (notes)
        notes->push_back(prov +
                         ": cq.read calls cq.readfrom through the op table: readfrom's probe "
                         "covers both");
    } else {
      add_site(out, prov, "cq", "read", fn_ptr(read_cq->ops->read));
    }
    add_site(out, prov, "cq", "readfrom", fn_ptr(read_cq->ops->readfrom));
    add_site(out, prov, "cq", "sread", fn_ptr(read_cq->ops->sread));
    add_site(out, prov, "cq", "sreadfrom", fn_ptr(read_cq->ops->sreadfrom));
    if (caps & FI_MSG) add_ops(out, prov, ep->msg, false);
    if (caps & FI_TAGGED) add_ops(out, prov, ep->tagged, true);
    if (caps & FI_RMA) add_table(out, prov, "rma", ep->rma, kRmaSlots);
    if (caps & FI_ATOMIC) add_table(out, prov, "atomic", ep->atomic, kAtomicSlots);
    add_name_sites(out, prov, info, ep, av);
    // Every endpoint's open: its default op flags (whether its ops complete),
    // and a MSG endpoint's peer (add_conn_sites).
    add_site(out, prov, "domain", "endpoint", fn_ptr(dom->ops->endpoint));
    if (msg_ep) add_conn_sites(out, prov, info, fab, ep);
    std::string no_layout;
    if (layout && !find_layout(cq, ep, layout, &no_layout)) {
      layout->path.clear();
      if (notes) notes->push_back(prov + ": no layout: " + no_layout);
    }
    if (layout) layout->provider = prov;
  } else {
    *why = prov + ": " + step + ": " + std::to_string(ret);
  }
  if (ep) fi_close(&ep->fid);
  if (av) fi_close(&av->fid);
  if (eq) fi_close(&eq->fid);
  for (fid_cq* c : cq)
    if (c) fi_close(&c->fid);
  if (dom) fi_close(&dom->fid);
  if (fab) fi_close(&fab->fid);
  f.freeinfo(info);
  return ret == 0;
}

}  // namespace fabtrace
