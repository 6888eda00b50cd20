// The application's phase marks (include/fabtrace.h): fabtrace_mark,
// fabtrace_begin and fabtrace_end land here through preload/api.cpp.
//
// A mark fires its USDT probe (for a `fabtrace record` session) and, when the
// per-op timeline is on, is one append to the thread's timeline chunk. With
// FABTRACE=0 a mark returns at once.
#pragma once

#include <cstdint>

namespace fabtrace {
namespace marks {

void mark(const char* name);
void begin(const char* name);
void end();

}  // namespace marks
}  // namespace fabtrace
