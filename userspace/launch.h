// Starting the traced command (`fabtrace run`, `fabtrace record -- cmd`): where
// the preload library is, and a spawn that runs no code of ours in the child
// (posix_spawn with an environment built beforehand), safe while the collector's
// threads run.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace fabtrace {

// FABTRACE_PRELOAD, else libfabtrace.so.<major> in the install's lib directory
// or the build tree's preload/, relative to this executable; "" when none is
// found.
std::string find_preload();

// The output directory of `fabtrace run` / `fabtrace record` from DIR as the
// user gave it: a template (common/path_template.h) is expanded here (%p: this
// process) with its own directories created safely; a plain DIR is created
// when missing (one level). Returns the path, or "" with *error (one line).
std::string prepare_output_dir(const std::string& dir, std::string* error);

// Starts argv[0] (searched in PATH) with the current environment plus `set`
// (replacing variables of the same name). Returns the pid, or -1 with a message
// in *error.
pid_t launch(const std::vector<std::string>& argv,
             const std::vector<std::pair<std::string, std::string>>& set, std::string* error);

// The exit code of a finished child (128 + signal when killed).
int exit_code_of(int wait_status);

}  // namespace fabtrace
