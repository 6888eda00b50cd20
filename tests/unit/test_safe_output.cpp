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

#include "tests/report_fixtures/synthetic_job.h"

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

}  // namespace
}  // namespace fabtrace
