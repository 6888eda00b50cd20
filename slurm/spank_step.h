/* What the SPANK plugin's files share: the step on this node, a child's
 * defaults, and the report (spank_report.c), hidden: slurmstepd sees only the
 * plugin's slurm_spank_* entry points. */
#ifndef FABTRACE_SPANK_STEP_H
#define FABTRACE_SPANK_STEP_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>
#include <unistd.h>

#define FT_HIDDEN __attribute__((visibility("hidden")))

/* The step's directory on this node, held open by root. */
struct ft_step {
  int fd;     /* its descriptor: files are made relative to it */
  char *dir;  /* its path, for messages and the report's argument */
  char *name; /* "<jobid>.<stepid>" */
  uid_t uid;  /* the job's user */
  gid_t gid;
};

/* A child of slurmstepd, before its exec: a session of its own (the step's
 * signals to its tasks never reach it), no signal blocked or caught. */
static inline void ft_child_defaults(void) {
  setsid();
  sigset_t all;
  sigemptyset(&all);
  sigprocmask(SIG_SETMASK, &all, NULL);
  for (int s = 1; s < NSIG; ++s) signal(s, SIG_DFL);
}

/* Root, after the node's last task ended, on the node of task 0:
 * `cli report STEPDIR -o STEPDIR/report` run as the job's user, waited for,
 * and its summary's path said on the step's stderr (spank_report.c). */
FT_HIDDEN void ft_run_report(const struct ft_step *s, char *cli, uint32_t nnodes);

#endif
