// Readable strings for endpoint addresses, for link labels in the report: the
// preload's (from the provider's own straddr, and these when it has none) and
// `fabtrace record --uprobes`'s (from the bytes its probes read, printed as
// libfabric's straddr prints them, so that both name a link alike).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fabtrace {

// Sockaddr formats as "ip:port" ("[ip6]:port"); anything else as 0x-hex of its bytes.
std::string format_addr(uint32_t addr_format, const void* addr, size_t len);

// Length of a sockaddr-format address (from its family); 0 for other formats,
// whose length only the provider knows.
size_t sockaddr_len(uint32_t addr_format, const void* addr);

// An address as libfabric's utility straddr (ofi_straddr, what fi_av_straddr
// gives on tcp, rxm, shm, udp, rxd, sockets) prints it: FI_SOCKADDR_IN
// "fi_sockaddr_in://a.b.c.d:port", FI_SOCKADDR_IN6 "fi_sockaddr_in6://[..]:port",
// FI_SOCKADDR by its family, FI_ADDR_STR the string itself. "" for what it
// would refuse (a short or unknown sockaddr) and for the formats not handled
// here (psmx, efa, ...).
std::string fabric_straddr(uint32_t addr_format, const void* addr, size_t len);

// How a provider's straddr prints addresses: as libfabric's utility code does
// (fabric_straddr), or as "ip:port" (sockets' own: format_addr's form).
enum StraddrForm : uint32_t { kStraddrLibfabric = 0, kStraddrPlain = 1 };

// The label the preload gives an address of that format from a provider whose
// straddr prints `form`: the straddr form, format_addr where there is none.
std::string address_label(uint32_t addr_format, const void* addr, size_t len,
                          uint32_t form = kStraddrLibfabric);

}  // namespace fabtrace
