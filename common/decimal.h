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

// A size in bytes: a decimal number, then optionally K, M, G or T (powers of
// 1024), each optionally followed by "iB" or "B" ("4096", "512M", "1GiB",
// "2GB"; no fraction, no sign, no blank). False for anything else or a value
// past UINT64_MAX.
bool parse_byte_size(const std::string& s, uint64_t* out);
// The other way: "1 GiB", "512 MiB", "1.5 GiB", "4097 B".
std::string byte_size_text(uint64_t bytes);

}  // namespace fabtrace
