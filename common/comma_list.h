// Comma-separated lists, as the NIC counter settings (FABTRACE_NIC_DEV,
// FABTRACE_NIC_COUNTERS) and the counters CSV's lines hold them.
#pragma once

#include <string>
#include <vector>

namespace fabtrace {

// `s` without leading and trailing blanks (space, tab, CR, LF).
std::string trim_blanks(const std::string& s);
// The items of "a, b,,c": blanks trimmed, empty items dropped.
std::vector<std::string> split_commas(const std::string& s);
// The items joined with commas.
std::string join_commas(const std::vector<std::string>& v);

}  // namespace fabtrace
