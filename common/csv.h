// CSV text (RFC 4180), the one definition every table and export writes with.
#pragma once

#include <string>

namespace fabtrace {

// A CSV field, quoted when it holds a comma, a quote or a line break (quotes
// inside are doubled).
std::string csv_quote(const std::string& s);

}  // namespace fabtrace
