// common/session_lock: one `fabtrace record` session per node. The lock is
// the kernel's (flock), so a second taker is refused with the holder's pid,
// and it is free again as soon as the holder lets go, however it ends; a
// lock directory or file that is not this user's own is refused.
#include "common/session_lock.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "tests/unit/scratch_dir.h"

namespace fabtrace {
namespace {

TEST(SessionLock, OneHolderAtATimeNamedByItsPid) {
  const test::ScratchDir scratch;
  const std::string dir = scratch.path("run");
  EXPECT_EQ(session_lock_holder(dir), 0);
  SessionLock first;
  std::string why;
  ASSERT_TRUE(first.acquire(&why, dir)) << why;
  struct stat st;
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);  // made for its owner alone
  EXPECT_EQ(session_lock_holder(dir), getpid());

  SessionLock second;
  EXPECT_FALSE(second.acquire(&why, dir));
  EXPECT_NE(why.find("another fabtrace record session runs on this node (pid " +
                     std::to_string(getpid()) + ")"),
            std::string::npos)
      << why;

  first.release();
  EXPECT_EQ(session_lock_holder(dir), 0);
  EXPECT_TRUE(second.acquire(&why, dir)) << why;
}

TEST(SessionLock, AHolderKilledFreesTheLock) {
  const test::ScratchDir scratch;
  const std::string dir = scratch.path("run");
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    SessionLock l;
    std::string why;
    const char c = l.acquire(&why, dir) ? 'y' : 'n';
    if (write(ready[1], &c, 1) != 1) _exit(1);
    pause();
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  EXPECT_EQ(session_lock_holder(dir), child);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(session_lock_holder(dir), 0);
  SessionLock l;
  std::string why;
  EXPECT_TRUE(l.acquire(&why, dir)) << why;
  close(ready[0]);
  close(ready[1]);
}

TEST(SessionLock, ADirectoryOthersMayWriteToOrALinkIsRefused) {
  const test::ScratchDir scratch;
  const std::string open_dir = scratch.path("open");
  ASSERT_EQ(::mkdir(open_dir.c_str(), 0777), 0);
  ASSERT_EQ(::chmod(open_dir.c_str(), 0777), 0);
  SessionLock l;
  std::string why;
  EXPECT_FALSE(l.acquire(&why, open_dir));
  EXPECT_NE(why.find("refused"), std::string::npos) << why;

  const std::string link = scratch.path("link");
  ASSERT_EQ(::mkdir(scratch.path("real").c_str(), 0700), 0);
  ASSERT_EQ(::symlink(scratch.path("real").c_str(), link.c_str()), 0);
  EXPECT_FALSE(l.acquire(&why, link));

  // A link planted at the lock file's name is not followed.
  const std::string dir = scratch.path("run");
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(::symlink(scratch.path("elsewhere").c_str(), (dir + "/record.lock").c_str()), 0);
  EXPECT_FALSE(l.acquire(&why, dir));
  struct stat st;
  EXPECT_NE(::stat(scratch.path("elsewhere").c_str(), &st), 0) << "created through the link";
}

}  // namespace
}  // namespace fabtrace
