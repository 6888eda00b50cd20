// Tiny encoding of the initiator's plan (which operation kinds it will issue), sent
// to the target so both agree on what to expect.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ftapp {

std::string encode_kinds(const std::vector<uint16_t>& kinds);
std::vector<uint16_t> decode_kinds(const std::string& s);
bool has_kind(const std::vector<uint16_t>& kinds, uint16_t k);

}  // namespace ftapp
