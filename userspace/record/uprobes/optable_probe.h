// Where libfabric's data path is, for `fabtrace record --uprobes`: the provider
// functions an application reaches through the op tables (fi_send ->
// ep->msg->send, fi_cq_read -> cq->ops->read, fi_cq_open ->
// domain->ops->cq_open, fi_ep_bind -> ep->fid.ops->bind, fi_av_insert -> av->ops->insert,
// fi_getname -> ep->cm->getname; a MSG endpoint's fi_endpoint ->
// domain->ops->endpoint, fi_connect -> ep->cm->connect, and a passive
// endpoint's fi_getname -> pep->cm->getname) are not exported, and distribution builds
// are stripped, so they are found the way an application finds them: open the provider from the
// same library file (fi_getinfo with the provider's name, fabric, domain, AV, CQ, RDM (MSG, DGRAM)
// endpoint with msg and tagged caps, and again with RMA and atomic caps, fi_enable: providers may
// install their real tables only then), read the table pointers, and turn each into (library file,
// file offset) through the ELF program headers of the object that holds it. The offsets do not
// depend on where a process loads the library, so one probe per file covers every process that maps
// it.
//
// Providers choose tables by attributes; each provider is opened once per
// threading level an application commonly asks for, and the union is kept.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bpf/uprobe_ops.h"
#include "common/op_kinds.h"

struct fid_cq;  // rdma/fi_eq.h
struct fid_ep;  // rdma/fi_endpoint.h

namespace fabtrace {

// One probed function.
// A name site's straddr form before its function is seen with an AV.
inline constexpr uint32_t kStraddrUnknown = 0xff;

struct OpSite {
  std::string provider;  // "tcp;ofi_rxm" (several: "tcp;ofi_rxm,shm")
  std::string table;     // "msg", "tagged", "cq", "domain", "ep", "av", "cm", "pep"
  std::string op;        // the table's field: "send", "recv", "read", "cq_open", ...
  uint32_t role = 0;     // enum ft_up_role (bpf/uprobe_ops.h)
  uint32_t op_kind = 0;  // OpKind (common/op_kinds.h), ops only
  uint32_t ctx = 0;      // enum ft_up_ctx
  uint32_t len = 0;      // enum ft_up_len
  uint32_t peer = 0;     // FT_UP_PEER_*: where an op's fi_addr_t is
  // AV insert, getname and connect sites: the provider's address format (enum
  // fi_addr_format: how the collector prints the addresses) and length (an
  // AV insert's stride through its addresses; 0 for FI_ADDR_STR's strings).
  uint32_t addr_format = 0;
  uint32_t addrlen = 0;
  // How the provider's straddr prints its addresses (enum StraddrForm,
  // common/addr_format.h), told from its output for the helper's own address.
  uint32_t straddr_form = 0;
  std::string path;      // the library file that holds it
  uint64_t offset = 0;   // file offset of its first instruction
  std::string function;  // its symbol, where the library's symbols are known
  // Its provider's layout (OptableResult::layouts' index + 1; 0: none): how
  // the CQs and endpoints its process opened before the session are learnt.
  uint32_t layout = 0;

  // "tcp;ofi_rxm msg.send" ("tcp;ofi_rxm msg.send (rxm_send)" with its symbol):
  // how record and the kernel log name the site.
  std::string what() const {
    return provider + " " + table + "." + op + (function.empty() ? "" : " (" + function + ")");
  }
  // The providers whose tables hold it (`provider` split at its commas), and
  // whether `prov` is one of them.
  std::vector<std::string> providers() const;
  bool has_provider(const std::string& prov) const;
};

// A site without its place (path, offset).
OpSite op_site(const std::string& provider, const std::string& table, const std::string& op,
               uint32_t role, OpKind kind, uint32_t ctx = 0, uint32_t len = 0, uint32_t peer = 0);

// The same with the role, op kind and context, length and peer places of a
// (table, op) fabtrace probes: the one description the op-table and the
// by-name paths share. False for any other (table, op).
bool describe_site(const std::string& provider, const std::string& table, const std::string& op,
                   OpSite* out);

// A PT_LOAD program header: what the mapping arithmetic needs.
struct ElfLoad {
  uint64_t vaddr = 0, memsz = 0, offset = 0;
};

// The file offset of `addr` in an object loaded with bias `bias` (dlpi_addr)
// whose PT_LOADs are `loads`: addr - bias - p_vaddr + p_offset of the segment
// that holds it. False when no segment holds it.
bool file_offset_in(uint64_t addr, uint64_t bias, const std::vector<ElfLoad>& loads,
                    uint64_t* offset);

// The same for an address of this process (dl_iterate_phdr): the object's file
// (the executable's real path for the main program) and the offset.
bool code_location(const void* addr, std::string* path, uint64_t* offset);

// The real path of an object's file (this executable's for "").
std::string real_path(const std::string& p);

// A function pointer as the code address it is.
template <typename F>
const void* fn_ptr(F f) {
  return reinterpret_cast<const void*>(f);
}

// The real path of the libfabric file this process opens (dlopen), or empty.
std::string fabric_library_path();

// "+0x1a2b": how record names a file offset (a probe's point, a symbol's place).
std::string hex_offset(uint64_t offset);

// Where to put the uprobe for a function that starts at `offset` of `path`:
// past a leading endbr64 (f3 0f 1e fa), which the kernel would single-step
// (8-10 us a hit here, against about 1 us for the instruction after it). The
// arguments and the stack are the same there.
uint64_t probe_offset(const std::string& path, uint64_t offset);

// The arguments an op site's programs read (bit n: argument n): its endpoint,
// and where its context, flags, length, datatype and peer are (bpf/uprobe_ops.h).
uint32_t op_args_read(const OpSite& site);

struct UprobeLayout;

// Opens provider `prov` in this process as an application would and appends
// the op-table functions it uses: once, with msg, tagged, RMA and atomic caps
// (without the last two where the provider offers none), an `ep_type`
// endpoint (FI_EP_RDM and FI_EP_DGRAM with an AV, FI_EP_MSG with an EQ) and `threading` (an
// enum fi_threading value). False with *why when the provider cannot be
// opened so here. A CQ read that calls the CQ's readfrom through the op table
// is left out (readfrom's probe sees it), with a note. With `layout`, the
// utility layout is learnt from the same objects (empty path when not found).
bool probe_provider_here(const std::string& prov, int threading, int ep_type,
                         std::vector<OpSite>* out, std::string* why,
                         std::vector<std::string>* notes = nullptr, UprobeLayout* layout = nullptr);
// "FI_EP_MSG", "FI_EP_RDM" or "FI_EP_DGRAM", for notes.
const char* ep_type_name(int ep_type);

// Sites that share a function: one per (path, offset). Slots that name the same
// function for different op kinds (a provider's fi_no_* stub in several
// slots) cannot be told apart: dropped, with a note.
std::vector<OpSite> dedupe_sites(const std::vector<OpSite>& in, std::vector<std::string>* notes);

// Where a provider's CQ and endpoint keep what the BPF programs need to pair
// the completions of a CQ opened before the session (bpf/uprobe_ops.h, struct
// ft_up_layout): the CQ's format, as a per-format function at an offset of the
// CQ (each format's function as a file offset of `path`: the utility CQ's
// read_entry, sockets' report_completion) or else as a 32-bit word equal to
// the format (sockets' fi_cq_attr); and the endpoint's transmit and receive CQ
// pointers, at an offset of the endpoint or reached through up to
// FT_UP_EP_HOPS_MAX pointers (sockets: ep->attr->tx_ctx->comp.send_cq).
// probe_provider_here finds it by comparing the memory of one CQ of each
// format (FI_CQ_FORMAT_CONTEXT .. TAGGED) and of an endpoint bound to two of
// them (transmit, receive). Empty path: not known.
struct UprobeLayout {
  std::string provider;  // whose (not compared: providers may share one)
  std::string path;      // the library of the provider's CQ read
  uint32_t cq_kind = 0;  // enum ft_up_cq_fmt
  uint64_t cq_fmt_off = 0;
  uint64_t fmt_fn[5] = {};  // [enum fi_cq_format], 1..4 (FT_UP_CQ_FMT_FN)
  uint32_t ep_hops[2] = {};
  uint64_t ep_path[2][FT_UP_EP_HOPS_MAX + 1] = {};  // [side]: offsets, the CQ's last
  bool operator==(const UprobeLayout& o) const;
  // "CQ format function at +N, endpoint CQs at +A and +B->+C": for record's notes.
  std::string describe() const;
};

// An object's fields the layout is searched in (1 KiB).
constexpr size_t kLayoutWords = 128;

// The CQ's format kept as itself (FT_UP_CQ_FMT_WORD): in the first
// kLayoutWords words of one CQ of each format ([enum fi_cq_format], 1..4),
// past the fid_cq, the first 32-bit word equal to the CQ's format in all four.
// The fallback where no per-format function is found.
bool find_cq_format_word(const std::vector<uint64_t> (&w)[5], UprobeLayout* l);

// The layout from one CQ of each format ([enum fi_cq_format], 1..4) and an
// endpoint whose transmit side is bound to cq[FI_CQ_FORMAT_CONTEXT] and
// receive side to cq[FI_CQ_FORMAT_TAGGED]; false with *why naming the part not
// found (optable_layout.cpp).
bool find_layout(fid_cq* const (&cq)[5], fid_ep* ep, UprobeLayout* out, std::string* why);

// Whether cq->ops->read reaches cq->ops->readfrom through the op table (then
// readfrom's probe sees every read).
bool read_calls_readfrom(fid_cq* cq);

// The pipe's line for a layout ("L\t<provider>\t<numbers>\t<path>") and its reader.
std::string layout_line(const UprobeLayout& l);
bool parse_layout_line(const std::string& line, UprobeLayout* l);

struct OptableResult {
  std::vector<OpSite> sites;       // deduplicated
  std::vector<std::string> notes;  // providers not available, shared stubs, ...
  // The providers' distinct layouts (at most FT_UP_MAX_LAYOUTS), which each
  // site's `layout` indexes.
  std::vector<UprobeLayout> layouts;
  std::string library;  // the libfabric file the helper opened, or empty
};

// Runs probe_provider_here for every provider, endpoint type and threading variant in a
// forked child (the providers' threads, sockets and shared memory stay there
// and go with it), and reads the sites back over a pipe. Call it while the
// caller is single-threaded. The child is killed after timeout_ms.
OptableResult probe_optables(const std::vector<std::string>& providers, int timeout_ms);

// The pipe's line format (exposed for the tests).
std::string site_line(const OpSite& s);
bool parse_site_line(const std::string& line, OpSite* s);

}  // namespace fabtrace
