// common/safe_output: outputs in directories other users may write to are
// never written through a symlink or over an existing file.
#include "common/safe_output.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "fixtures/synthetic_job.h"

namespace fabtrace {
namespace {

std::string temp_dir() { return test::make_fixture_dir("safe-output"); }

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void put(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST(SafeOutput, CreatesANewFileWithMode0644) {
  const std::string dir = temp_dir();
  const mode_t old_mask = ::umask(0);
  std::string why;
  const int fd = create_new_file(dir + "/out.txt", &why);
  ::umask(old_mask);
  ASSERT_GE(fd, 0) << why;
  struct stat st;
  ASSERT_EQ(::fstat(fd, &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  ::close(fd);
}

TEST(SafeOutput, NeverWritesThroughASymlinkOrOverAFile) {
  const std::string dir = temp_dir();
  put(dir + "/victim", "precious");
  ASSERT_EQ(::symlink((dir + "/victim").c_str(), (dir + "/link").c_str()), 0);
  ASSERT_EQ(::symlink((dir + "/nowhere").c_str(), (dir + "/dangling").c_str()), 0);
  put(dir + "/existing", "old");
  ASSERT_EQ(::mkfifo((dir + "/fifo").c_str(), 0600), 0);
  for (const char* name : {"link", "dangling", "existing", "fifo"}) {
    std::string why;
    EXPECT_LT(create_new_file(dir + "/" + name, &why), 0) << name;
    EXPECT_FALSE(why.empty()) << name;
  }
  EXPECT_EQ(slurp(dir + "/victim"), "precious");
  EXPECT_EQ(slurp(dir + "/existing"), "old");
  struct stat st;
  EXPECT_NE(::lstat((dir + "/nowhere").c_str(), &st), 0) << "created through a dangling link";
}

TEST(SafeOutput, OwnDirIsCreatedOrRefused) {
  const std::string dir = temp_dir();
  std::string why;
  int fd = open_own_dir(dir + "/new", true, &why);
  EXPECT_GE(fd, 0) << why;
  ::close(fd);
  fd = open_own_dir(dir + "/new", false, &why);  // ours already: used as it is
  EXPECT_GE(fd, 0) << why;
  ::close(fd);

  ASSERT_EQ(::mkdir((dir + "/elsewhere").c_str(), 0755), 0);
  ASSERT_EQ(::symlink((dir + "/elsewhere").c_str(), (dir + "/link").c_str()), 0);
  EXPECT_LT(open_own_dir(dir + "/link", true, &why), 0);
  EXPECT_NE(why.find("symbolic link"), std::string::npos) << why;

  if (::geteuid() == 0) {  // a directory of another user's (root can make one)
    ASSERT_EQ(::mkdir((dir + "/theirs").c_str(), 0777), 0);
    ASSERT_EQ(::chown((dir + "/theirs").c_str(), 65534, 65534), 0);
    EXPECT_LT(open_own_dir(dir + "/theirs", true, &why), 0);
    EXPECT_NE(why.find("not by this user"), std::string::npos) << why;
  }
}

// open_owned_by (record --owner): a directory of that very user only, not
// created, not a link; each file made in it is theirs.
TEST(SafeOutput, AnOwnedDirectoryIsTheOwnersAndSoIsEachFile) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (it makes another user's directories)";
  const std::string dir = temp_dir();
  const std::string mine = dir + "/user", theirs = dir + "/other";
  ASSERT_EQ(::mkdir(mine.c_str(), 0755), 0);
  ASSERT_EQ(::chown(mine.c_str(), 65534, 65534), 0);
  ASSERT_EQ(::mkdir(theirs.c_str(), 0777), 0);
  ASSERT_EQ(::chown(theirs.c_str(), 65533, 65533), 0);
  ASSERT_EQ(::symlink(mine.c_str(), (dir + "/link").c_str()), 0);
  std::string why;
  OutputDir d;
  EXPECT_FALSE(d.open_owned_by(theirs, 65534, 65534, &why));
  EXPECT_NE(why.find("owned by uid 65533, not by the outputs' owner uid 65534: refused"),
            std::string::npos)
      << why;
  EXPECT_FALSE(d.open_owned_by(dir, 65534, 65534, &why));  // root's: not the user's
  EXPECT_FALSE(d.open_owned_by(dir + "/link", 65534, 65534, &why));
  EXPECT_NE(why.find("symbolic link"), std::string::npos) << why;
  EXPECT_FALSE(d.open_owned_by(mine + "/missing", 65534, 65534, &why));
  struct stat st;
  EXPECT_NE(::stat((mine + "/missing").c_str(), &st), 0);  // nothing created

  ASSERT_TRUE(d.open_owned_by(mine, 65534, 65534, &why)) << why;
  std::string name, note;
  const int fd = d.create("out.txt", &name, &note, &why);
  ASSERT_GE(fd, 0) << why;
  ::close(fd);
  ASSERT_EQ(::stat((mine + "/out.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u);
  EXPECT_EQ(st.st_gid, 65534u);
  // A plain open() afterwards gives root's files again.
  ASSERT_TRUE(d.open(dir, false, &why)) << why;
  const int fd2 = d.create("root.txt", &name, &note, &why);
  ASSERT_GE(fd2, 0) << why;
  ::close(fd2);
  ASSERT_EQ(::stat((dir + "/root.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
}

TEST(SafeOutput, ReplacingFileReplacesAPlantedSymlinkWithoutFollowingIt) {
  const std::string dir = temp_dir();
  put(dir + "/victim", "precious");
  ASSERT_EQ(::symlink((dir + "/victim").c_str(), (dir + "/report.html").c_str()), 0);
  ReplacingFile f;
  std::string why;
  ASSERT_TRUE(f.open(dir + "/report.html", &why)) << why;
  std::fputs("new report", f.stream());
  ASSERT_TRUE(f.commit(&why)) << why;
  EXPECT_EQ(slurp(dir + "/victim"), "precious");
  struct stat st;
  ASSERT_EQ(::lstat((dir + "/report.html").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(slurp(dir + "/report.html"), "new report");
}

TEST(SafeOutput, AnAbandonedReplacementLeavesNothingBehind) {
  const std::string dir = temp_dir();
  put(dir + "/t.csv", "earlier");
  {
    ReplacingFile f;
    std::string why;
    ASSERT_TRUE(f.open(dir + "/t.csv", &why)) << why;
    std::fputs("half", f.stream());
  }  // not committed
  EXPECT_EQ(slurp(dir + "/t.csv"), "earlier");
  EXPECT_EQ(std::system(("test $(ls -A " + dir + " | wc -l) -eq 1").c_str()), 0);
}

TEST(SafeOutput, NumberedNamesKeepTheExtension) {
  EXPECT_EQ(numbered_name("report.html", 1), "report.1.html");
  EXPECT_EQ(numbered_name("fabtrace_kernel.h.p7.klog", 2), "fabtrace_kernel.h.p7.2.klog");
  EXPECT_EQ(numbered_name("out", 3), "out.3");
  EXPECT_EQ(numbered_name(".hidden", 1), ".hidden.1");
}

// Something at an output's name: the next free name, and one line saying so;
// what was there is left exactly as it was.
TEST(SafeOutput, AnOccupiedNameGetsTheNextFreeOne) {
  const std::string dir = temp_dir();
  put(dir + "/victim", "precious");
  ASSERT_EQ(::symlink((dir + "/victim").c_str(), (dir + "/out.csv").c_str()), 0);
  put(dir + "/out.1.csv", "earlier");
  OutputDir d;
  std::string why;
  ASSERT_TRUE(d.open(dir, false, &why)) << why;
  std::string name, note;
  const int fd = d.create("out.csv", &name, &note, &why);
  ASSERT_GE(fd, 0) << why;
  ::close(fd);
  EXPECT_EQ(name, "out.2.csv");
  EXPECT_NE(note.find("out.csv already exists (left as it is): written to " + dir + "/out.2.csv"),
            std::string::npos)
      << note;
  EXPECT_EQ(slurp(dir + "/victim"), "precious");
  EXPECT_EQ(slurp(dir + "/out.1.csv"), "earlier");
  EXPECT_EQ(d.free_name("out.csv"), "out.3.csv");
  EXPECT_EQ(d.free_name("new.csv"), "new.csv");
}

// The directory is opened once: after its path is moved away and a link put in
// its place, every way of creating a file under that path (the descriptor,
// create_new_file, ReplacingFile) still lands in the directory that was opened.
TEST(SafeOutput, AHeldDirectoryIsWrittenThroughItsDescriptor) {
  const std::string dir = temp_dir();
  const std::string out = dir + "/out", moved = dir + "/moved", target = dir + "/target";
  ASSERT_EQ(::mkdir(out.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(target.c_str(), 0755), 0);
  OutputDir d;
  std::string why;
  ASSERT_TRUE(d.open(out, false, &why)) << why;
  ASSERT_EQ(::rename(out.c_str(), moved.c_str()), 0);
  ASSERT_EQ(::symlink(target.c_str(), out.c_str()), 0);

  std::string name, note;
  ::close(d.create("a.txt", &name, &note, &why));
  ::close(create_new_file(out + "/b.txt", &why));
  {
    ReplacingFile f;
    ASSERT_TRUE(f.open(out + "/c.txt", &why)) << why;
    std::fputs("c", f.stream());
    ASSERT_TRUE(f.commit(&why)) << why;
  }
  const std::string via = held_path(out + "/sub");
  EXPECT_EQ(via, "/proc/self/fd/" + std::to_string(d.fd()) + "/sub");
  ASSERT_EQ(::mkdir(via.c_str(), 0755), 0);
  for (const char* n : {"a.txt", "b.txt", "c.txt", "sub"}) {
    struct stat st;
    EXPECT_EQ(::lstat((moved + "/" + n).c_str(), &st), 0) << n;
    EXPECT_NE(::lstat((target + "/" + n).c_str(), &st), 0) << n << " went through the link";
  }
  d.close();
  EXPECT_EQ(held_path(out + "/x"), out + "/x");  // no longer held
}

// On the way to the directory, a link is followed only when a trusted owner
// (root, this user) made it: another user's link could point anywhere.
TEST(SafeOutput, OnlyTrustedLinksAreFollowedOnTheWay) {
  const std::string dir = temp_dir();
  ASSERT_EQ(::mkdir((dir + "/real").c_str(), 0755), 0);
  ASSERT_EQ(::symlink((dir + "/real").c_str(), (dir + "/mine").c_str()), 0);
  std::string why;
  OutputDir d;
  EXPECT_TRUE(d.open(dir + "/mine/out", true, &why)) << why;
  struct stat st;
  EXPECT_EQ(::stat((dir + "/real/out").c_str(), &st), 0);
  d.close();
  if (::geteuid() != 0) return;  // root can make another user's link
  ASSERT_EQ(::symlink((dir + "/real").c_str(), (dir + "/theirs").c_str()), 0);
  ASSERT_EQ(::lchown((dir + "/theirs").c_str(), 65534, 65534), 0);
  EXPECT_FALSE(d.open(dir + "/theirs/out2", true, &why));
  EXPECT_NE(why.find("'theirs' on the way is a symbolic link of uid 65534"), std::string::npos)
      << why;
  EXPECT_NE(::stat((dir + "/real/out2").c_str(), &st), 0) << "created through their link";
}

}  // namespace
}  // namespace fabtrace
