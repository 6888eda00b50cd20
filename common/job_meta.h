// Which job a process belongs to, as each rank's report records it (and the
// job report's summary opens with): the traced program's command line, the
// job and step ids of the launcher (Slurm, Flux or PMIx: Open MPI's mpirun,
// PRRTE) and Slurm's node list, when the process started, and the libfabric
// it ran with. So a directory holding the reports of several jobs can be told
// apart.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace fabtrace {

// JobMeta's fields, listed once (Darshan's style): the struct below, the JSON
// report's writer (common/report_writer.cpp), its reader (userspace/report/
// report_reader.cpp) and the byte codec (userspace/report/
// parsed_report_codec.cpp) each expand this list, in this order (the JSON's).
// X(name, kind): kind `always` is a string written even when empty, `if_set` a
// string left out when empty, `wall_ns` a CLOCK_REALTIME time in ns.
#define FABTRACE_JOB_META_FIELDS(X)                                                               \
  X(command, always)        /* the command line, arguments joined by blanks (kMaxCommandBytes) */ \
  X(launcher, if_set)       /* "slurm", "flux", "pmix", or "" when none is seen */                \
  X(job_id, if_set)         /* SLURM_JOB_ID, FLUX_JOB_ID, PMIX_NAMESPACE */                       \
  X(step_id, if_set)        /* SLURM_STEP_ID ("" elsewhere) */                                    \
  X(node_list, if_set)      /* SLURM_STEP_NODELIST, else SLURM_JOB_NODELIST: "n[01-04]" */        \
  X(start_wall_ns, wall_ns) /* the process's start (0: unknown) */                                \
  X(libfabric, always)      /* "1.17": fi_version() of the libfabric it ran with */               \
  X(run_id, if_set)         /* FABTRACE_RUN_ID: set by `fabtrace run` for its process tree */

// The kinds of FABTRACE_JOB_META_FIELDS, as types to overload on.
namespace job_field {
struct always {
  using type = std::string;
};
struct if_set {
  using type = std::string;
};
struct wall_ns {
  using type = uint64_t;
};
}  // namespace job_field

struct JobMeta {
#define FABTRACE_JOB_META_MEMBER(name, kind) job_field::kind::type name{};
  FABTRACE_JOB_META_FIELDS(FABTRACE_JOB_META_MEMBER)
#undef FABTRACE_JOB_META_MEMBER
};

// Bounds of what is kept from a process: longer text is cut (the command
// line ends with "..." then).
constexpr size_t kMaxCommandBytes = 1024;
constexpr size_t kMaxJobIdBytes = 128;
// Slurm's compressed hostlist, as Slurm gives it ("n[0001-0512,0600]"); a
// longer one ends with "..." (a cut list must not read as a whole one).
constexpr size_t kMaxNodeListBytes = 1024;

// The variable `fabtrace run` sets for the processes it starts; each of them
// records it, so that the run prints only its own process tree's reports.
constexpr const char* kRunIdVariable = "FABTRACE_RUN_ID";

// The launcher's ids from an environment: `get` returns a variable's value or
// nullptr (getenv, or a lookup in another process's /proc/PID/environ).
template <typename Get>
void job_ids_from(Get get, JobMeta* m);

// This process's JobMeta from its environment and /proc/self; libfabric is
// left for the caller (common/version.h: libfabric_version()).
JobMeta job_meta_of_self();

// A command line from /proc/PID/cmdline's bytes (arguments NUL-separated):
// joined by blanks, control characters escaped (common/printable.h), cut at
// kMaxCommandBytes.
std::string command_line_of(const std::string& cmdline_bytes);

// The start of process `pid` (0: this process) in CLOCK_REALTIME ns, from
// /proc/PID/stat's start time; 0 when it cannot be read.
uint64_t process_start_wall_ns(pid_t pid);

// "slurm job 1234 step 0 on n[01-04]", "pmix job 1681457153", "" when none.
std::string job_text(const JobMeta& m);

// Implementation of the template above.
template <typename Get>
void job_ids_from(Get get, JobMeta* m) {
  const auto cut = [](const char* v) {
    std::string s(v);
    if (s.size() > kMaxJobIdBytes) s.resize(kMaxJobIdBytes);
    return s;
  };
  if (const char* j = get("SLURM_JOB_ID"); j && *j) {
    m->launcher = "slurm";
    m->job_id = cut(j);
    if (const char* s = get("SLURM_STEP_ID"); s && *s) m->step_id = cut(s);
    const char* n = get("SLURM_STEP_NODELIST");
    if (!n || !*n) n = get("SLURM_JOB_NODELIST");
    if (n && *n) {
      m->node_list = n;
      if (m->node_list.size() > kMaxNodeListBytes) {
        m->node_list.resize(kMaxNodeListBytes - 3);
        m->node_list += "...";
      }
    }
  } else if (const char* f = get("FLUX_JOB_ID"); f && *f) {
    m->launcher = "flux";
    m->job_id = cut(f);
  } else if (const char* p = get("PMIX_NAMESPACE"); p && *p) {
    m->launcher = "pmix";
    m->job_id = cut(p);
  }
  if (const char* r = get(kRunIdVariable); r && *r) m->run_id = cut(r);
}

}  // namespace fabtrace
