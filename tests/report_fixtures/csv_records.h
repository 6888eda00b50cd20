// Reading back the CSV tables and exports that fabtrace writes (common/csv.h
// writes them), for the tests of both binaries.
#pragma once

#include <string>
#include <vector>

namespace fabtrace::test {

// RFC 4180 records (quoted fields may hold commas, quotes and line breaks).
std::vector<std::vector<std::string>> parse_csv(const std::string& text);

}  // namespace fabtrace::test
