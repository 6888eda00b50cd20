// FABTRACE_DIR / --dir / -o templates (common/path_template.h): what each %
// expands to, what is refused, and that the template's own directories are
// created safely: never through a planted link, never someone else's.
#include "common/path_template.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>

#include "tests/unit/scratch_dir.h"

namespace fabtrace {
namespace {

using test::ScratchDir;

std::map<std::string, std::string>& vars() {
  static std::map<std::string, std::string> v;
  return v;
}

TemplateValues values(const std::string& job = "4242") {
  TemplateValues v;
  v.job_id = job;
  v.host = "node07";
  v.pid = 1234;
  v.getenv = [](const char* n) -> const char* {
    const auto it = vars().find(n);
    return it == vars().end() ? nullptr : it->second.c_str();
  };
  return v;
}

std::string expand(const std::string& tmpl, const TemplateValues& v, std::string* error,
                   size_t* first = nullptr) {
  std::string out;
  size_t f = 0;
  error->clear();
  if (!expand_path_template(tmpl, v, &out, &f, error)) return "<refused>";
  if (first) *first = f;
  return out;
}

TEST(PathTemplate, EachPercentExpands) {
  vars() = {{"USER", "alice"}, {"RUN", "r-7"}};
  std::string err;
  size_t first = 0;
  EXPECT_EQ(expand("/scratch/%q{USER}/%j/%h.%p", values(), &err, &first),
            "/scratch/alice/4242/node07.1234")
      << err;
  EXPECT_EQ(first, 9u);  // where "alice" starts
  EXPECT_EQ(expand("out-%q{RUN}-%%", values(), &err), "out-r-7-%") << err;
  EXPECT_EQ(expand("plain/dir", values(), &err, &first), "plain/dir");
  EXPECT_EQ(first, std::string::npos);
  EXPECT_FALSE(is_path_template("plain/dir"));
  EXPECT_TRUE(is_path_template("a/%j"));
  // Outside a job.
  EXPECT_EQ(expand("%j", values(""), &err), "nojob");
}

TEST(PathTemplate, ValuesThatLeaveTheirComponentAreRefused) {
  vars() = {{"UP", "/.."}, {"DOTS", ".."}, {"SUB", "a/b"}, {"EMPTY", ""}};
  std::string err;
  EXPECT_EQ(expand("/scratch/%q{UP}/x", values(), &err), "<refused>");
  EXPECT_NE(err.find("not a directory name"), std::string::npos) << err;
  EXPECT_EQ(expand("/scratch/%q{DOTS}", values(), &err), "<refused>");
  EXPECT_EQ(expand("/scratch/%q{SUB}", values(), &err), "<refused>");
  // A job id from a hostile environment is no different.
  EXPECT_EQ(expand("/scratch/%j", values("../../etc"), &err), "<refused>");
  EXPECT_EQ(expand("/scratch/%q{EMPTY}", values(), &err), "<refused>");
  EXPECT_NE(err.find("EMPTY is not set"), std::string::npos) << err;
  EXPECT_EQ(expand("/scratch/%q{UNSET}", values(), &err), "<refused>");
  EXPECT_EQ(expand("/scratch/%q", values(), &err), "<refused>");
  EXPECT_EQ(expand("/scratch/%q{}", values(), &err), "<refused>");
  EXPECT_EQ(expand("/scratch/%x", values(), &err), "<refused>");
  EXPECT_NE(err.find("unknown %x"), std::string::npos) << err;
  EXPECT_EQ(expand("/scratch/100%", values(), &err), "<refused>");
}

TEST(PathTemplate, CreatesTheTemplatesOwnDirectories) {
  ScratchDir d;
  std::string path, err;
  const int fd = open_template_dir(d.path("%j/%h/out"), values(), &path, &err);
  ASSERT_GE(fd, 0) << err;
  EXPECT_EQ(path, d.path("4242/node07/out"));
  struct stat st {
  }, via_fd{};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  ASSERT_EQ(fstat(fd, &via_fd), 0);
  EXPECT_EQ(st.st_ino, via_fd.st_ino);  // the fd is that directory
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_uid, geteuid());
  close(fd);
  // Again: the existing directories are the user's own, and used.
  const int again = open_template_dir(d.path("%j/%h/out"), values(), &path, &err);
  EXPECT_GE(again, 0) << err;
  if (again >= 0) close(again);
}

TEST(PathTemplate, TheLiteralPrefixIsMadeAPlainDirectoryIsNot) {
  ScratchDir d;
  std::string path, err;
  const int fd = open_template_dir(d.path("made/too/%j"), values(), &path, &err);
  EXPECT_GE(fd, 0) << err;
  if (fd >= 0) close(fd);
  EXPECT_EQ(path, d.path("made/too/4242"));
  // Without a '%', the directory is used as it is: FABTRACE_DIR=/nonexistent
  // creates nothing.
  EXPECT_LT(open_template_dir(d.path("missing"), values(), &path, &err), 0);
  EXPECT_NE(err.find("No such file"), std::string::npos) << err;
  EXPECT_NE(access(d.path("missing").c_str(), F_OK), 0);
}

TEST(PathTemplate, APlantedLinkIsNotFollowed) {
  ScratchDir d;
  d.mkdirs("victim");
  // Someone expects the job's directory and plants a link at its name.
  d.symlink(d.path("victim"), "4242");
  std::string path, err;
  EXPECT_LT(open_template_dir(d.path("%j"), values(), &path, &err), 0);
  EXPECT_NE(err.find("symbolic link"), std::string::npos) << err;
  // Deeper in the template's part too.
  d.mkdirs("4243");
  d.symlink(d.path("victim"), "4243/node07");
  EXPECT_LT(open_template_dir(d.path("%j/%h/x"), values("4243"), &path, &err), 0);
  EXPECT_NE(err.find("symbolic link"), std::string::npos) << err;
  // Nothing was created through the links.
  EXPECT_NE(access(d.path("victim/x").c_str(), F_OK), 0);
  // A link in the literal part is the user's own choice: followed.
  d.mkdirs("real");
  d.symlink(d.path("real"), "alias");
  const int fd = open_template_dir(d.path("alias/%j"), values(), &path, &err);
  EXPECT_GE(fd, 0) << err;
  if (fd >= 0) close(fd);
  EXPECT_EQ(access(d.path("real/4242").c_str(), F_OK), 0);
}

TEST(PathTemplate, SomeoneElsesDirectoryIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give a directory to another user";
  ScratchDir d;
  d.mkdirs("4242");
  ASSERT_EQ(chown(d.path("4242").c_str(), 65534, 65534), 0);
  std::string path, err;
  EXPECT_LT(open_template_dir(d.path("%j/out"), values(), &path, &err), 0);
  EXPECT_NE(err.find("owned by uid 65534"), std::string::npos) << err;
  EXPECT_NE(access(d.path("4242/out").c_str(), F_OK), 0);
}

}  // namespace
}  // namespace fabtrace
