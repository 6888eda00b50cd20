// Replays the committed fuzz corpus (corpus/<target>/*: seeds and the
// mutated files the fuzzer kept, small files) through every fuzz entry point.
// Under ASan+UBSan (scripts/test) a memory error or undefined behaviour on any
// of them fails the run; in every build a crash or hang does.
#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_targets.h"

namespace fabtrace::fuzz {
namespace {

std::vector<std::string> corpus_files(const std::string& target) {
  const std::string dir = std::string(FABTRACE_FUZZ_CORPUS) + "/" + target;
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') out.push_back(dir + "/" + e->d_name);
    ::closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

class FuzzReplay : public ::testing::TestWithParam<FuzzTarget> {};

TEST_P(FuzzReplay, CorpusRunsClean) {
  const FuzzTarget& t = GetParam();
  const std::vector<std::string> files = corpus_files(t.name);
  // A target without a corpus would pass having tested nothing.
  ASSERT_GE(files.size(), 10u) << "corpus/" << t.name << " is missing or nearly empty";
  for (const std::string& path : files) {
    std::ifstream in(path, std::ios::binary);
    ASSERT_TRUE(in) << path;
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    SCOPED_TRACE(path);
    EXPECT_EQ(t.fn(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Readers, FuzzReplay, ::testing::ValuesIn(fuzz_targets()),
                         [](const ::testing::TestParamInfo<FuzzTarget>& i) {
                           return std::string(i.param.name);
                         });

}  // namespace
}  // namespace fabtrace::fuzz
