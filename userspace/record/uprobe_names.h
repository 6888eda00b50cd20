// --uprobes: what a row's endpoint and peer are (bpf/uprobe_ops.bpf.c's address
// maps, read when the session stops) and the link labels made from them, as
// the preload would print them (common/addr_format.h): local = the endpoint's
// own address (its getname), remote = the address its peer's fi_addr_t was
// inserted with (the AV insert that gave it out).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>

namespace fabtrace {

// An address as read in the process, with its provider's address format
// (enum fi_addr_format, from the probe site that read it).
struct UprobeAddr {
  std::string bytes;
  uint32_t addr_format = 0;
  uint32_t straddr_form = 0;  // enum StraddrForm: how the provider prints it
};

struct UprobeNames {
  std::map<std::pair<uint32_t, uint64_t>, UprobeAddr> ep_names;  // (pid, endpoint)
  std::map<std::pair<uint32_t, uint64_t>, uint64_t> ep_av;       // (pid, endpoint) -> its AV
  std::map<std::tuple<uint32_t, uint64_t, uint64_t>, UprobeAddr> av_addrs;  // (pid, AV, fi_addr)
};

// The endpoint's address; "pid N ep 0x..." when its getname was not seen (the
// endpoint was named before the session, or never).
std::string uprobe_local_label(uint32_t pid, uint64_t ep, const UprobeNames& names);

// The peer's address: "(any)" for FI_ADDR_UNSPEC, as the preload says; the
// entry of the endpoint's AV, or, the endpoint's AV not known (bound before
// the session), the one address the process inserted under that fi_addr_t;
// "fi_addr#N" (the preload's label for an entry it cannot name) otherwise.
std::string uprobe_remote_label(uint32_t pid, uint64_t ep, uint64_t peer, const UprobeNames& names);

}  // namespace fabtrace
