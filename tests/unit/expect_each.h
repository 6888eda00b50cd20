// Table-driven checks of a function of one value: a table of {input, expected}
// cases instead of a list of copied EXPECT_EQ lines.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <utility>

namespace fabtrace {
namespace test {

// f(in) == out for each {in, out} of `cases`; a failure names its input.
template <typename In, typename Out, typename F>
void expect_each(F f, std::initializer_list<std::pair<In, Out>> cases) {
  for (const auto& c : cases) EXPECT_EQ(f(c.first), c.second) << "for " << c.first;
}

}  // namespace test
}  // namespace fabtrace
