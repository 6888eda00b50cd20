#include "plan.h"

#include <algorithm>
#include <cstdlib>

#include "oob.h"

namespace ftapp {

std::string encode_kinds(const std::vector<uint16_t>& kinds) {
  std::string o;
  for (uint16_t k : kinds) {
    if (!o.empty()) o += ",";
    o += std::to_string(k);
  }
  return o;
}

std::vector<uint16_t> decode_kinds(const std::string& s) {
  std::vector<uint16_t> v;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(pos, end - pos);
    char* stop = nullptr;
    unsigned long k = std::strtoul(item.c_str(), &stop, 10);
    if (item.empty() || *stop != '\0' || k > 0xffff) throw FamilyError("bad plan from peer");
    v.push_back(static_cast<uint16_t>(k));
    pos = end + 1;
  }
  return v;
}

bool has_kind(const std::vector<uint16_t>& kinds, uint16_t k) {
  return std::find(kinds.begin(), kinds.end(), k) != kinds.end();
}

}  // namespace ftapp
