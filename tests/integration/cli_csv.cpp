#include "tests/integration/cli_csv.h"

#include <sstream>

namespace fabtrace::test {

std::vector<std::string> csv_data_lines(const std::string& text, const std::string& header,
                                        bool* found) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  bool seen = false;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (seen)
      out.push_back(line);
    else
      seen = line.rfind(header, 0) == 0;
  }
  if (found) *found = seen;
  return out;
}

}  // namespace fabtrace::test
