// Text from files, the environment or the network shown on a terminal or in a
// one-line message: control characters (newline, ESC, BEL, DEL, C1 codes) are
// written as escapes, so a value can neither split a line nor drive the
// terminal. Other bytes (UTF-8 names) pass unchanged.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace fabtrace {

// "\n", "\t", "\r", and "\xNN" for the other control bytes. Backslashes stay
// as they are: the result is for reading, not for parsing back.
std::string printable(std::string_view s);

// The same into a fixed buffer (no allocation: the preload's log path). Writes
// at most cap - 1 bytes and a NUL; returns the bytes written. An escape that
// does not fit whole is left out.
size_t printable_into(char* out, size_t cap, const char* in, size_t len);

}  // namespace fabtrace
