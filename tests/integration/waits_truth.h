// Reading the wait-state analysis of `fabtrace report` next to what the
// traced programs measured themselves (tests/apps/wait_chain.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fabtrace::test {

// wait_chain's own waits of round `round`: rank -> ns.
std::map<int, int64_t> chain_waits(const std::string& output, int round);

// One line of the summary's "root causes of waiting".
struct RootLine {
  int rank = -1;
  double cost_ns = 0;
  uint64_t waits = 0;
  std::map<int, double> by_waiter;  // rank -> ns
  std::string cause;
};
// The section's root lines, in order ("" summary or no section: none).
std::vector<RootLine> root_lines(const std::string& summary);

// "201.2 ms" -> 201200000 (the summary's fmt_ns), -1 when not a duration.
double parse_duration_ns(const std::string& s);

}  // namespace fabtrace::test
