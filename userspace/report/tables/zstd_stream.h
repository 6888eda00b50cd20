// A stdio stream whose bytes go to a file descriptor as one zstd frame, so
// that the table writers (tables.h), which write to a FILE*, write a
// compressed table without a second copy of it: links.csv.zst of a job of a
// million link rows (a 192 MB CSV) is written as it is formatted.
#pragma once

#include <cstdio>
#include <string>

namespace fabtrace::report {

// Level 1: zstd's fastest of the standard levels; on the links table it
// still makes the file several times smaller, for a fraction of the time
// formatting the rows takes.
constexpr int kZstdLevel = 1;

// A stream writing to fd (left open: the caller owns it) through a zstd
// compressor. fclose() ends the frame and writes its tail; its result (0, or
// EOF with errno) says whether every byte reached fd. nullptr with *error when
// the compressor cannot be made.
std::FILE* open_zstd_stream(int fd, int level, std::string* error);

}  // namespace fabtrace::report
