// Decimal numbers as fabtrace reads them from its users (command-line flags,
// FABTRACE_* settings): digits only, so no sign (strtoull takes "-1" as
// 2^64-1), no blank, no base prefix (strtoull with base 0 reads "010" as 8),
// and no overflow.
#pragma once

#include <cstdint>
#include <string>

namespace fabtrace {

// The digits from b (at least one) up to the first non-digit or e; *stop is
// where they end. False for no digit or a value past UINT64_MAX.
bool parse_digits(const char* b, const char* e, uint64_t* out, const char** stop);

// The whole of `s` is a decimal number.
bool parse_decimal(const std::string& s, uint64_t* out);

}  // namespace fabtrace
