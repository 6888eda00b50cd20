// The link labels of `fabtrace record --uprobes` (userspace/record/
// uprobes/uprobe_names.*, common/addr_format.*): addresses printed as libfabric's
// straddr prints them, checked against the providers' own fi_av_straddr on
// their real addresses (what the preload prints), and the fallbacks.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <string>

#include "bpf/uprobe_ops.h"
#include "common/addr_format.h"
#include "userspace/record/uprobes/optable_probe.h"
#include "userspace/record/uprobes/uprobe_names.h"

namespace fabtrace {
namespace {

std::string bytes_of(const void* p, size_t n) {
  return std::string(static_cast<const char*>(p), n);
}

// A socket address has the same name under its own format and FI_SOCKADDR.
template <typename SockAddr>
void expect_named(uint32_t format, const SockAddr& sa, const std::string& name) {
  EXPECT_EQ(fabric_straddr(format, &sa, sizeof(sa)), name);
  EXPECT_EQ(fabric_straddr(FI_SOCKADDR, &sa, sizeof(sa)), name);
}

TEST(UprobeNames, StraddrForms) {
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_port = htons(4660);
  inet_pton(AF_INET, "10.1.2.3", &in.sin_addr);
  expect_named(FI_SOCKADDR_IN, in, "fi_sockaddr_in://10.1.2.3:4660");
  sockaddr_in6 in6{};
  in6.sin6_family = AF_INET6;
  in6.sin6_port = htons(7);
  inet_pton(AF_INET6, "fe80::1", &in6.sin6_addr);
  expect_named(FI_SOCKADDR_IN6, in6, "fi_sockaddr_in6://[fe80::1]:7");
  // A string address: up to its NUL, or its length.
  const char name[] = "fi_shm://1234\0junk";
  EXPECT_EQ(fabric_straddr(FI_ADDR_STR, name, sizeof(name)), "fi_shm://1234");
  EXPECT_EQ(fabric_straddr(FI_ADDR_STR, name, 6), "fi_shm");
  // What straddr refuses: a family that is not the format's, a short address.
  EXPECT_EQ(fabric_straddr(FI_SOCKADDR_IN6, &in, sizeof(in)), "");
  EXPECT_EQ(fabric_straddr(FI_SOCKADDR_IN, &in, 8), "");
  // ... and the preload's own label for it then: "ip:port", or hex.
  EXPECT_EQ(address_label(FI_SOCKADDR_IN, &in, sizeof(in)), "fi_sockaddr_in://10.1.2.3:4660");
  const unsigned char raw[3] = {0xab, 0x01, 0xff};
  EXPECT_EQ(address_label(FI_ADDR_PSMX2, raw, sizeof(raw)), "0xab01ff");
}

// libfabric, opened at run time as the collector does (the tests do not link it).
struct Lib {
  void* h = dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
  template <typename F>
  F fn(const char* name) const {
    return h ? reinterpret_cast<F>(dlsym(h, name)) : nullptr;
  }
};

// `prov`'s RDM endpoint's address (its getname) and another endpoint's looked
// up in the AV after an insert, each with what the provider's fi_av_straddr
// prints for it: the labels the preload gives (preload/wrap_ep.cpp,
// preload/names.cpp). False when the provider cannot be opened here.
struct ProviderNames {
  uint32_t format = 0;
  std::string own, own_str, inserted, looked_up_str;
  std::string failed;  // the step that failed
};
bool provider_names(const char* prov, ProviderNames* out) {
  Lib lib;
  auto getinfo =
      lib.fn<int (*)(uint32_t, const char*, const char*, uint64_t, const fi_info*, fi_info**)>(
          "fi_getinfo");
  auto dupinfo = lib.fn<fi_info* (*)(const fi_info*)>("fi_dupinfo");
  auto freeinfo = lib.fn<void (*)(fi_info*)>("fi_freeinfo");
  auto fabric = lib.fn<int (*)(fi_fabric_attr*, fid_fabric**, void*)>("fi_fabric");
  if (!getinfo || !dupinfo || !freeinfo || !fabric) return false;
  fi_info* hints = dupinfo(nullptr);
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_MSG;
  hints->fabric_attr->prov_name = strdup(prov);
  fi_info* info = nullptr;
  const int gi = getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info);
  freeinfo(hints);
  if (gi || !info) {
    out->failed = "fi_getinfo: " + std::to_string(gi);
    return false;
  }
  fid_fabric* fab = nullptr;
  fid_domain* dom = nullptr;
  fid_av* av = nullptr;
  fid_ep* ep[2] = {};
  fid_cq* cq = nullptr;
  int ret = 0;
  auto step = [&](const char* what, int r) {
    if (ret) return;
    ret = r;
    if (ret) out->failed = std::string(what) + ": " + std::to_string(ret);
  };
  step("fi_fabric", fabric(info->fabric_attr, &fab, nullptr));
  if (!ret) step("fi_domain", fi_domain(fab, info, &dom, nullptr));
  fi_av_attr aa{};
  if (!ret) step("fi_av_open", fi_av_open(dom, &aa, &av, nullptr));
  fi_cq_attr ca{};
  ca.format = FI_CQ_FORMAT_CONTEXT;
  if (!ret) step("fi_cq_open", fi_cq_open(dom, &ca, &cq, nullptr));
  for (fid_ep*& e : ep) {
    if (!ret) step("fi_endpoint", fi_endpoint(dom, info, &e, nullptr));
    if (!ret) step("fi_ep_bind(av)", fi_ep_bind(e, &av->fid, 0));
    if (!ret) step("fi_ep_bind(cq)", fi_ep_bind(e, &cq->fid, FI_TRANSMIT | FI_RECV));
    if (!ret) step("fi_enable", fi_enable(e));
  }
  char raw[256], str[256];
  size_t len = sizeof(raw), sl = sizeof(str);
  out->format = info->addr_format;
  if (!ret) step("fi_getname", fi_getname(&ep[0]->fid, raw, &len));
  if (!ret) {
    out->own = bytes_of(raw, len);
    if (const char* s = fi_av_straddr(av, raw, str, &sl)) out->own_str = s;
  }
  // The other endpoint, inserted as a peer's name, then looked up as the
  // preload does for a link's remote.
  len = sizeof(raw);
  if (!ret) step("fi_getname", fi_getname(&ep[1]->fid, raw, &len));
  fi_addr_t a = FI_ADDR_NOTAVAIL;
  if (!ret) {
    out->inserted = bytes_of(raw, len);
    step("fi_av_insert", fi_av_insert(av, raw, 1, &a, 0, nullptr) == 1 ? 0 : -1);
  }
  // A provider that resolves addresses lazily (rxd) cannot look it up yet:
  // the preload prints the address inserted then (preload/wrap_av.cpp).
  len = sizeof(raw);
  sl = sizeof(str);
  const void* peer = fi_av_lookup(av, a, raw, &len) == 0 ? raw : out->inserted.data();
  if (!ret)
    if (const char* s = fi_av_straddr(av, peer, str, &sl)) out->looked_up_str = s;
  for (fid_ep* e : ep)
    if (e) fi_close(&e->fid);
  if (cq) fi_close(&cq->fid);
  if (av) fi_close(&av->fid);
  if (dom) fi_close(&dom->fid);
  if (fab) fi_close(&fab->fid);
  freeinfo(info);
  return ret == 0;
}

class UprobeNamesProvider : public ::testing::TestWithParam<const char*> {};

// The labels of --uprobes for the bytes its probes read (an endpoint's
// getname, the address an AV insert was given), with the address format and
// straddr form the session's helper finds for the provider, are what the
// provider prints for the same endpoint and peer.
TEST_P(UprobeNamesProvider, LabelsAreTheProvidersStraddr) {
  ProviderNames p;
  ASSERT_TRUE(provider_names(GetParam(), &p)) << p.failed;
  ASSERT_FALSE(p.own_str.empty());
  ASSERT_FALSE(p.looked_up_str.empty());
  std::printf("%s: local %s, peer %s\n", GetParam(), p.own_str.c_str(), p.looked_up_str.c_str());
  const OptableResult r = probe_optables({GetParam()}, 20000);
  const OpSite* getname = nullptr;
  const OpSite* insert = nullptr;
  for (const OpSite& s : r.sites) {
    if (s.role == FT_UP_ROLE_GETNAME) getname = &s;
    if (s.role == FT_UP_ROLE_AV_INSERT) insert = &s;
  }
  ASSERT_NE(getname, nullptr) << ::testing::PrintToString(r.notes);
  ASSERT_NE(insert, nullptr) << ::testing::PrintToString(r.notes);
  EXPECT_EQ(insert->addr_format, p.format);
  UprobeNames n;
  n.ep_names[{1, 0x10}] = {p.own, getname->addr_format, getname->straddr_form};
  n.ep_av[{1, 0x10}] = 0xa0;
  n.av_addrs[{1, 0xa0, 0}] = {p.inserted, insert->addr_format, insert->straddr_form};
  EXPECT_EQ(uprobe_local_label(1, 0x10, n), p.own_str);
  EXPECT_EQ(uprobe_remote_label(1, 0x10, 0, n), p.looked_up_str);
}

INSTANTIATE_TEST_SUITE_P(Providers, UprobeNamesProvider,
                         ::testing::Values("tcp;ofi_rxm", "shm", "udp;ofi_rxd", "sockets"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           std::string s = i.param;
                           for (char& c : s)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

// Without what the session should have seen: fallbacks, never a wrong name.
TEST(UprobeNames, Fallbacks) {
  const char a[] = "fi_shm://a", b[] = "fi_shm://b";
  UprobeNames n;
  EXPECT_EQ(uprobe_local_label(5, 0xbeef, n), "pid 5 ep 0xbeef");
  EXPECT_EQ(uprobe_remote_label(5, 0xbeef, FT_UP_ADDR_UNSPEC, n), "(any)");
  EXPECT_EQ(uprobe_remote_label(5, 0xbeef, 2, n), "fi_addr#2");
  // The endpoint's AV unknown: the process's one address under fi_addr 2 ...
  n.av_addrs[{5, 0xa0, 2}] = {bytes_of(a, sizeof(a)), FI_ADDR_STR};
  n.av_addrs[{6, 0xa1, 2}] = {bytes_of(b, sizeof(b)), FI_ADDR_STR};  // another process's
  EXPECT_EQ(uprobe_remote_label(5, 0xbeef, 2, n), "fi_shm://a");
  // ... but not when two AVs of the process gave it out for different peers.
  n.av_addrs[{5, 0xa2, 2}] = {bytes_of(b, sizeof(b)), FI_ADDR_STR};
  EXPECT_EQ(uprobe_remote_label(5, 0xbeef, 2, n), "fi_addr#2");
  // Its AV known: that AV's entry only.
  n.ep_av[{5, 0xbeef}] = 0xa2;
  EXPECT_EQ(uprobe_remote_label(5, 0xbeef, 2, n), "fi_shm://b");
  EXPECT_EQ(uprobe_remote_label(5, 0xbeef, 3, n), "fi_addr#3");
}

// A connected (FI_EP_MSG) endpoint: no AV, one peer whatever fi_addr_t its
// ops carry, printed as the preload prints it ("ip:port", from the info's
// dest_addr or fi_connect's address: bpf/uprobe_ops.h, struct ft_up_conn).
TEST(UprobeNames, ConnectedEndpoints) {
  sockaddr_in peer{}, own{}, unbound{};
  peer.sin_family = own.sin_family = unbound.sin_family = AF_INET;
  peer.sin_port = htons(45671);
  own.sin_port = htons(43734);
  inet_pton(AF_INET, "192.0.2.2", &peer.sin_addr);
  inet_pton(AF_INET, "192.0.2.7", &own.sin_addr);
  inet_pton(AF_INET, "192.0.2.7", &unbound.sin_addr);
  UprobeNames n;
  // The kernel keeps the connect's sockaddr_in with bytes after it: cut to its length.
  std::string read_peer = bytes_of(&peer, sizeof(peer)) + std::string(12, '\x5a');
  n.ep_conns[{5, 0xc0}] = {{read_peer, FI_SOCKADDR_IN, kStraddrPlain}, {}};
  for (const uint64_t fi_addr : {uint64_t{0}, uint64_t{7}, uint64_t{FT_UP_ADDR_UNSPEC}})
    EXPECT_EQ(uprobe_remote_label(5, 0xc0, fi_addr, n), "192.0.2.2:45671") << fi_addr;
  // Its own name: none seen, and an info's src_addr without a port names nothing ...
  EXPECT_EQ(uprobe_local_label(5, 0xc0, n), "pid 5 ep 0xc0");
  n.ep_conns[{5, 0xc0}].local = {bytes_of(&unbound, sizeof(unbound)), FI_SOCKADDR_IN};
  EXPECT_EQ(uprobe_local_label(5, 0xc0, n), "pid 5 ep 0xc0");
  // ... one with a port does; its getname wins, "ip:port" whatever the site's
  // straddr form (the preload asks no AV's straddr for a connected endpoint).
  n.ep_conns[{5, 0xc0}].local = {bytes_of(&own, sizeof(own)), FI_SOCKADDR_IN};
  EXPECT_EQ(uprobe_local_label(5, 0xc0, n), "192.0.2.7:43734");
  n.ep_names[{5, 0xc0}] = {bytes_of(&peer, sizeof(peer)), FI_SOCKADDR_IN, kStraddrLibfabric};
  EXPECT_EQ(uprobe_local_label(5, 0xc0, n), "192.0.2.2:45671");
  // Connected, its peer never seen (opened and connected before the session's
  // connect probe, or given a peer of no sockaddr family): "(connected)".
  n.ep_conns[{5, 0xc1}] = {};
  EXPECT_EQ(uprobe_remote_label(5, 0xc1, 0, n), "(connected)");
  EXPECT_EQ(uprobe_remote_label(5, 0xc1, FT_UP_ADDR_UNSPEC, n), "(connected)");
  // An accepted connection's info names its listener without the port (tcp):
  // the process's one passive endpoint name on that address gives it; not an
  // active endpoint's name, another process's, nor one of two listeners.
  sockaddr_in any_port = own, other_port = own;
  any_port.sin_port = 0;
  other_port.sin_port = htons(5);
  n.ep_conns[{5, 0xc3}] = {{}, {bytes_of(&any_port, sizeof(any_port)), FI_SOCKADDR_IN}};
  n.ep_names[{5, 0xd0}] = {bytes_of(&own, sizeof(own)), FI_SOCKADDR_IN, kStraddrPlain, false};
  n.ep_names[{6, 0xd0}] = {bytes_of(&own, sizeof(own)), FI_SOCKADDR_IN, kStraddrPlain, true};
  n.ep_names[{5, 0xd1}] = {bytes_of(&peer, sizeof(peer)), FI_SOCKADDR_IN, kStraddrPlain, true};
  EXPECT_EQ(uprobe_local_label(5, 0xc3, n), "pid 5 ep 0xc3");
  n.ep_names[{5, 0xd0}].passive = true;
  EXPECT_EQ(uprobe_local_label(5, 0xc3, n), "192.0.2.7:43734");
  n.ep_names[{5, 0xd2}] = {bytes_of(&other_port, sizeof(other_port)), FI_SOCKADDR_IN, kStraddrPlain,
                           true};
  EXPECT_EQ(uprobe_local_label(5, 0xc3, n), "pid 5 ep 0xc3");
  // IPv6.
  sockaddr_in6 in6{};
  in6.sin6_family = AF_INET6;
  in6.sin6_port = htons(9);
  inet_pton(AF_INET6, "fe80::2", &in6.sin6_addr);
  n.ep_conns[{5, 0xc2}] = {{bytes_of(&in6, sizeof(in6)), FI_SOCKADDR_IN6}, {}};
  EXPECT_EQ(uprobe_remote_label(5, 0xc2, 0, n), "[fe80::2]:9");
  // The same endpoint pointer in another process, and the process's other
  // (RDM) endpoints: named as before.
  EXPECT_EQ(uprobe_remote_label(6, 0xc0, 0, n), "fi_addr#0");
  EXPECT_EQ(uprobe_remote_label(5, 0xbeef, FT_UP_ADDR_UNSPEC, n), "(any)");
  n.ep_names[{5, 0xbeef}] = {bytes_of(&own, sizeof(own)), FI_SOCKADDR_IN, kStraddrLibfabric};
  EXPECT_EQ(uprobe_local_label(5, 0xbeef, n), "fi_sockaddr_in://192.0.2.7:43734");
}

}  // namespace
}  // namespace fabtrace
