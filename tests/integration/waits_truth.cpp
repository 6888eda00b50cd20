#include "tests/integration/waits_truth.h"

#include <algorithm>
#include <regex>
#include <sstream>

namespace fabtrace::test {

std::map<int, int64_t> chain_waits(const std::string& output, int round) {
  std::map<int, int64_t> out;
  const std::regex re("^wait round=(\\d+) rank=(\\d+) on=\\d+ ns=(\\d+)$");
  std::istringstream in(output);
  std::string line;
  std::smatch m;
  while (std::getline(in, line))
    if (std::regex_match(line, m, re) && std::stoi(m[1]) == round)
      out[std::stoi(m[2])] = std::stoll(m[3]);
  return out;
}

double parse_duration_ns(const std::string& s) {
  std::istringstream in(s);
  double v = 0;
  std::string unit;
  if (!(in >> v >> unit)) return -1;
  if (unit == "ns") return v;
  if (unit == "us") return v * 1e3;
  if (unit == "ms") return v * 1e6;
  if (unit == "s") return v * 1e9;
  return -1;
}

std::vector<RootLine> root_lines(const std::string& summary) {
  std::vector<RootLine> out;
  std::istringstream in(summary);
  std::string line;
  bool in_section = false;
  // "  host r3  cost 603.5 ms in 3 waits (host r2 201.2 ms, host r1 ...): cause"
  const std::regex re(
      "^  \\S+ r(\\d+)  cost ([0-9.]+ [a-z]+) in ([0-9,]+) waits? \\((.*?)\\): (.*)$");
  const std::regex who("^\\S+ r(\\d+) ([0-9.]+ [a-z]+)$");
  std::smatch m, w;
  while (std::getline(in, line)) {
    if (line.rfind("root causes of waiting", 0) == 0) {
      in_section = true;
      continue;
    }
    if (!in_section) continue;
    if (line.empty() || line[0] != ' ') break;
    if (!std::regex_match(line, m, re)) continue;
    RootLine r;
    r.rank = std::stoi(m[1]);
    r.cost_ns = parse_duration_ns(m[2]);
    std::string n = m[3];
    n.erase(std::remove(n.begin(), n.end(), ','), n.end());
    r.waits = std::stoull(n);
    r.cause = m[5];
    std::string list = m[4];
    size_t at = 0;
    while (at <= list.size()) {
      const size_t comma = list.find(", ", at);
      const std::string item =
          list.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
      if (std::regex_match(item, w, who)) r.by_waiter[std::stoi(w[1])] = parse_duration_ns(w[2]);
      if (comma == std::string::npos) break;
      at = comma + 2;
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace fabtrace::test
