// --uprobes by name (userspace/record/uprobes/uprobe_symbols.*, provider_functions.*):
// fabtrace's table of libfabric's provider functions is described as the
// op-table path describes the same slots, and the two paths are merged and
// checked against each other as record does. The symbols here are made by
// hand (the reader itself: test_elf_symbols.cpp; the whole path on a real
// libfabric: test_uprobes_attach.cpp's Uprobes.ByName*).
#include "userspace/record/uprobes/uprobe_symbols.h"

#include <gtest/gtest.h>
#include <rdma/fabric.h>

#include <set>
#include <string>

#include "bpf/uprobe_ops.h"
#include "userspace/record/uprobes/provider_functions.h"

namespace fabtrace {
namespace {

TEST(UprobeSymbols, EveryTableRowIsASlotTheOpTablePathProbes) {
  std::set<std::string> seen;
  for (const ProviderFunction& f : all_provider_functions()) {
    OpSite s;
    EXPECT_TRUE(describe_site(f.provider, f.table, f.op, &s)) << f.table << "." << f.op;
    EXPECT_TRUE(seen.insert(std::string(f.provider) + " " + f.table + "." + f.op).second)
        << "twice: " << f.provider << " " << f.table << "." << f.op;
    // cq.read of the utility CQ is covered by readfrom (as the op-table path finds).
    EXPECT_FALSE(std::string(f.table) == "cq" && std::string(f.op) == "read");
  }
  for (const char* prov : {"tcp;ofi_rxm", "shm"}) {
    // 2 ops tables of 9, RMA 9, atomic 10, cq 3, and cq_open, bind, getname, insert.
    EXPECT_EQ(provider_functions(prov).size(), 9u * 2 + 9 + 10 + 3 + 4) << prov;
    ProviderAddress a;
    EXPECT_TRUE(provider_address(prov, &a));
  }
  EXPECT_TRUE(provider_functions("cxi").empty());
}

// Symbols for shm's msg table only, at made-up offsets.
LibrarySymbols shm_msg_symbols() {
  LibrarySymbols syms;
  syms.library = "/lib/libfabric.so.1";
  uint64_t off = 0x1000;
  for (const ProviderFunction& f : provider_functions("shm"))
    if (std::string(f.table) == "msg") {
      syms.offsets[f.function].insert(off);
      syms.names[off] = f.function;
      off += 0x100;
    }
  return syms;
}

const OpSite* find(const std::vector<OpSite>& sites, const std::string& table,
                   const std::string& op) {
  for (const OpSite& s : sites)
    if (s.table == table && s.op == op) return &s;
  return nullptr;
}

TEST(UprobeSymbols, ByNameSitesCarryTheSharedDescriptionsAndListWhatIsMissing) {
  const LibrarySymbols syms = shm_msg_symbols();
  std::vector<std::string> notes;
  const std::vector<OpSite> sites = sites_by_name("shm", syms, &notes);
  ASSERT_EQ(sites.size(), 9u);
  const OpSite* send = find(sites, "msg", "send");
  ASSERT_NE(send, nullptr);
  OpSite want;
  ASSERT_TRUE(describe_site("shm", "msg", "send", &want));
  EXPECT_EQ(send->role, want.role);
  EXPECT_EQ(send->op_kind, want.op_kind);
  EXPECT_EQ(send->ctx, want.ctx);
  EXPECT_EQ(send->len, want.len);
  EXPECT_EQ(send->peer, want.peer);
  EXPECT_EQ(send->function, "smr_send");
  EXPECT_EQ(send->path, "/lib/libfabric.so.1");
  EXPECT_EQ(send->what(), "shm msg.send (smr_send)");
  // Every other row is a note, "not attached".
  EXPECT_EQ(notes.size(), provider_functions("shm").size() - 9);
  for (const std::string& n : notes) EXPECT_NE(n.find("not attached"), std::string::npos) << n;
}

TEST(UprobeSymbols, OpTableSitesAreNamedByTheirFunctions) {
  const LibrarySymbols syms = shm_msg_symbols();
  OptableResult r;
  OpSite send;
  ASSERT_TRUE(describe_site("shm", "msg", "send", &send));
  send.path = syms.library;
  send.offset = *syms.offsets.at("smr_send").begin();
  OpSite elsewhere = send;  // a library the symbols are not of
  elsewhere.path = "/other/libfabric.so.1";
  r.sites = {send, elsewhere};
  SymbolOptions o;
  o.providers = {"shm"};
  merge_symbol_sites(o, syms, &r);
  ASSERT_EQ(r.sites.size(), 2u);  // the op tables' sites, not the table's
  EXPECT_EQ(r.sites[0].what(), "shm msg.send (smr_send)");
  EXPECT_EQ(r.sites[1].what(), "shm msg.send");
}

TEST(UprobeSymbols, AProviderTheHelperCouldNotOpenIsAttachedByName) {
  OptableResult r;
  // The helper opened tcp;ofi_rxm only (its send at 0x9000, no symbol there).
  OpSite rxm;
  ASSERT_TRUE(describe_site("tcp;ofi_rxm", "msg", "send", &rxm));
  rxm.path = "/lib/libfabric.so.1";
  rxm.offset = 0x9000;
  r.sites = {rxm};
  SymbolOptions o;
  o.providers = {"tcp;ofi_rxm", "shm"};
  merge_symbol_sites(o, shm_msg_symbols(), &r);
  EXPECT_EQ(r.sites.size(), 1u + 9u);
  EXPECT_EQ(find(r.sites, "msg", "send")->offset, 0x9000u);  // the op table's kept first
  bool shm_send = false;
  for (const OpSite& s : r.sites) shm_send = shm_send || s.function == "smr_send";
  EXPECT_TRUE(shm_send);
  std::string all;
  for (const std::string& n : r.notes) all += n + "\n";
  EXPECT_NE(all.find("shm: 9 of 44 functions found by name: attached by name"), std::string::npos)
      << all;
  EXPECT_NE(all.find("tcp;ofi_rxm: 0 of 44 functions found by name, 0 disagreeing"),
            std::string::npos)
      << all;
}

TEST(UprobeSymbols, ADisagreementIsANoteAndTheOpTableOffsetIsKept) {
  const LibrarySymbols syms = shm_msg_symbols();
  OptableResult r;
  // The op tables: shm's send where its symbol is, its recv elsewhere.
  const uint64_t send_at = *syms.offsets.at("smr_send").begin();
  for (const auto& [op, off] :
       {std::make_pair("send", send_at), std::make_pair("recv", 0x7770ul)}) {
    OpSite s;
    ASSERT_TRUE(describe_site("shm", "msg", op, &s));
    s.path = syms.library;
    s.offset = off;
    r.sites.push_back(s);
  }
  SymbolOptions o;
  o.providers = {"shm"};
  o.by_name = true;
  merge_symbol_sites(o, syms, &r);
  // By name: the table's nine msg sites; recv at the op table's offset.
  EXPECT_EQ(r.sites.size(), 9u);
  EXPECT_EQ(find(r.sites, "msg", "recv")->offset, 0x7770u);
  EXPECT_EQ(find(r.sites, "msg", "send")->function, "smr_send");
  std::string all;
  for (const std::string& n : r.notes) all += n + "\n";
  EXPECT_NE(all.find("shm msg.recv (smr_recv) by name is at +0x1000, the op table's at +0x7770: "
                     "the symbols do not fit the library; the op table's kept"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("1 disagreeing with the op tables: attached by name"), std::string::npos)
      << all;
}

}  // namespace
}  // namespace fabtrace
