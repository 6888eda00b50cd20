// Reading FABTRACE_* settings. A bad value never stops the traced program: it
// gets one warning line on stderr naming the variable, the bad value and the
// default that is used instead.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

namespace fabtrace {

// "[fabtrace] " + printf-style message + newline, written to stderr with one
// write(2). Control characters in the message (a value holding a newline or an
// ESC) are escaped (common/printable.h): a message is always one line.
void log_line(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// Unset or empty -> def. Accepts 1/0, on/off, yes/no, true/false (any case).
bool env_bool(const char* name, bool def);

// Unset or empty -> def. Decimal integer with an optional binary suffix
// (k/K = 1024, m/M = 1024^2, g/G = 1024^3). Outside [lo, hi] or unparsable -> def + warning.
uint64_t env_u64(const char* name, uint64_t def, uint64_t lo = 0, uint64_t hi = UINT64_MAX);

// The value without surrounding white space; unset or only white space -> "".
std::string env_trimmed(const char* name);

// Unset -> def; otherwise the raw value.
std::string env_str(const char* name, const char* def = "");

// One of a fixed set of words (case-sensitive); anything else -> def + warning.
std::string env_choice(const char* name, std::initializer_list<const char*> allowed,
                       const char* def);

}  // namespace fabtrace
