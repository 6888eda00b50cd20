// The op-table discovery of `fabtrace record --uprobes`
// (userspace/record/uprobes/optable_probe.*): the address -> (file, offset)
// arithmetic, checked against the bytes of the real files; the endbr64 skip;
// the deduplication of sites; the helper that opens tcp;ofi_rxm and shm; and
// the statistics' histogram (common/uprobe_stats.*) that the BPF side fills.
#include "userspace/record/uprobes/optable_probe.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <rdma/fi_domain.h>
#include <unistd.h>

#include <complex>
#include <cstring>
#include <sstream>
#include <string>

#include "bpf/uprobe_ops.h"
#include "common/addr_format.h"
#include "common/op_kinds.h"
#include "common/uprobe_stats.h"
#include "tests/unit/expect_each.h"
#include "tests/unit/scratch_dir.h"

namespace fabtrace {
namespace {

TEST(OptableProbe, FileOffsetFromTheContainingLoadSegment) {
  // A typical shared object: text at vaddr 0x1000 from file offset 0x1000, data
  // at vaddr 0x5e10 from file offset 0x4e10 (vaddr and offset differ by a page).
  const std::vector<ElfLoad> loads = {
      {0x0, 0x800, 0x0}, {0x1000, 0x3000, 0x1000}, {0x5e10, 0x400, 0x4e10}};
  const uint64_t bias = 0x7f0000000000ULL;
  uint64_t off = 0;
  ASSERT_TRUE(file_offset_in(bias + 0x1234, bias, loads, &off));
  EXPECT_EQ(off, 0x1234u);
  ASSERT_TRUE(file_offset_in(bias + 0x5e20, bias, loads, &off));
  EXPECT_EQ(off, 0x4e20u);
  ASSERT_TRUE(file_offset_in(bias + 0x3fff, bias, loads, &off));  // last byte of text
  EXPECT_EQ(off, 0x3fffu);
  EXPECT_FALSE(file_offset_in(bias + 0x4000, bias, loads, &off));  // the gap after it
  EXPECT_FALSE(file_offset_in(bias + 0x900, bias, loads, &off));
  EXPECT_FALSE(file_offset_in(bias - 1, bias, loads, &off));
  EXPECT_FALSE(file_offset_in(bias + 0x6210, bias, loads, &off));  // one past the data
}

// The bytes at the computed file offset are the bytes the process runs.
void expect_file_bytes_match(const void* fn) {
  std::string path;
  uint64_t off = 0;
  ASSERT_TRUE(code_location(fn, &path, &off));
  ASSERT_FALSE(path.empty());
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << path;
  unsigned char file[32] = {};
  ASSERT_EQ(::pread(fd, file, sizeof(file), static_cast<off_t>(off)),
            static_cast<ssize_t>(sizeof(file)));
  ::close(fd);
  EXPECT_EQ(std::memcmp(file, fn, sizeof(file)), 0) << path << " +" << off;
}

int local_function(int x) { return x * 3 + 1; }

TEST(OptableProbe, CodeLocationMatchesTheFileBytes) {
  expect_file_bytes_match(reinterpret_cast<const void*>(&local_function));  // the executable
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(libc, nullptr);
  expect_file_bytes_match(dlsym(libc, "getpid"));
  void* fab = dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(fab, nullptr) << dlerror();
  expect_file_bytes_match(dlsym(fab, "fi_getinfo"));
  std::string path;
  uint64_t off = 0;
  int on_stack = 0;
  EXPECT_FALSE(code_location(&on_stack, &path, &off));  // not in any object
}

TEST(OptableProbe, ProbeOffsetSkipsEndbr64) {
  test::ScratchDir d;
  const std::string f = d.write("code.bin", std::string("\x90\x90\x90\x90"
                                                        "\xf3\x0f\x1e\xfa"
                                                        "\x55\x48\x89\xe5",
                                                        12));
  EXPECT_EQ(probe_offset(f, 4), 8u);    // endbr64: the next instruction
  EXPECT_EQ(probe_offset(f, 8), 8u);    // push %rbp: as is
  EXPECT_EQ(probe_offset(f, 0), 0u);    // nops
  EXPECT_EQ(probe_offset(f, 10), 10u);  // too short to hold one
  EXPECT_EQ(probe_offset(d.path("missing"), 4), 4u);
}

OpSite site(const char* prov, const char* table, const char* op, uint32_t role, OpKind kind,
            uint64_t offset) {
  OpSite s = op_site(prov, table, op, role, kind);
  s.path = "/lib/libfabric.so.1";
  s.offset = offset;
  return s;
}

TEST(OptableProbe, DedupeMergesSharedFunctionsAndDropsStubs) {
  const std::vector<OpSite> in = {
      site("tcp;ofi_rxm", "cq", "read", FT_UP_ROLE_CQ_READ, OpKind::kCount, 0x100),
      site("shm", "cq", "read", FT_UP_ROLE_CQ_READ, OpKind::kCount, 0x100),
      site("tcp;ofi_rxm", "msg", "send", FT_UP_ROLE_OP, OpKind::kSend, 0x200),
      site("tcp;ofi_rxm", "msg", "send", FT_UP_ROLE_OP, OpKind::kSend, 0x200),  // FI_THREAD_DOMAIN
      site("shm", "msg", "senddata", FT_UP_ROLE_OP, OpKind::kSenddata, 0x300),  // a stub ...
      site("shm", "msg", "injectdata", FT_UP_ROLE_OP, OpKind::kInjectdata, 0x300),  // ... twice
  };
  std::vector<std::string> notes;
  const std::vector<OpSite> out = dedupe_sites(in, &notes);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].provider, "tcp;ofi_rxm,shm");
  EXPECT_EQ(out[0].op, "read");
  EXPECT_EQ(out[1].provider, "tcp;ofi_rxm");
  EXPECT_EQ(out[1].offset, 0x200u);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("+0x300"), std::string::npos) << notes[0];
}

TEST(OptableProbe, SiteLineRoundTrip) {
  OpSite s = site("tcp;ofi_rxm", "tagged", "send", FT_UP_ROLE_OP, OpKind::kTsend, 0x1a2b3c);
  s.ctx = FT_UP_CTX_ARG7;
  s.len = FT_UP_LEN_ARG3;
  s.peer = FT_UP_PEER_ARG(5);
  s.addr_format = FI_SOCKADDR_IN;
  s.addrlen = 16;
  s.straddr_form = kStraddrPlain;
  OpSite r;
  ASSERT_TRUE(parse_site_line(site_line(s), &r));
  EXPECT_EQ(r.provider, s.provider);
  EXPECT_EQ(r.table, "tagged");
  EXPECT_EQ(r.op, "send");
  EXPECT_EQ(r.role, s.role);
  EXPECT_EQ(r.op_kind, s.op_kind);
  EXPECT_EQ(r.ctx, s.ctx);
  EXPECT_EQ(r.len, s.len);
  EXPECT_EQ(r.peer, s.peer);
  EXPECT_EQ(r.addr_format, s.addr_format);
  EXPECT_EQ(r.addrlen, s.addrlen);
  EXPECT_EQ(r.straddr_form, s.straddr_form);
  EXPECT_EQ(r.offset, s.offset);
  EXPECT_EQ(r.path, s.path);
  EXPECT_FALSE(parse_site_line("", &r));
  EXPECT_TRUE(parse_site_line("a\tb\tc\t8\t2\t3\t4\t5\t0\t0\t0\t5\t/lib/x.so", &r));
  EXPECT_FALSE(parse_site_line("a\tb\tc\t1\t2\t3\t4\t5\t0\t0\t0\t5", &r));  // no path
  EXPECT_FALSE(parse_site_line("a\tb\tc\t1\t2\t3\t4\t5\t/lib/x.so", &r));   // too few numbers
  EXPECT_FALSE(parse_site_line("a\tb\tc\t1\t2\t3\t4\t5\t0\t0\t0\tx5\t/lib/x.so", &r));  // offset
  EXPECT_FALSE(parse_site_line("a\tb\tc\t9\t2\t3\t4\t5\t0\t0\t0\t5\t/lib/x.so", &r));   // role
  EXPECT_FALSE(parse_site_line("a\tb\tc\t1\t2\t3\t4\t5\t0\t0\t0\t5\trel.so", &r));      // relative
}

const OpSite* find_site(const std::vector<OpSite>& sites, const std::string& prov,
                        const char* table, const char* op) {
  for (const OpSite& s : sites)
    if (s.table == table && s.op == op &&
        ("," + s.provider + ",").find("," + prov + ",") != std::string::npos)
      return &s;
  return nullptr;
}

// The real providers, opened in a forked helper as `fabtrace record` does.
TEST(OptableProbe, FindsTheDataPathOfTcpRxmAndShm) {
  const OptableResult r = probe_optables({"tcp;ofi_rxm", "shm"}, 20000);
  for (const std::string& n : r.notes) std::printf("note: %s\n", n.c_str());
  for (const char* prov : {"tcp;ofi_rxm", "shm"}) {
    for (const auto& [table, op] :
         std::vector<std::pair<const char*, const char*>>{{"domain", "cq_open"},
                                                          {"ep", "bind"},
                                                          {"cq", "readfrom"},
                                                          {"msg", "send"},
                                                          {"msg", "recv"},
                                                          {"tagged", "send"},
                                                          {"tagged", "recv"},
                                                          {"rma", "read"},
                                                          {"rma", "readmsg"},
                                                          {"rma", "write"},
                                                          {"rma", "writev"},
                                                          {"rma", "writedata"},
                                                          {"atomic", "write"},
                                                          {"atomic", "readwrite"},
                                                          {"atomic", "compwrite"},
                                                          {"atomic", "compwritemsg"},
                                                          {"av", "insert"},
                                                          {"cm", "getname"}}) {
      const OpSite* s = find_site(r.sites, prov, table, op);
      ASSERT_NE(s, nullptr) << prov << " " << table << "." << op;
      EXPECT_NE(s->path.find("libfabric.so"), std::string::npos) << s->path;
      EXPECT_GT(s->offset, 0u);
    }
  }
  // libfabric's utility CQ: rxm's and shm's reads are the one ofi_cq_readfrom,
  // and their read (ofi_cq_read) calls it through the op table: not probed.
  const OpSite* readfrom = find_site(r.sites, "tcp;ofi_rxm", "cq", "readfrom");
  ASSERT_NE(readfrom, nullptr);
  EXPECT_EQ(readfrom->provider, "tcp;ofi_rxm,shm");
  EXPECT_EQ(find_site(r.sites, "tcp;ofi_rxm", "cq", "read"), nullptr);
  EXPECT_EQ(find_site(r.sites, "shm", "cq", "read"), nullptr);
  size_t forwarding = 0;
  for (const std::string& n : r.notes)
    forwarding += n.find("cq.read calls cq.readfrom through the op table") != std::string::npos;
  EXPECT_EQ(forwarding, 2u);  // once per provider (both threading variants say the same)
  // The providers' own ops and cq_open are theirs.
  EXPECT_NE(find_site(r.sites, "tcp;ofi_rxm", "msg", "send")->offset,
            find_site(r.sites, "shm", "msg", "send")->offset);
  EXPECT_NE(find_site(r.sites, "tcp;ofi_rxm", "domain", "cq_open")->offset,
            find_site(r.sites, "shm", "domain", "cq_open")->offset);
  // Where the RMA and atomic ops keep their context and length (rdma/fi_rma.h,
  // fi_atomic.h: the ep is argument 1).
  const OpSite* wd = find_site(r.sites, "tcp;ofi_rxm", "rma", "writedata");
  EXPECT_EQ(wd->op_kind, static_cast<uint32_t>(OpKind::kWritedata));
  EXPECT_EQ(wd->ctx, static_cast<uint32_t>(FT_UP_CTX_STACK(9)));
  const OpSite* cw = find_site(r.sites, "shm", "atomic", "compwrite");
  EXPECT_EQ(cw->op_kind, static_cast<uint32_t>(OpKind::kCompareAtomic));
  EXPECT_EQ(FT_UP_CTX_STACK_ARG(cw->ctx), 14u);
  EXPECT_EQ(FT_UP_LEN_KIND(cw->len), static_cast<uint32_t>(FT_UP_LEN_ACOUNT));
  EXPECT_EQ(FT_UP_LEN_DT_ARG(cw->len), 12u);
  // Where each op's peer is (the fi_addr_t after the ones before it).
  EXPECT_EQ(wd->peer, static_cast<uint32_t>(FT_UP_PEER_ARG(6)));
  EXPECT_EQ(cw->peer, static_cast<uint32_t>(FT_UP_PEER_ARG(9)));
  EXPECT_EQ(find_site(r.sites, "shm", "tagged", "recv")->peer, FT_UP_PEER_ARG(5));
  EXPECT_EQ(find_site(r.sites, "shm", "msg", "inject")->peer, FT_UP_PEER_ARG(4));
  EXPECT_EQ(find_site(r.sites, "shm", "tagged", "sendmsg")->peer, FT_UP_PEER_MSG);
  EXPECT_EQ(find_site(r.sites, "shm", "atomic", "readwritev")->peer, FT_UP_PEER_ARG(8));
  // The AV's insert and the getname carry the provider's address format and,
  // for the insert, its stride: a sockaddr_in on tcp;ofi_rxm here, strings on shm.
  const OpSite* rxm_insert = find_site(r.sites, "tcp;ofi_rxm", "av", "insert");
  EXPECT_EQ(rxm_insert->addr_format, static_cast<uint32_t>(FI_SOCKADDR_IN));
  EXPECT_EQ(rxm_insert->addrlen, sizeof(sockaddr_in));
  const OpSite* shm_insert = find_site(r.sites, "shm", "av", "insert");
  EXPECT_EQ(shm_insert->addr_format, static_cast<uint32_t>(FI_ADDR_STR));
  EXPECT_EQ(shm_insert->addrlen, 0u);
  EXPECT_NE(rxm_insert->offset, shm_insert->offset);
  // Every site is at most once.
  for (size_t i = 0; i < r.sites.size(); ++i)
    for (size_t j = i + 1; j < r.sites.size(); ++j)
      EXPECT_FALSE(r.sites[i].path == r.sites[j].path && r.sites[i].offset == r.sites[j].offset);
}

TEST(OptableProbe, UnknownProviderIsANoteNotASite) {
  const OptableResult r = probe_optables({"no_such_provider"}, 20000);
  EXPECT_TRUE(r.sites.empty());
  ASSERT_EQ(r.notes.size(), 6u);  // two threading variants of three endpoint types
  for (const std::string& n : r.notes) EXPECT_NE(n.find("no_such_provider"), std::string::npos);
  EXPECT_TRUE(r.layouts.empty());
}

// Providers whose endpoints are not RDM utility ones: tcp's own endpoint is
// MSG only (asked for RDM, libfabric offers tcp;ofi_rxm: not taken for tcp's)
// and has no tagged ops; its CQ and endpoint are the utility ones (the same
// layout as rxm's). sockets has RDM and MSG endpoints and its own CQ and
// endpoint, whose layout differs: the CQ's per-format function (its
// report_completion) further in, the endpoint's CQs two pointers away
// (ep->attr->tx_ctx->comp.send_cq, prov/sockets/include/sock.h). Each site
// has its provider's.
TEST(OptableProbe, FindsTcpMsgEndpointAndSockets) {
  const OptableResult r = probe_optables({"tcp", "sockets"}, 20000);
  for (const std::string& n : r.notes) std::printf("note: %s\n", n.c_str());
  for (const char* prov : {"tcp", "sockets"})
    for (const auto& [table, op] : std::vector<std::pair<const char*, const char*>>{
             {"domain", "cq_open"}, {"ep", "bind"}, {"msg", "send"}, {"msg", "recv"}})
      EXPECT_NE(find_site(r.sites, prov, table, op), nullptr) << prov << " " << table << "." << op;
  EXPECT_EQ(find_site(r.sites, "tcp", "tagged", "send"), nullptr);  // no FI_TAGGED on tcp's MSG
  // sockets' own AV prints its addresses "ip:port", not as libfabric's
  // utility code; its RDM and MSG endpoints share their getname (the MSG one,
  // without an AV, takes the RDM one's form).
  for (const char* what : {"insert", "getname"}) {
    const OpSite* s = find_site(r.sites, "sockets", what[0] == 'i' ? "av" : "cm", what);
    ASSERT_NE(s, nullptr) << what << " " << ::testing::PrintToString(r.notes);
    EXPECT_EQ(s->straddr_form, static_cast<uint32_t>(kStraddrPlain)) << what;
  }
  EXPECT_EQ(find_site(r.sites, "tcp", "cm", "getname")->straddr_form,
            static_cast<uint32_t>(kStraddrLibfabric));
  EXPECT_NE(find_site(r.sites, "sockets", "tagged", "send"), nullptr);
  // A connected endpoint's peer: its open (the info) and its connect, with
  // the address format the collector prints them in; tcp's listener's name
  // (its passive endpoint's own getname).
  for (const char* prov : {"tcp", "sockets"}) {
    const OpSite* open = find_site(r.sites, prov, "domain", "endpoint");
    const OpSite* connect = find_site(r.sites, prov, "cm", "connect");
    ASSERT_NE(open, nullptr) << prov << " " << ::testing::PrintToString(r.notes);
    ASSERT_NE(connect, nullptr) << prov;
    EXPECT_EQ(open->role, static_cast<uint32_t>(FT_UP_ROLE_EP_OPEN));
    EXPECT_EQ(connect->role, static_cast<uint32_t>(FT_UP_ROLE_CONNECT));
    EXPECT_EQ(connect->addr_format, static_cast<uint32_t>(FI_SOCKADDR_IN)) << prov;
  }
  // tcp's endpoint is named by its connect's socket (the helper connected
  // one and found it: IPv4, family + port + address), sockets' is not (its
  // endpoint listens on a port of its own, and connects from another).
  EXPECT_EQ(find_site(r.sites, "tcp", "cm", "connect")->addrlen, 8u);
  EXPECT_EQ(find_site(r.sites, "sockets", "cm", "connect")->addrlen, 0u);
  const OpSite* pep = find_site(r.sites, "tcp", "pep", "getname");
  ASSERT_NE(pep, nullptr);
  EXPECT_EQ(pep->role, static_cast<uint32_t>(FT_UP_ROLE_GETNAME));
  EXPECT_NE(pep->offset, find_site(r.sites, "tcp", "cm", "getname")->offset);
  const OptableResult rxm = probe_optables({"tcp;ofi_rxm"}, 20000);
  ASSERT_NE(find_site(rxm.sites, "tcp;ofi_rxm", "msg", "send"), nullptr);
  EXPECT_EQ(find_site(rxm.sites, "tcp;ofi_rxm", "cm", "connect"), nullptr);  // RDM: its AV
  EXPECT_NE(find_site(r.sites, "tcp", "msg", "send")->offset,
            find_site(rxm.sites, "tcp;ofi_rxm", "msg", "send")->offset);
  // The layouts: tcp's, the same as rxm's, and sockets'.
  ASSERT_EQ(r.layouts.size(), 2u) << ::testing::PrintToString(r.notes);
  ASSERT_EQ(rxm.layouts.size(), 1u);
  const OpSite* tcp_send = find_site(r.sites, "tcp", "msg", "send");
  const OpSite* sock_send = find_site(r.sites, "sockets", "msg", "send");
  const OpSite* sock_read = find_site(r.sites, "sockets", "cq", "read");
  ASSERT_NE(sock_read, nullptr);
  ASSERT_TRUE(tcp_send->layout && sock_send->layout);
  EXPECT_TRUE(r.layouts[tcp_send->layout - 1] == rxm.layouts.front());
  EXPECT_EQ(sock_read->layout, sock_send->layout);
  EXPECT_NE(tcp_send->layout, sock_send->layout);
  const UprobeLayout& sock = r.layouts[sock_send->layout - 1];
  std::printf("sockets: %s\n", sock.describe().c_str());
  EXPECT_EQ(sock.provider, "sockets");
  EXPECT_NE(sock.cq_kind, static_cast<uint32_t>(FT_UP_CQ_FMT_NONE));
  for (const int side : {FT_UP_TX, FT_UP_RX}) EXPECT_EQ(sock.ep_hops[side], 2u) << side;
  // One pointer into the endpoint's attributes for both sides, then each side's context.
  EXPECT_EQ(sock.ep_path[FT_UP_TX][0], sock.ep_path[FT_UP_RX][0]);
  EXPECT_NE(sock.ep_path[FT_UP_TX][1], sock.ep_path[FT_UP_RX][1]);
  UprobeLayout back;
  ASSERT_TRUE(parse_layout_line(layout_line(sock), &back));
  EXPECT_TRUE(back == sock);
  EXPECT_EQ(back.provider, "sockets");
}

// udp offers FI_EP_DGRAM endpoints only (asked for RDM, libfabric offers
// udp;ofi_rxd): the helper opens them, with an AV, and finds udp's own data
// path, not the rxd functions an RDM endpoint over udp uses; its CQ and
// endpoint are the utility ones (the same layout as rxm's).
TEST(OptableProbe, FindsUdpDgramEndpoint) {
  const OptableResult r = probe_optables({"udp"}, 20000);
  for (const std::string& n : r.notes) std::printf("note: %s\n", n.c_str());
  // What an application's send, receive, CQ and AV calls reach.
  std::istringstream want(
      "domain.cq_open ep.bind cq.readfrom msg.send msg.recv msg.sendmsg av.insert cm.getname");
  for (std::string w; want >> w;) {
    const std::string table = w.substr(0, w.find('.')), op = w.substr(w.find('.') + 1);
    EXPECT_NE(find_site(r.sites, "udp", table.c_str(), op.c_str()), nullptr) << w;
  }
  const OpSite* insert = find_site(r.sites, "udp", "av", "insert");
  ASSERT_NE(insert, nullptr);
  EXPECT_GE(insert->addrlen, sizeof(sockaddr_in));  // sockaddr_in or _in6: the first info's
  const OptableResult rxd = probe_optables({"udp;ofi_rxd"}, 20000);
  const OpSite* rxd_send = find_site(rxd.sites, "udp;ofi_rxd", "msg", "send");
  ASSERT_NE(rxd_send, nullptr);
  ASSERT_NE(find_site(r.sites, "udp", "msg", "send"), nullptr);
  EXPECT_NE(find_site(r.sites, "udp", "msg", "send")->offset, rxd_send->offset);
  ASSERT_EQ(r.layouts.size(), 1u) << ::testing::PrintToString(r.notes);
  EXPECT_TRUE(r.layouts == probe_optables({"tcp;ofi_rxm"}, 20000).layouts);
}

// A utility provider and its core in one list: said, once.
TEST(OptableProbe, UtilityProviderWithItsCoreIsANote) {
  const OptableResult r = probe_optables({"tcp;ofi_rxm", "tcp"}, 20000);
  size_t said = 0;
  for (const std::string& n : r.notes)
    said += n.find("tcp;ofi_rxm and tcp are probed together") != std::string::npos;
  EXPECT_EQ(said, 1u);
  EXPECT_FALSE(r.sites.empty());
}

// The utility layout the helper learns: tcp;ofi_rxm and shm are both built on
// libfabric's utility CQ and endpoint, so they agree; the four formats' CQs
// hold four different functions of the library; the line round-trips.
TEST(OptableProbe, UtilityLayoutIsSharedAndRoundTrips) {
  const OptableResult r = probe_optables({"tcp;ofi_rxm", "shm"}, 20000);
  ASSERT_EQ(r.layouts.size(), 1u) << ::testing::PrintToString(r.notes);
  const UprobeLayout& l = r.layouts.front();
  for (const OpSite& site : r.sites) EXPECT_EQ(site.layout, 1u) << site.what();
  EXPECT_EQ(l.cq_kind, static_cast<uint32_t>(FT_UP_CQ_FMT_FN));
  EXPECT_EQ(l.ep_hops[FT_UP_TX], 0u);  // the utility endpoint keeps its CQs itself
  EXPECT_EQ(l.ep_hops[FT_UP_RX], 0u);
  EXPECT_NE(l.path.find("libfabric"), std::string::npos) << l.path;
  EXPECT_GE(l.cq_fmt_off, 32u);  // past struct fid_cq
  EXPECT_EQ(l.cq_fmt_off % 8, 0u);
  for (int a = 1; a <= 4; ++a)
    for (int b = a + 1; b <= 4; ++b) EXPECT_NE(l.fmt_fn[a], l.fmt_fn[b]) << a << " " << b;
  EXPECT_NE(l.ep_path[FT_UP_TX][0], l.ep_path[FT_UP_RX][0]);
  UprobeLayout back;
  ASSERT_TRUE(parse_layout_line(layout_line(l), &back));
  EXPECT_TRUE(back == l);
  EXPECT_FALSE(parse_layout_line("L\t1\t2", &back));
}

// A CQ that keeps its format itself (sockets' struct sock_cq: its fi_cq_attr's
// format at +72 in libfabric 1.17): the first 32-bit word past the fid_cq that
// holds each CQ's own format, whatever the half-word beside it (the attr's
// wait_obj) holds; a word that holds the format in three CQs only is not it;
// none: not found.
TEST(OptableProbe, CqFormatWordIsTheFirstEqualToEachFormat) {
  std::vector<uint64_t> w[5];
  for (int fmt = 1; fmt <= 4; ++fmt) {
    w[fmt].assign(kLayoutWords, 0);
    w[fmt][6] = fmt == 4 ? 9 : static_cast<uint64_t>(fmt);  // three of four: no
    w[fmt][9] = static_cast<uint64_t>(fmt) | (static_cast<uint64_t>(fmt % 2) << 32);  // +72: yes
    w[fmt][11] = static_cast<uint64_t>(fmt);  // later: not taken
  }
  UprobeLayout l;
  ASSERT_TRUE(find_cq_format_word(w, &l));
  EXPECT_EQ(l.cq_kind, static_cast<uint32_t>(FT_UP_CQ_FMT_WORD));
  EXPECT_EQ(l.cq_fmt_off, 72u);
  for (int fmt = 1; fmt <= 4; ++fmt) w[fmt][9] = w[fmt][11] = 0;
  EXPECT_FALSE(find_cq_format_word(w, &l));
}

// The element sizes the BPF program multiplies an atomic's count by, against
// the C types libfabric's datatypes name (fi_atomic(3)).
TEST(UprobeStats, AtomicDatatypeSizes) {
  test::expect_each<fi_datatype, uint64_t>(
      ft_up_datatype_size, {{FI_INT8, sizeof(int8_t)},
                            {FI_UINT16, sizeof(uint16_t)},
                            {FI_INT32, sizeof(int32_t)},
                            {FI_UINT64, sizeof(uint64_t)},
                            {FI_FLOAT, sizeof(float)},
                            {FI_DOUBLE, sizeof(double)},
                            {FI_FLOAT_COMPLEX, sizeof(std::complex<float>)},
                            {FI_DOUBLE_COMPLEX, sizeof(std::complex<double>)},
                            {FI_LONG_DOUBLE, sizeof(long double)},
                            {FI_LONG_DOUBLE_COMPLEX, sizeof(std::complex<long double>)},
                            {FI_UINT128, 16},
                            {FI_VOID, 0}});
}

TEST(UprobeStats, Log2Buckets) {
  test::expect_each<uint64_t, uint64_t>(
      uprobe_hist_bucket,
      {{0, 0}, {1, 0}, {2, 1}, {3, 1}, {1023, 9}, {1024, 10}, {~0ULL, FT_UP_HIST - 1}});
}

// A statistics row's size class: 0 bytes alone, then [2^(c-1), 2^c).
TEST(UprobeStats, SizeClasses) {
  test::expect_each<uint64_t, uint64_t>(ft_up_size_class, {{0, 0},
                                                           {1, 1},
                                                           {2, 2},
                                                           {3, 2},
                                                           {4096, 13},
                                                           {4097, 13},
                                                           {8191, 13},
                                                           {8192, 14},
                                                           {~0ULL, 64}});
  for (int b = 0; b < 64; ++b) {
    EXPECT_EQ(ft_up_size_class(1ULL << b), static_cast<uint32_t>(b + 1)) << b;
    if (b > 1) {
      EXPECT_EQ(ft_up_size_class((1ULL << b) - 1), static_cast<uint32_t>(b)) << b;
    }
  }
}

TEST(UprobeStats, QuantilesAndDetail) {
  ft_uprobe_ops r{};
  r.op = static_cast<uint32_t>(OpKind::kTsend);
  r.pending = 1;
  r.s.calls = 12;
  r.s.completions = 10;
  r.s.bytes = 40960;
  r.s.lat_sum_ns = 100000;
  r.s.lat_min_ns = 3000;
  r.s.lat_max_ns = 40000;
  r.s.hist[11] = 9;  // [2048, 4096)
  r.s.hist[15] = 1;  // [32768, 65536)
  EXPECT_EQ(uprobe_hist_quantile(r.s, 0.5), 4096u);
  EXPECT_EQ(uprobe_hist_quantile(r.s, 0.9), 4096u);
  EXPECT_EQ(uprobe_hist_quantile(r.s, 0.99), 65536u);
  r.s.refused = 1;
  r.s.by_order = 10;
  r.ep = 0x55aa00;
  r.peer = 2;
  r.size_class = 13;  // 4096 bytes each
  r.s.eagain = 1;
  EXPECT_EQ(
      uprobe_stats_detail(r),
      "ep=0x55aa00;peer=2;calls=12;refused=1;eagain=1;completions=10;untimed=0;untimed_bytes=0;"
      "by_order=10;bytes=40960;size_class=13;pending=1;unmatched=0;avg_ns=10000;min_ns=3000;"
      "max_ns=40000;p50_le_ns=4096;p99_le_ns=65536");
  r.peer = FT_UP_ADDR_UNSPEC;  // a receive from any source
  EXPECT_EQ(uprobe_stats_detail(r).substr(0, 24), "ep=0x55aa00;peer=any;cal");
  EXPECT_EQ(uprobe_op_name(r.op), "fi_tsend");
  ft_uprobe_ops p{};
  p.op = FT_UP_OP_POLLS;
  p.s.calls = 500;
  p.s.completions = 20;
  p.s.unmatched = 2;
  p.s.early = 1;
  p.s.remote = 3;
  EXPECT_EQ(uprobe_op_name(p.op), "cq_read");
  EXPECT_EQ(uprobe_stats_detail(p), "calls=500;entries=20;unmatched=2;unwalked=0;early=1;remote=3");
  ft_up_stats empty{};
  EXPECT_EQ(uprobe_hist_quantile(empty, 0.5), 0u);
  ft_uprobe_cq q{};
  q.cq = 0x1234;
  q.opened = 5;
  q.polls = 9;
  q.gaps[1] = 7;
  q.gaps[5] = 1;
  q.max_gap_ns = 200000000;
  q.max_gap_end = 77;
  EXPECT_EQ(uprobe_cq_detail(q),
            "cq=0x1234;opened=5;polls=9;gaps0=0;gaps1=7;gaps2=0;gaps3=0;gaps4=0;gaps5=1;"
            "max_gap_ns=200000000;max_gap_end=77");
}

// The log2 without branches (ft_up_log2) against a loop over the bits.
TEST(UprobeStats, Log2IsTheHighestBit) {
  const auto slow = [](uint64_t x) {
    uint32_t b = 0;
    while (x >>= 1) ++b;
    return b;
  };
  uint64_t seed = 1;
  for (int i = 0; i < 100000; ++i) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    const uint64_t x = seed >> (seed % 64);
    ASSERT_EQ(ft_up_log2(x), slow(x)) << x;
  }
  for (int b = 0; b < 64; ++b) {
    EXPECT_EQ(ft_up_log2(1ULL << b), static_cast<uint32_t>(b));
    EXPECT_EQ(ft_up_log2((2ULL << b) - 1), static_cast<uint32_t>(b));
  }
}

}  // namespace
}  // namespace fabtrace
