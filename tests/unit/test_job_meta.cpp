// Which job a process is of (common/job_meta.h): the launcher's ids, the
// bounded command line, the process's start time against the clock read
// around its fork.
#include "common/job_meta.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <map>
#include <string>

namespace fabtrace {
namespace {

JobMeta ids_of(const std::map<std::string, std::string>& env) {
  JobMeta m;
  job_ids_from(
      [&env](const char* n) -> const char* {
        const auto it = env.find(n);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      &m);
  return m;
}

TEST(JobMeta, LauncherIdsInOrder) {
  JobMeta m = ids_of({{"SLURM_JOB_ID", "123"}, {"SLURM_STEP_ID", "4"}, {"PMIX_NAMESPACE", "ns"}});
  EXPECT_EQ(m.launcher, "slurm");
  EXPECT_EQ(m.job_id, "123");
  EXPECT_EQ(m.step_id, "4");
  EXPECT_EQ(job_text(m), "slurm job 123 step 4");
  EXPECT_EQ(m.node_list, "");
  // The step's nodes, else the job's, in Slurm's compressed form as given.
  m = ids_of({{"SLURM_JOB_ID", "123"},
              {"SLURM_STEP_ID", "4"},
              {"SLURM_JOB_NODELIST", "n[01-08]"},
              {"SLURM_STEP_NODELIST", "n[01-03,05]"}});
  EXPECT_EQ(m.node_list, "n[01-03,05]");
  EXPECT_EQ(job_text(m), "slurm job 123 step 4 on n[01-03,05]");
  m = ids_of({{"SLURM_JOB_ID", "123"}, {"SLURM_JOB_NODELIST", "n[01-08]"}});
  EXPECT_EQ(job_text(m), "slurm job 123 on n[01-08]");
  m = ids_of({{"SLURM_JOB_ID", "123"}, {"SLURM_STEP_NODELIST", ""}, {"SLURM_JOB_NODELIST", "a,b"}});
  EXPECT_EQ(m.node_list, "a,b");
  // Only Slurm's: a node list without a Slurm job is not taken.
  m = ids_of({{"FLUX_JOB_ID", "f1"}, {"SLURM_JOB_NODELIST", "n1"}});
  EXPECT_EQ(m.node_list, "");
  m = ids_of({{"FLUX_JOB_ID", "f2BxGx"}, {"PMIX_NAMESPACE", "ns"}});
  EXPECT_EQ(job_text(m), "flux job f2BxGx");
  m = ids_of({{"PMIX_NAMESPACE", "1681457153"}, {"FABTRACE_RUN_ID", "abc"}});
  EXPECT_EQ(job_text(m), "pmix job 1681457153");
  EXPECT_EQ(m.run_id, "abc");
  EXPECT_EQ(job_text(ids_of({})), "");
  // Bounded.
  m = ids_of({{"SLURM_JOB_ID", std::string(1000, '7')}});
  EXPECT_EQ(m.job_id.size(), kMaxJobIdBytes);
  // A node list beyond its bound is cut and says so.
  const std::string many = "n[" + std::string(2000, '1') + "]";
  m = ids_of({{"SLURM_JOB_ID", "1"}, {"SLURM_STEP_NODELIST", many}});
  EXPECT_EQ(m.node_list.size(), kMaxNodeListBytes);
  EXPECT_EQ(m.node_list.substr(kMaxNodeListBytes - 3), "...");
  EXPECT_EQ(m.node_list.substr(0, kMaxNodeListBytes - 3), many.substr(0, kMaxNodeListBytes - 3));
  // A control character is escaped where it is shown.
  m = ids_of({{"SLURM_JOB_ID", "1"}, {"SLURM_STEP_NODELIST", "n1\n"}});
  EXPECT_EQ(job_text(m), "slurm job 1 on n1\\n");
}

TEST(JobMeta, CommandLineJoinedEscapedAndBounded) {
  EXPECT_EQ(command_line_of(std::string("./app\0-x\0a b\0", 14)), "./app -x a b");
  EXPECT_EQ(command_line_of(std::string("evil\0\x1b[2J\n\0", 11)), "evil \\x1b[2J\\n");
  const std::string longer = "./app " + std::string(5000, 'y');
  const std::string c = command_line_of(longer);
  EXPECT_EQ(c.size(), kMaxCommandBytes);
  EXPECT_EQ(c.substr(c.size() - 3), "...");
  // Never cut inside an escape.
  std::string esc = std::string(kMaxCommandBytes - 8, 'z') + std::string(10, '\x01');
  const std::string e = command_line_of(esc);
  EXPECT_LE(e.size(), kMaxCommandBytes);
  const size_t bs = e.rfind('\\');
  ASSERT_NE(bs, std::string::npos);
  EXPECT_EQ(e.compare(bs, 2, "\\x"), 0);
  EXPECT_EQ(e.size() - bs, 4u + 3u);  // one whole "\x01", then "..."
}

uint64_t wall_ns() {
  struct timespec ts {};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

TEST(JobMeta, StartTimeOfAProcessIsWhenItWasForked) {
  // Ground truth: the wall clock around the fork.
  usleep(30000);  // not at this process's own start
  const uint64_t before = wall_ns();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  const uint64_t after = wall_ns();
  const uint64_t start = process_start_wall_ns(child);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  // /proc's start time counts clock ticks (10 ms at 100 Hz): within one tick
  // and a little slack of the fork.
  const uint64_t tick = 1000000000ULL / static_cast<uint64_t>(sysconf(_SC_CLK_TCK));
  EXPECT_GE(start + tick + 5000000, before);
  EXPECT_LE(start, after + tick + 5000000);
  EXPECT_EQ(process_start_wall_ns(0) <= before, true);
  EXPECT_EQ(process_start_wall_ns(0x3fffffff), 0u);  // no such process
}

TEST(JobMeta, OfSelfReadsThisProcess) {
  setenv("SLURM_JOB_ID", "77", 1);
  setenv("SLURM_STEP_ID", "1", 1);
  setenv("SLURM_STEP_NODELIST", "node7", 1);
  const JobMeta m = job_meta_of_self();
  unsetenv("SLURM_JOB_ID");
  unsetenv("SLURM_STEP_ID");
  unsetenv("SLURM_STEP_NODELIST");
  EXPECT_EQ(job_text(m), "slurm job 77 step 1 on node7");
  EXPECT_NE(m.command.find("fabtrace_unit_tests"), std::string::npos) << m.command;
  EXPECT_GT(m.start_wall_ns, 0u);
}

}  // namespace
}  // namespace fabtrace
