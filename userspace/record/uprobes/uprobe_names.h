// --uprobes: what a row's endpoint and peer are (bpf/uprobe_ops.bpf.c's address
// maps, read when the session stops) and the link labels made from them, as
// the preload would print them (common/addr_format.h): local = the endpoint's
// own address (its getname), remote = the address its peer's fi_addr_t was
// inserted with (the AV insert that gave it out); a connected (FI_EP_MSG)
// endpoint's remote = its one peer (the info it was opened with, or the
// address it was given to connect to), as the preload names it.
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
  // A passive endpoint's (fi_getname on a fid_pep): the address its
  // connections are accepted on, not an endpoint of any row.
  bool passive = false;
};

// A connected endpoint (bpf/uprobe_ops.h, struct ft_up_conn): its peer and
// its own address as its info said (src_addr); empty bytes: not known.
struct UprobeConn {
  UprobeAddr peer, local;
};

struct UprobeNames {
  std::map<std::pair<uint32_t, uint64_t>, UprobeAddr> ep_names;  // (pid, endpoint)
  std::map<std::pair<uint32_t, uint64_t>, UprobeConn> ep_conns;  // (pid, MSG endpoint)
  std::map<std::pair<uint32_t, uint64_t>, uint64_t> ep_av;       // (pid, endpoint) -> its AV
  std::map<std::tuple<uint32_t, uint64_t, uint64_t>, UprobeAddr> av_addrs;  // (pid, AV, fi_addr)
};

// The endpoint's address: its getname; for a connected endpoint (printed as
// the preload prints it, "ip:port") without one, its info's src_addr when that
// has a port, or, a src_addr without one (an accepted connection's info on
// tcp), the one name the process's passive endpoints were given on that IP
// (the listener that accepted it); "pid N ep 0x..." when none of these was
// seen (the endpoint was named before the session, or never: a connecting
// endpoint whose program does not ask its name).
std::string uprobe_local_label(uint32_t pid, uint64_t ep, const UprobeNames& names);

// The peer's address, as the preload says it: a connected endpoint's one peer
// whatever `peer` is ("(connected)" when that is not known); for the others
// "(any)" for FI_ADDR_UNSPEC; the entry of the endpoint's AV, or, the
// endpoint's AV not known (bound before the session), the one address the
// process inserted under that fi_addr_t; "fi_addr#N" (the preload's label for
// an entry it cannot name) otherwise.
std::string uprobe_remote_label(uint32_t pid, uint64_t ep, uint64_t peer, const UprobeNames& names);

}  // namespace fabtrace
