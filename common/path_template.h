// Output directories that one setting serves for every job, as Nsight Systems
// does: FABTRACE_DIR, `fabtrace run --dir` and `fabtrace record -o` expand
//   %j      the job id (common/job_meta.h: Slurm, Flux, PMIx), "nojob" outside a job
//   %h      the host (the output token of its name, common/rank.h)
//   %p      the pid of the process that expands it
//   %q{VAR} the value of the environment variable VAR (unset or empty: refused)
//   %%      a '%'
// A substituted value is part of one path component: one holding a '/' (so
// "/.." too), or that is "." or "..", is refused. The directories from the
// first expanded component on are the template's own: created when missing
// (kOutputDirMode), never reached through a symbolic link, and used only when
// owned by the effective user. The part before it is the user's choice:
// symbolic links in it are followed, and what is missing of it is created as
// `mkdir -p` would. A directory without '%' is used as it is (it must exist).
#pragma once

#include <string>

#include "common/job_meta.h"

namespace fabtrace {

struct TemplateValues {
  std::string job_id;  // "" -> "nojob"
  std::string host;
  long pid = 0;
  // The environment for %q{VAR}: the variable's value, or nullptr.
  const char* (*getenv)(const char*) = nullptr;
};

// The values of this process (job id from its environment, host, getpid()).
TemplateValues template_values_of_self();

// True when `tmpl` has anything to expand (a '%').
bool is_path_template(const std::string& tmpl);

// Expands `tmpl`. *first_expanded: the offset in *out of the first
// substituted value (std::string::npos when none). False with *error (one
// line) for an unknown %X, an unterminated %q{, an unset variable, or a value
// that is not one component's text.
bool expand_path_template(const std::string& tmpl, const TemplateValues& v, std::string* out,
                          size_t* first_expanded, std::string* error);

// Expands `tmpl` and opens the directory (O_DIRECTORY|O_CLOEXEC), creating
// the template's own components as described above. Returns the fd, with the
// expanded path in *path, or -1 with *error: one line, naming the directory
// that failed when `tmpl` expanded to anything (the caller names `tmpl`).
int open_template_dir(const std::string& tmpl, const TemplateValues& v, std::string* path,
                      std::string* error);

}  // namespace fabtrace
