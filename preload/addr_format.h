// Readable strings for endpoint addresses, for link labels in the report.
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

}  // namespace fabtrace
