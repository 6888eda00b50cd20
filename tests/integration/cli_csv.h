// The CSV that the CLI's exports print (`fabtrace export ... --csv`), read back
// by the tests.
#pragma once

#include <string>
#include <vector>

namespace fabtrace::test {

// The data lines of a CLI's CSV output: those after its header line (the first
// that starts with `header`), but for empty ones and '#' notes. *found says
// whether the header was there.
std::vector<std::string> csv_data_lines(const std::string& text, const std::string& header,
                                        bool* found = nullptr);

}  // namespace fabtrace::test
