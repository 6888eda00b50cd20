#include "common/addr_format.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <sys/socket.h>

#include <cstdio>

namespace fabtrace {

std::string format_addr(uint32_t addr_format, const void* addr, size_t len) {
  if (!addr || !len) return "?";
  const auto* sa = static_cast<const struct sockaddr*>(addr);
  const bool sock =
      addr_format == FI_SOCKADDR || addr_format == FI_SOCKADDR_IN || addr_format == FI_SOCKADDR_IN6;
  char ip[INET6_ADDRSTRLEN] = {};
  char out[INET6_ADDRSTRLEN + 16];
  if (sock && len >= sizeof(sockaddr_in) && sa->sa_family == AF_INET) {
    const auto* in = static_cast<const struct sockaddr_in*>(addr);
    inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
    std::snprintf(out, sizeof(out), "%s:%u", ip, ntohs(in->sin_port));
    return out;
  }
  if (sock && len >= sizeof(sockaddr_in6) && sa->sa_family == AF_INET6) {
    const auto* in6 = static_cast<const struct sockaddr_in6*>(addr);
    inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
    std::snprintf(out, sizeof(out), "[%s]:%u", ip, ntohs(in6->sin6_port));
    return out;
  }
  std::string s = "0x";
  const auto* p = static_cast<const unsigned char*>(addr);
  static const char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < len && i < 64; ++i) {
    s += kHex[p[i] >> 4];
    s += kHex[p[i] & 15];
  }
  return s;
}

std::string fabric_straddr(uint32_t addr_format, const void* addr, size_t len) {
  if (!addr || !len) return "";
  const auto* sa = static_cast<const struct sockaddr*>(addr);
  if (addr_format == FI_ADDR_STR) {
    const auto* p = static_cast<const char*>(addr);
    size_t n = 0;
    while (n < len && p[n]) ++n;
    return std::string(p, n);
  }
  if (len < sizeof(sa->sa_family)) return "";
  if (addr_format == FI_SOCKADDR)
    addr_format = sa->sa_family == AF_INET    ? FI_SOCKADDR_IN
                  : sa->sa_family == AF_INET6 ? FI_SOCKADDR_IN6
                                              : FI_FORMAT_UNSPEC;
  // ofi_straddr hands the address to inet_ntop with its own family field: one
  // of another family is refused there. The rest is format_addr's "ip:port".
  const bool in4 = addr_format == FI_SOCKADDR_IN && sa->sa_family == AF_INET;
  const bool in6 = addr_format == FI_SOCKADDR_IN6 && sa->sa_family == AF_INET6;
  if (!(in4 || in6) || len < sockaddr_len(addr_format, addr)) return "";
  return (in4 ? "fi_sockaddr_in://" : "fi_sockaddr_in6://") + format_addr(addr_format, addr, len);
}

std::string address_label(uint32_t addr_format, const void* addr, size_t len, uint32_t form) {
  std::string s = form == kStraddrPlain ? "" : fabric_straddr(addr_format, addr, len);
  return s.empty() ? format_addr(addr_format, addr, len) : s;
}

size_t sockaddr_len(uint32_t addr_format, const void* addr) {
  if (!addr) return 0;
  if (addr_format != FI_SOCKADDR && addr_format != FI_SOCKADDR_IN && addr_format != FI_SOCKADDR_IN6)
    return 0;
  switch (static_cast<const struct sockaddr*>(addr)->sa_family) {
    case AF_INET:
      return sizeof(struct sockaddr_in);
    case AF_INET6:
      return sizeof(struct sockaddr_in6);
    default:
      return 0;
  }
}

}  // namespace fabtrace
