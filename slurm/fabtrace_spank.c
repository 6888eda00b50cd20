/* fabtrace's SPANK plugin: `srun --fabtrace[=DIR]` traces a step's tasks with
 * the preload, `--fabtrace-record` adds the node-wide kernel session
 * (`fabtrace record`, started by slurmstepd as root, one per node, for the
 * step's own tasks only), `--fabtrace-report` runs `fabtrace report` at the
 * step's end on the node of task 0, `--fabtrace-opts=K=V,...` passes
 * FABTRACE_* settings.
 *
 * Site settings are plugstack.conf arguments (docs/slurm.md); a user's options
 * never override them:
 *   enable=0|1        the options exist at all (default 1)
 *   allow_record=0|1  --fabtrace-record is permitted (default 0)
 *   allow_report=0|1  --fabtrace-report is permitted (default 1)
 *   dir=PATH          DIR when --fabtrace has none (default: the job's PWD)
 *   preload=[FIRST:]PATH  the preload (default: the installed libfabtrace.so),
 *                     appended to the task's LD_PRELOAD; FIRST (libraries that
 *                     must load first, a sanitizer's runtime) goes before it
 *   fabtrace=PATH     the fabtrace command (default: the installed one)
 *
 * Who does what, and as whom (slurmstepd, remote context):
 *   slurm_spank_user_init (the job's user, once per node): opens DIR, which must
 *     be the user's or root's, creates DIR/<jobid>.<stepid> in it (mkdirat,
 *     then openat with O_NOFOLLOW: never through a link) and checks it is the
 *     user's; sets LD_PRELOAD (the preload appended, the site's FIRST in
 *     front), FABTRACE_DIR and the options in the tasks' environment. The
 *     directory's descriptor is kept for root's use.
 *   slurm_spank_task_post_fork (root, per task; tasks exec only after the
 *     last one): collects the tasks' pids from Slurm; after the last one starts
 *     `fabtrace record --only-pids --pid ... --owner UID:GID -o STEPDIR` and
 *     waits until it is attached. Its messages go to
 *     STEPDIR/fabtrace_record.<host>.log, created through the held descriptor
 *     and given to the user.
 *   slurm_spank_task_exit (root): after the node's last task, the session is
 *     stopped; then, with --fabtrace-report on the node of task 0, a child
 *     that has dropped to the user (setgroups, setgid, setuid) runs
 *     `fabtrace report STEPDIR -o STEPDIR/report`, its summary into
 *     STEPDIR/report/summary.txt; its path is said on the step's stderr.
 * In srun (local context), slurm_spank_exit prints where the outputs are and the
 * `fabtrace report` command, when it sees the step's directory. */
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
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "spank_step.h"

SPANK_PLUGIN(fabtrace, 1);

#ifndef FABTRACE_SPANK_PRELOAD
#define FABTRACE_SPANK_PRELOAD "libfabtrace.so"
#endif
#ifndef FABTRACE_SPANK_CLI
#define FABTRACE_SPANK_CLI "fabtrace"
#endif

enum {
  kMaxTasks = 1024,
  kMaxOpts = 2048,
  kRecordReadyS = 60,
  kRecordStopS = 60,
  kMaxPreload = 16384,
};

/* Site settings (plugstack.conf). */
static int site_enable = 1, site_allow_record = 0, site_allow_report = 1;
static char site_dir[PATH_MAX], site_preload[PATH_MAX] = FABTRACE_SPANK_PRELOAD,
                                site_cli[PATH_MAX] = FABTRACE_SPANK_CLI;

/* The user's options. */
static int opt_on, opt_record, opt_report;
static char opt_dir[PATH_MAX], opt_opts[kMaxOpts];

/* The step, on this node (slurmstepd). */
static int step_fd = -1;
static char step_dir[PATH_MAX], step_name[64];
static uid_t job_uid;
static gid_t job_gid;
static pid_t task_pids[kMaxTasks];
static uint32_t tasks_forked, tasks_exited, local_tasks;
static int task0_here; /* global task 0 is one of this node's */
static pid_t record_pid = -1;
/* The session's process as a descriptor: slurmstepd reaps any child it sees
 * exit (wait3), so a pid alone could be another process by the time it is
 * signalled. */
static int record_pidfd = -1;
/* srun: the step and its directory, for the line at its end. */
static char local_step[32], local_dir[PATH_MAX + 32];

/* A FABTRACE_ setting's name (without the prefix) and value: what a user may
 * pass. Names are upper-case words; DIR and PRELOAD are the plugin's. Values
 * are short and hold no '/', blank or shell character. */
static int opt_name_ok(const char *s, size_t n) {
  if (n == 0 || n > 64) return 0;
  for (size_t i = 0; i < n; ++i)
    if (!(isupper((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '_')) return 0;
  if ((n == 3 && !memcmp(s, "DIR", 3)) || (n == 7 && !memcmp(s, "PRELOAD", 7))) return 0;
  return 1;
}

static int opt_value_ok(const char *s, size_t n) {
  if (n > 256) return 0;
  for (size_t i = 0; i < n; ++i)
    if (!(isalnum((unsigned char)s[i]) || strchr("_.:+-", s[i]))) return 0;
  return 1;
}

/* Calls fn(name, name_len, value, value_len) for each K=V of `list`; a K may
 * carry the FABTRACE_ prefix. Returns -1 (after one message) at the first bad
 * one. */
static int each_opt(const char *list,
                    void (*fn)(const char *, size_t, const char *, size_t, void *), void *arg) {
  const char *p = list;
  while (*p) {
    const char *end = strchr(p, ',');
    if (!end) end = p + strlen(p);
    const char *eq = memchr(p, '=', (size_t)(end - p));
    if (end == p) {
      p = *end ? end + 1 : end;
      continue;
    }
    const char *k = p;
    if (!eq) {
      slurm_error("fabtrace: --fabtrace-opts: '%.*s' is not K=V", (int)(end - p), p);
      return -1;
    }
    if (eq - k > 9 && !memcmp(k, "FABTRACE_", 9)) k += 9;
    if (!opt_name_ok(k, (size_t)(eq - k)) || !opt_value_ok(eq + 1, (size_t)(end - eq - 1))) {
      slurm_error(
          "fabtrace: --fabtrace-opts: '%.*s' refused (a FABTRACE_ setting other than DIR and "
          "PRELOAD, its value letters, digits and _.:+-)",
          (int)(end - p), p);
      return -1;
    }
    if (fn) fn(k, (size_t)(eq - k), eq + 1, (size_t)(end - eq - 1), arg);
    p = *end ? end + 1 : end;
  }
  return 0;
}

static int cb_fabtrace(int val, const char *optarg, int remote) {
  (void)val;
  (void)remote;
  opt_on = 1;
  opt_dir[0] = '\0';
  if (optarg && *optarg) {
    if (strlen(optarg) >= sizeof(opt_dir)) {
      slurm_error("fabtrace: --fabtrace=DIR: the path is too long");
      return -1;
    }
    strcpy(opt_dir, optarg);
  }
  return 0;
}

/* A flag the site may refuse (plugstack.conf: SETTING=0). */
static int site_permitted_flag(int allowed, const char *name, const char *setting, int *flag) {
  if (!allowed) {
    slurm_error("fabtrace: --%s is not permitted on this cluster (plugstack.conf: %s=0)", name,
                setting);
    return -1;
  }
  opt_on = *flag = 1;
  return 0;
}

static int cb_record(int val, const char *optarg, int remote) {
  (void)val;
  (void)optarg;
  (void)remote;
  return site_permitted_flag(site_allow_record, "fabtrace-record", "allow_record", &opt_record);
}

static int cb_report(int val, const char *optarg, int remote) {
  (void)val;
  (void)optarg;
  (void)remote;
  return site_permitted_flag(site_allow_report, "fabtrace-report", "allow_report", &opt_report);
}

static int cb_opts(int val, const char *optarg, int remote) {
  (void)val;
  (void)remote;
  if (!optarg || strlen(optarg) >= sizeof(opt_opts)) {
    slurm_error("fabtrace: --fabtrace-opts: K=V,... expected (at most %d bytes)", kMaxOpts - 1);
    return -1;
  }
  if (each_opt(optarg, NULL, NULL) != 0) return -1;
  strcpy(opt_opts, optarg);
  return 0;
}

static struct spank_option options[] = {
    {"fabtrace", "DIR",
     "trace libfabric with fabtrace; outputs in DIR/<jobid>.<stepid> (DIR: the site's "
     "default, else the current directory)",
     2, 0, cb_fabtrace},
    {"fabtrace-record", NULL,
     "with --fabtrace: also run fabtrace's kernel session (fabtrace record) on each node for "
     "the step's tasks",
     0, 0, cb_record},
    {"fabtrace-report", NULL,
     "with --fabtrace: at the step's end, run fabtrace report on the node of task 0 into "
     "<step dir>/report",
     0, 0, cb_report},
    {"fabtrace-opts", "K=V,...",
     "FABTRACE_* settings for the tasks, e.g. STALL_US=500,OPS_RANKS=0-7", 1, 0, cb_opts},
    SPANK_OPTIONS_TABLE_END};

static int set_path(char *dst, const char *v, const char *what) {
  if (strlen(v) >= PATH_MAX || (*v != '/' && strcmp(what, "dir") != 0 && strchr(v, '/'))) {
    slurm_error("fabtrace: plugstack.conf: %s=%s refused", what, v);
    return -1;
  }
  strcpy(dst, v);
  return 0;
}

static int site_settings(int ac, char **av) {
  for (int i = 0; i < ac; ++i) {
    const char *a = av[i];
    if (!strncmp(a, "enable=", 7)) {
      site_enable = atoi(a + 7) != 0;
    } else if (!strncmp(a, "allow_record=", 13)) {
      site_allow_record = atoi(a + 13) != 0;
    } else if (!strncmp(a, "allow_report=", 13)) {
      site_allow_report = atoi(a + 13) != 0;
    } else if (!strncmp(a, "dir=", 4)) {
      if (a[4] != '/' || set_path(site_dir, a + 4, "dir")) {
        slurm_error("fabtrace: plugstack.conf: dir= needs an absolute path");
        return -1;
      }
    } else if (!strncmp(a, "preload=", 8)) {
      if (set_path(site_preload, a + 8, "preload")) return -1;
    } else if (!strncmp(a, "fabtrace=", 9)) {
      if (set_path(site_cli, a + 9, "fabtrace")) return -1;
    } else {
      slurm_error("fabtrace: plugstack.conf: unknown argument '%s'", a);
      return -1;
    }
  }
  return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av) {
  if (site_settings(ac, av) != 0) return -1;
  if (!site_enable) return 0;
  for (struct spank_option *o = options; o->name; ++o)
    if (spank_option_register(sp, o) != ESPANK_SUCCESS) {
      slurm_error("fabtrace: cannot register --%s", o->name);
      return -1;
    }
  return 0;
}

/* The batch script and the external step are not traced: the steps it
 * launches (srun) are, each into its own directory. */
static int traced_step(spank_t sp, uint32_t *job, uint32_t *step) {
  if (spank_get_item(sp, S_JOB_ID, job) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, step) != ESPANK_SUCCESS)
    return 0;
  return *step != 0xfffffffbu /* batch */ && *step != 0xfffffffcu /* extern */ &&
         *step != 0xfffffffdu /* interactive */;
}

/* DIR as the user named it, absolute: relative to the job's PWD. */
static int base_dir(spank_t sp, char *out, size_t n) {
  const char *d = opt_dir[0] ? opt_dir : site_dir;
  char pwd[PATH_MAX] = "";
  if (*d == '/') return snprintf(out, n, "%s", d) < (int)n ? 0 : -1;
  if (!spank_remote(sp)) {
    if (!getcwd(pwd, sizeof(pwd))) pwd[0] = '\0';
  } else if (spank_getenv(sp, "PWD", pwd, sizeof(pwd)) != ESPANK_SUCCESS) {
    pwd[0] = '\0';
  }
  if (pwd[0] != '/') {
    slurm_error("fabtrace: a relative directory '%s' and no PWD in the job's environment", d);
    return -1;
  }
  return snprintf(out, n, "%s%s%s", pwd, *d ? "/" : "", d) < (int)n ? 0 : -1;
}

static void set_opt(const char *k, size_t kn, const char *v, size_t vn, void *arg) {
  spank_t sp = (spank_t)arg;
  char name[80], val[260];
  snprintf(name, sizeof(name), "FABTRACE_%.*s", (int)kn, k);
  snprintf(val, sizeof(val), "%.*s", (int)vn, v);
  spank_setenv(sp, name, val, 1);
}

/* As the job's user: the step's directory, created in DIR (the user's or
 * root's) without following a link, and the tasks' environment. */
int slurm_spank_user_init(spank_t sp, int ac, char **av) {
  (void)ac;
  (void)av;
  uint32_t job, step;
  if (!opt_on || !spank_remote(sp) || !traced_step(sp, &job, &step)) return 0;
  if (spank_get_item(sp, S_JOB_UID, &job_uid) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_GID, &job_gid) != ESPANK_SUCCESS)
    return 0;
  if (geteuid() != job_uid) {
    slurm_error("fabtrace: not running as the job's user here: the step is not traced");
    return 0;
  }
  char base[PATH_MAX], name[64];
  if (base_dir(sp, base, sizeof(base)) != 0) return 0;
  const int bfd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat st;
  if (bfd < 0 || fstat(bfd, &st) != 0) {
    slurm_error("fabtrace: %s: %s: the step is not traced", base, strerror(errno));
    if (bfd >= 0) close(bfd);
    return 0;
  }
  if (st.st_uid != job_uid && st.st_uid != 0) {
    slurm_error(
        "fabtrace: %s is owned by uid %u, not by you or root: refused, the step is not traced",
        base, (unsigned)st.st_uid);
    close(bfd);
    return 0;
  }
  snprintf(name, sizeof(name), "%u.%u", job, step);
  if (mkdirat(bfd, name, 0755) != 0 && errno != EEXIST) {
    slurm_error("fabtrace: cannot create %s/%s: %s: the step is not traced", base, name,
                strerror(errno));
    close(bfd);
    return 0;
  }
  const int fd = openat(bfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  const int err = errno;
  close(bfd);
  if (fd < 0 || fstat(fd, &st) != 0 || st.st_uid != job_uid) {
    slurm_error(
        "fabtrace: %s/%s: %s: refused (the step's directory must be a directory of yours, "
        "not a link), the step is not traced",
        base, name, fd < 0 ? strerror(err) : "not yours");
    if (fd >= 0) close(fd);
    return 0;
  }
  if (snprintf(step_dir, sizeof(step_dir), "%s/%s", base, name) >= (int)sizeof(step_dir)) {
    slurm_error("fabtrace: %s: the path is too long, the step is not traced", base);
    close(fd);
    return 0;
  }
  step_fd = fd;
  snprintf(step_name, sizeof(step_name), "%s", name);

  /* The preload after the task's own LD_PRELOAD (a sanitized program's
   * runtime, a tool of the user's); the site's FIRST before both. */
  char pre[2 * PATH_MAX + kMaxPreload], old[kMaxPreload] = "";
  const char *last = strrchr(site_preload, ':');
  const int first_n = last ? (int)(last - site_preload) : 0;
  const char *preload = last ? last + 1 : site_preload;
  const spank_err_t got = spank_getenv(sp, "LD_PRELOAD", old, sizeof(old));
  if (got == ESPANK_NOSPACE) {
    slurm_error("fabtrace: the task's LD_PRELOAD is longer than %d bytes: the step is not traced",
                kMaxPreload - 1);
    close(step_fd);
    step_fd = -1;
    return 0;
  }
  if (got != ESPANK_SUCCESS) old[0] = '\0';
  snprintf(pre, sizeof(pre), "%.*s%s%s%s%s", first_n, site_preload, first_n ? ":" : "", old,
           old[0] ? ":" : "", preload);
  spank_setenv(sp, "LD_PRELOAD", pre, 1);
  spank_setenv(sp, "FABTRACE_DIR", step_dir, 1);
  each_opt(opt_opts, set_opt, sp);
  return 0;
}

/* srun, before the step's launch: where its outputs go, said at its end. */
int slurm_spank_local_user_init(spank_t sp, int ac, char **av) {
  (void)ac;
  (void)av;
  uint32_t job, step;
  if (!opt_on || !traced_step(sp, &job, &step) || base_dir(sp, local_dir, sizeof(local_dir)) != 0)
    return 0;
  snprintf(local_step, sizeof(local_step), "%u.%u", job, step);
  const size_t n = strlen(local_dir);
  snprintf(local_dir + n, sizeof(local_dir) - n, "/%s", local_step);
  return 0;
}

/* Root: the session's messages, in a new file of the step's directory given
 * to the user (O_EXCL|O_NOFOLLOW through the held descriptor). */
static int record_log(char *name, size_t n) {
  char host[64] = "host";
  gethostname(host, sizeof(host) - 1);
  for (char *c = host; *c; ++c)
    if (*c == '/' || isspace((unsigned char)*c)) *c = '_';
  for (int i = 0; i < 100; ++i) {
    if (i)
      snprintf(name, n, "fabtrace_record.%s.%d.log", host, i);
    else
      snprintf(name, n, "fabtrace_record.%s.log", host);
    const int fd = openat(step_fd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) {
      if (fchown(fd, job_uid, job_gid) == 0) return fd;
      close(fd);
      unlinkat(step_fd, name, 0);
      return -1;
    }
    if (errno != EEXIST) return -1;
  }
  return -1;
}

/* Reaps the session's process if slurmstepd has not, and forgets it. */
static void forget_record(void) {
  int status;
  if (record_pid > 0) waitpid(record_pid, &status, WNOHANG);
  if (record_pidfd >= 0) close(record_pidfd);
  record_pid = -1;
  record_pidfd = -1;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void start_record(void) {
  char log_name[128];
  const int log_fd = record_log(log_name, sizeof(log_name));
  if (log_fd < 0) {
    slurm_error("fabtrace: cannot create the session's log in %s: %s; no kernel session", step_dir,
                strerror(errno));
    return;
  }
  char owner[64];
  snprintf(owner, sizeof(owner), "%u:%u", (unsigned)job_uid, (unsigned)job_gid);
  char *argv[16 + 2 * kMaxTasks];
  char pids[kMaxTasks][16];
  int a = 0;
  argv[a++] = site_cli;
  argv[a++] = "record";
  argv[a++] = "--only-pids";
  argv[a++] = "--owner";
  argv[a++] = owner;
  argv[a++] = "-o";
  argv[a++] = step_dir;
  for (uint32_t i = 0; i < local_tasks; ++i) {
    snprintf(pids[i], sizeof(pids[i]), "%d", (int)task_pids[i]);
    argv[a++] = "--pid";
    argv[a++] = pids[i];
  }
  argv[a] = NULL;
  char env_preload[PATH_MAX + 20];
  snprintf(env_preload, sizeof(env_preload), "FABTRACE_PRELOAD=%s", site_preload);
  char *envp[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", env_preload,
                  NULL};
  const pid_t pid = fork();
  if (pid < 0) {
    slurm_error("fabtrace: fork: %s; no kernel session", strerror(errno));
    close(log_fd);
    return;
  }
  if (pid == 0) {
    ft_child_defaults();
    const int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0)
      _exit(127);
    closefrom(3);
    execve(site_cli, argv, envp);
    dprintf(2, "fabtrace: cannot run %s: %s\n", site_cli, strerror(errno));
    _exit(127);
  }
  record_pid = pid;
  record_pidfd = pidfd_open(pid, 0);
  /* The tasks exec once this returns: wait until the session is attached. */
  char buf[4096];
  for (int waited = 0; waited < kRecordReadyS * 20; ++waited) {
    int status;
    struct pollfd pf = {record_pidfd, POLLIN, 0};
    if (waitpid(pid, &status, WNOHANG) == pid || (record_pidfd >= 0 && poll(&pf, 1, 0) == 1)) {
      forget_record();
      const ssize_t n = pread(log_fd, buf, sizeof(buf) - 1, 0);
      buf[n > 0 ? n : 0] = '\0';
      char *last = buf[0] ? strrchr(buf, '\n') : NULL;
      if (last && last != buf && last[1] == '\0') *last = '\0';
      last = strrchr(buf, '\n');
      /* Not queued: said in one line, and the step runs with the preload. */
      if (strstr(buf, "another fabtrace record session runs on this node"))
        slurm_error(
            "fabtrace: no kernel session for this step on this node: another fabtrace record "
            "session runs here (one per node); the preload traces the step all the same");
      else
        slurm_error("fabtrace: the kernel session did not start (%s): %s", log_name,
                    last ? last + 1 : buf);
      close(log_fd);
      return;
    }
    const ssize_t n = pread(log_fd, buf, sizeof(buf) - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    if (strstr(buf, "attach points attached")) break;
    sleep_ms(50);
  }
  close(log_fd);
}

/* Root, in slurmstepd, after each task's fork; no task has exec'd yet. The
 * pids come from Slurm, never from the user. */
int slurm_spank_task_post_fork(spank_t sp, int ac, char **av) {
  (void)ac;
  (void)av;
  int task = -1;
  pid_t pid = 0;
  if (!opt_record || step_fd < 0 || !spank_remote(sp)) return 0;
  if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &local_tasks) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_TASK_ID, &task) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS)
    return 0;
  if (local_tasks > kMaxTasks) {
    if (task == 0)
      slurm_error("fabtrace: more than %d tasks on this node: no kernel session", kMaxTasks);
    return 0;
  }
  if (task < 0 || (uint32_t)task >= local_tasks || pid <= 0) return 0;
  task_pids[task] = pid;
  if (++tasks_forked == local_tasks) start_record();
  return 0;
}

static void stop_record(void) {
  if (record_pid <= 0 || record_pidfd < 0) {
    forget_record();
    return;
  }
  /* Through the descriptor: ESRCH once it has exited, whoever reaped it. */
  if (pidfd_send_signal(record_pidfd, SIGTERM, NULL, 0) == 0) {
    struct pollfd pf = {record_pidfd, POLLIN, 0};
    if (poll(&pf, 1, kRecordStopS * 1000) != 1) {
      slurm_error("fabtrace: the kernel session did not stop in %d s: killed", kRecordStopS);
      pidfd_send_signal(record_pidfd, SIGKILL, NULL, 0);
      poll(&pf, 1, 5000);
    }
  }
  forget_record();
}

int slurm_spank_task_exit(spank_t sp, int ac, char **av) {
  (void)ac;
  (void)av;
  uint32_t global = UINT32_MAX, nnodes = 1;
  if (step_fd < 0 || !spank_remote(sp)) return 0;
  if (spank_get_item(sp, S_TASK_GLOBAL_ID, &global) == ESPANK_SUCCESS && global == 0)
    task0_here = 1;
  if (!local_tasks && spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &local_tasks) != ESPANK_SUCCESS)
    return 0;
  if (++tasks_exited != local_tasks) return 0;
  stop_record();
  if (opt_report && task0_here) {
    spank_get_item(sp, S_JOB_NNODES, &nnodes);
    const struct ft_step step = {step_fd, step_dir, step_name, job_uid, job_gid};
    ft_run_report(&step, site_cli, nnodes);
  }
  return 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av) {
  (void)ac;
  (void)av;
  if (spank_remote(sp)) {
    stop_record();
    if (step_fd >= 0) close(step_fd);
    step_fd = -1;
    return 0;
  }
  if (!local_step[0]) return 0;
  /* What this host sees: the nodes made the directory (or refused it, and
   * said why on the step's stderr), and it may be on their own disks. */
  struct stat st;
  if (lstat(local_dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid())
    fprintf(stderr, "fabtrace: the outputs of step %s are in %s: fabtrace report %s\n", local_step,
            local_dir, local_dir);
  else
    fprintf(stderr,
            "fabtrace: step %s: no directory %s of yours on this host: the nodes refused it "
            "(as they said above) or made it on their own disks\n",
            local_step, local_dir);
  return 0;
}
