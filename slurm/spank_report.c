/* The SPANK plugin's report at the step's end (fabtrace_spank.c calls it):
 * `fabtrace report` run as the job's user, never as root. */
#define _GNU_SOURCE

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <slurm/spank.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spank_step.h"

enum { kFtReportS = 300 };

/* The child's side of ft_run_report: the job's user, without root's groups,
 * before anything is created; the summary and the messages in files of the
 * user's, made through the held descriptor without following a link. */
static void report_child(const struct ft_step *s, char *cli, char *out) {
  ft_child_defaults();
  if (setgroups(0, NULL) != 0 || setgid(s->gid) != 0 || setuid(s->uid) != 0 || getuid() != s->uid ||
      geteuid() != s->uid || getegid() != s->gid || (s->uid != 0 && setuid(0) == 0))
    _exit(125);
  const int log_fd = openat(s->fd, "fabtrace_report.log",
                            O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (log_fd < 0) _exit(124);
  struct stat st;
  if (mkdirat(s->fd, "report", 0755) != 0 && errno != EEXIST) {
    dprintf(log_fd, "fabtrace: cannot create %s/report: %s\n", s->dir, strerror(errno));
    _exit(126);
  }
  const int out_fd = openat(s->fd, "report", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (out_fd < 0 || fstat(out_fd, &st) != 0 || st.st_uid != s->uid) {
    dprintf(log_fd, "fabtrace: %s/report: %s\n", s->dir,
            out_fd < 0 ? strerror(errno) : "not a directory of yours");
    _exit(126);
  }
  const int sum_fd =
      openat(out_fd, "summary.txt", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (sum_fd < 0 || null_fd < 0) {
    dprintf(log_fd, "fabtrace: %s/report/summary.txt: %s\n", s->dir, strerror(errno));
    _exit(126);
  }
  char *argv[] = {cli, "report", s->dir, "-o", out, NULL};
  char *envp[] = {"PATH=/usr/local/bin:/usr/bin:/bin", NULL};
  if (fchdir(s->fd) != 0 || dup2(null_fd, 0) < 0 || dup2(sum_fd, 1) < 0 || dup2(log_fd, 2) < 0)
    _exit(126);
  closefrom(3);
  execve(cli, argv, envp);
  dprintf(2, "fabtrace: cannot run %s: %s\n", cli, strerror(errno));
  _exit(127);
}

/* The last line of the step directory's `name` (read as root through the
 * held descriptor: a file the user may have replaced is only read). */
static void last_line_of(int step_fd, const char *name, char *buf, size_t n) {
  buf[0] = '\0';
  const int fd = openat(step_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd < 0) return;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return;
  }
  const off_t from = st.st_size > (off_t)n - 1 ? st.st_size - ((off_t)n - 1) : 0;
  const ssize_t got = pread(fd, buf, n - 1, from);
  close(fd);
  buf[got > 0 ? got : 0] = '\0';
  char *end = buf + strlen(buf);
  while (end > buf && end[-1] == '\n') *--end = '\0';
  char *nl = strrchr(buf, '\n');
  if (nl) memmove(buf, nl + 1, strlen(nl + 1) + 1);
  for (char *c = buf; *c; ++c)
    if (!isprint((unsigned char)*c)) *c = '?';
}

/* Root, after the node's last task ended, on the node of task 0:
 * `fabtrace report STEPDIR -o STEPDIR/report` run as the user (never as
 * root), waited for (at most kFtReportS), and its summary's path said. The
 * other nodes' outputs are there only when STEPDIR is shared. */
void ft_run_report(const struct ft_step *s, char *cli, uint32_t nnodes) {
  char out[PATH_MAX + 8];
  snprintf(out, sizeof(out), "%s/report", s->dir);
  const pid_t pid = fork();
  if (pid < 0) {
    slurm_error("fabtrace: fork: %s; no report", strerror(errno));
    return;
  }
  if (pid == 0) report_child(s, cli, out);
  const int pidfd = pidfd_open(pid, 0);
  struct pollfd pf = {pidfd, POLLIN, 0};
  int status = -1, done = 0;
  if (pidfd >= 0 && poll(&pf, 1, kFtReportS * 1000) != 1) {
    pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
    poll(&pf, 1, 5000);
    slurm_error("fabtrace: the report took more than %d s: stopped (%s/fabtrace_report.log)",
                kFtReportS, s->dir);
    done = 1;
  }
  /* slurmstepd may have reaped it already: then the files say. */
  if (waitpid(pid, &status, pidfd >= 0 ? WNOHANG : 0) != pid) status = -1;
  if (pidfd >= 0) close(pidfd);
  if (done) return;
  char last[512];
  last_line_of(s->fd, "fabtrace_report.log", last, sizeof(last));
  struct stat st;
  /* Reaped by slurmstepd before us: the summary says whether it ran. */
  if (status == -1)
    status = fstatat(s->fd, "report/summary.txt", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                     S_ISREG(st.st_mode) && st.st_size > 0
                 ? 0
                 : 1 << 8;
  if (status != 0) {
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    slurm_error("fabtrace: the report did not run: %s",
                last[0]               ? last
                : code == 125         ? "could not become the job's user"
                : code == 124         ? "cannot create fabtrace_report.log in the step's directory"
                : WIFSIGNALED(status) ? "killed by a signal"
                                      : "it failed");
    return;
  }
  slurm_spank_log("fabtrace: the report of step %s: %s/report/summary.txt%s", s->name, s->dir,
                  nnodes > 1 ? " (with the other nodes' outputs only where the directory is "
                               "shared)"
                             : "");
}
