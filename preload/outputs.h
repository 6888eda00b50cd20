// Where this process's files go and what they are called. FABTRACE_DIR is
// checked once, on the first output: a directory that cannot be used gets one
// line and every output falls back (the text report to stderr, no files), so a
// bad setting costs each rank one message, not one per file.
#pragma once

#include <cstdio>
#include <string>

#include "common/output_names.h"

namespace fabtrace {

// The host as it appears in output names and inside the files (the same
// token everywhere: output_token of gethostname()).
std::string output_host();

// Where a process's outputs go: FABTRACE_DIR as configured (`to_stderr`:
// FABTRACE_DIR=stderr, no files) and the rank's token in the names.
struct OutputPlace {
  std::string dir;
  bool to_stderr = false;
  std::string rank;
};

// "<dir>/<name>" for this process's output of that kind
// (common/output_names.h: "<prefix>.<host>.r<rank>.p<pid>.<ext>"); empty when no
// file is written (FABTRACE_DIR=stderr, or a directory that cannot be used,
// which has been said once: the directory is checked on the first call).
std::string output_path(OutputKind kind, const OutputPlace& where);

// Creates the new file at `path` (common/safe_output.h: never through a
// symlink, never over an existing file). nullptr after one line naming it and
// what happened instead (`instead`, e.g. "the report goes to stderr").
std::FILE* create_output(const std::string& path, const char* instead);

// Flushes and closes an output made by create_output. False when anything
// written to it was lost (a full disk, a quota), with the reason in *why.
bool close_output(std::FILE* f, std::string* why);

}  // namespace fabtrace
