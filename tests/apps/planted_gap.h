// A planted gap: the calling thread off CPU for a known time, asleep or
// blocked in read(2) on a pipe that another thread writes to after that
// long (ft_app --gap KIND:MS).
#pragma once

#include <cstddef>
#include <string>

namespace ftapp {

// kind "sleep" or "pipe" (options.cpp accepts nothing else).
void planted_gap(const std::string& kind, size_t ms);

}  // namespace ftapp
