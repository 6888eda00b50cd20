#include "common/rank.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace fabtrace {
namespace {

// ---- RankSpec::parse / contains ------------------------------------------------

TEST(RankSpec, SingleRanks) {
  RankSpec s;
  std::string err;
  ASSERT_TRUE(s.parse("0,8,16", &err)) << err;
  EXPECT_FALSE(s.empty());
  for (long r = -2; r < 40; ++r) EXPECT_EQ(s.contains(r), r == 0 || r == 8 || r == 16) << r;
}

TEST(RankSpec, RangesAndSingles) {
  RankSpec s;
  std::string err;
  ASSERT_TRUE(s.parse("0-7,512", &err)) << err;
  for (long r = 0; r <= 7; ++r) EXPECT_TRUE(s.contains(r)) << r;
  EXPECT_FALSE(s.contains(8));
  EXPECT_FALSE(s.contains(511));
  EXPECT_TRUE(s.contains(512));
  EXPECT_FALSE(s.contains(513));
  EXPECT_FALSE(s.contains(-1));
}

TEST(RankSpec, SpacesAroundTokens) {
  RankSpec s;
  std::string err;
  ASSERT_TRUE(s.parse("  0-7 , 512,\t3 ,  9 - 10 ", &err)) << err;
  for (long r : {0L, 3L, 7L, 9L, 10L, 512L}) EXPECT_TRUE(s.contains(r)) << r;
  for (long r : {8L, 11L, 511L, 513L}) EXPECT_FALSE(s.contains(r)) << r;
}

TEST(RankSpec, SingleElementRangeAndDuplicates) {
  RankSpec s;
  std::string err;
  ASSERT_TRUE(s.parse("5-5,5,4-6,6", &err)) << err;
  EXPECT_FALSE(s.contains(3));
  EXPECT_TRUE(s.contains(4));
  EXPECT_TRUE(s.contains(5));
  EXPECT_TRUE(s.contains(6));
  EXPECT_FALSE(s.contains(7));
}

TEST(RankSpec, UnsortedOverlappingAndAdjacentRanges) {
  RankSpec s;
  std::string err;
  ASSERT_TRUE(s.parse("100-200,0-10,11-20,150-300,50", &err)) << err;
  for (long r = -5; r < 400; ++r) {
    const bool want = (r >= 0 && r <= 20) || r == 50 || (r >= 100 && r <= 300);
    EXPECT_EQ(s.contains(r), want) << r;
  }
}

TEST(RankSpec, LargeValues) {
  RankSpec s;
  std::string err;
  ASSERT_TRUE(s.parse("1000000000-1000000005, 9223372036854775807", &err)) << err;
  EXPECT_TRUE(s.contains(1000000003));
  EXPECT_FALSE(s.contains(1000000006));
  EXPECT_TRUE(s.contains(LONG_MAX));
  EXPECT_FALSE(s.contains(LONG_MAX - 1));
  EXPECT_FALSE(s.parse("9223372036854775808", &err));  // overflows long
  EXPECT_FALSE(err.empty());
}

TEST(RankSpec, LargeRandomListsMatchBruteForce) {
  std::mt19937 rng(31337);
  for (int trial = 0; trial < 5; ++trial) {
    std::set<long> want;
    std::string spec;
    const int tokens = 2000 + trial * 1000;
    for (int i = 0; i < tokens; ++i) {
      if (!spec.empty()) spec += rng() % 2 ? "," : " , ";
      const long lo = static_cast<long>(rng() % 100000);
      if (rng() % 3 == 0) {
        const long hi = lo + static_cast<long>(rng() % 50);
        spec += std::to_string(lo) + "-" + std::to_string(hi);
        for (long r = lo; r <= hi; ++r) want.insert(r);
      } else {
        spec += std::to_string(lo);
        want.insert(lo);
      }
    }
    RankSpec s;
    std::string err;
    ASSERT_TRUE(s.parse(spec, &err)) << err;
    for (long r = -1; r <= 100100; ++r) ASSERT_EQ(s.contains(r), want.count(r) == 1) << r;
  }
}

TEST(RankSpec, MalformedSpecsAreRejected) {
  const char* bad[] = {
      "",  "   ",   "1,,2", ",1",  "1,",   "-1", "1,-2", "5-3", "a",   "3x",  "x3",   "1-",
      "-", "1-2-3", "1--2", "1 2", "0x10", "+3", "1.5",  "1;2", "1-a", "a-1", "3-,4", "1, ,2",
  };
  for (const char* spec : bad) {
    RankSpec s;
    std::string err;
    EXPECT_FALSE(s.parse(spec, &err)) << "'" << spec << "'";
    EXPECT_FALSE(err.empty()) << "'" << spec << "'";
    EXPECT_TRUE(s.empty()) << "'" << spec << "'";
  }
}

TEST(RankSpec, FailedParseLeavesSpecEmpty) {
  RankSpec s;
  std::string err;
  ASSERT_TRUE(s.parse("1-100", &err));
  EXPECT_TRUE(s.contains(50));
  EXPECT_FALSE(s.parse("1-100,oops", &err));
  EXPECT_TRUE(s.empty());
  EXPECT_FALSE(s.contains(50));
  EXPECT_NE(err.find("oops"), std::string::npos) << err;
}

TEST(RankSpec, ErrorPointerMayBeNull) {
  RankSpec s;
  EXPECT_FALSE(s.parse("1,,2", nullptr));
  EXPECT_TRUE(s.parse("1,2", nullptr));
  EXPECT_TRUE(s.contains(2));
}

TEST(RankSpec, ReparseReplacesPreviousSpec) {
  RankSpec s;
  std::string err;
  ASSERT_TRUE(s.parse("1-3", &err));
  ASSERT_TRUE(s.parse("10", &err));
  EXPECT_FALSE(s.contains(2));
  EXPECT_TRUE(s.contains(10));
}

TEST(RankSpec, DefaultIsEmpty) {
  RankSpec s;
  EXPECT_TRUE(s.empty());
  EXPECT_FALSE(s.contains(0));
}

// ---- detect_rank / detect_local_rank ---------------------------------------------

const char* const kRankVars[] = {"SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                 "RANK"};
const char* const kLocalVars[] = {"SLURM_LOCALID", "MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK",
                                  "PMI_LOCAL_RANK", "FLUX_TASK_LOCAL_ID"};

// Clears the launcher variables for the test and restores them afterwards.
class RankEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kRankVars) save(v);
    for (const char* v : kLocalVars) save(v);
  }
  void TearDown() override {
    for (const auto& s : saved_) {
      if (s.was_set)
        setenv(s.name.c_str(), s.value.c_str(), 1);
      else
        unsetenv(s.name.c_str());
    }
  }

 private:
  struct Saved {
    std::string name, value;
    bool was_set;
  };
  void save(const char* name) {
    const char* v = std::getenv(name);
    saved_.push_back({name, v ? v : "", v != nullptr});
    unsetenv(name);
  }
  std::vector<Saved> saved_;
};

TEST_F(RankEnvTest, NoLauncher) {
  const RankId id = detect_rank();
  EXPECT_EQ(id.text, "NA");
  EXPECT_EQ(id.value, -1);
  EXPECT_EQ(detect_local_rank(), -1);
}

TEST_F(RankEnvTest, EachRankVariableIsRecognised) {
  long n = 3;
  for (const char* v : kRankVars) {
    setenv(v, std::to_string(n).c_str(), 1);
    const RankId id = detect_rank();
    EXPECT_EQ(id.text, std::to_string(n)) << v;
    EXPECT_EQ(id.value, n) << v;
    unsetenv(v);
    ++n;
  }
}

TEST_F(RankEnvTest, RankPrecedenceFollowsTheDocumentedOrder) {
  setenv("RANK", "5", 1);
  setenv("PMI_RANK", "4", 1);
  setenv("PMIX_RANK", "3", 1);
  setenv("OMPI_COMM_WORLD_RANK", "2", 1);
  setenv("SLURM_PROCID", "1", 1);
  EXPECT_EQ(detect_rank().value, 1);
  unsetenv("SLURM_PROCID");
  EXPECT_EQ(detect_rank().value, 2);
  unsetenv("OMPI_COMM_WORLD_RANK");
  EXPECT_EQ(detect_rank().value, 3);
  unsetenv("PMIX_RANK");
  EXPECT_EQ(detect_rank().value, 4);
  unsetenv("PMI_RANK");
  EXPECT_EQ(detect_rank().value, 5);
}

TEST_F(RankEnvTest, NonNumericRankKeepsTextWithUnknownValue) {
  setenv("PMIX_RANK", "node7:task", 1);
  setenv("RANK", "9", 1);  // later in the order: not consulted
  const RankId id = detect_rank();
  EXPECT_EQ(id.text, "node7:task");
  EXPECT_EQ(id.value, -1);

  setenv("PMIX_RANK", "-3", 1);
  EXPECT_EQ(detect_rank().value, -1);
  EXPECT_EQ(detect_rank().text, "-3");
}

TEST_F(RankEnvTest, LocalRankTakesFirstNumericVariable) {
  setenv("FLUX_TASK_LOCAL_ID", "6", 1);
  EXPECT_EQ(detect_local_rank(), 6);
  setenv("PMI_LOCAL_RANK", "oops", 1);  // earlier but not a number: skipped
  EXPECT_EQ(detect_local_rank(), 6);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "2", 1);
  EXPECT_EQ(detect_local_rank(), 2);
  setenv("MPI_LOCALRANKID", "", 1);  // empty: skipped
  EXPECT_EQ(detect_local_rank(), 2);
  setenv("SLURM_LOCALID", "0", 1);
  EXPECT_EQ(detect_local_rank(), 0);
}

TEST_F(RankEnvTest, EachLocalVariableIsRecognised) {
  long n = 11;
  for (const char* v : kLocalVars) {
    setenv(v, std::to_string(n).c_str(), 1);
    EXPECT_EQ(detect_local_rank(), n) << v;
    unsetenv(v);
    ++n;
  }
}

}  // namespace
}  // namespace fabtrace

namespace fabtrace {
namespace {

// 6. The rank text is one token everywhere it is written (file names, the
// report JSON, the oplog, the counter CSV): the launcher's "1,2" was written
// raw in two of them and sanitized in the third, and "../x" left the directory.
TEST(RankId, LauncherTextBecomesOneSafeToken) {
  const char* vars[] = {"SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "RANK"};
  for (const char* v : vars) unsetenv(v);
  ASSERT_EQ(setenv("SLURM_PROCID", "1,2", 1), 0);
  EXPECT_EQ(detect_rank().text, "1_2");
  ASSERT_EQ(setenv("SLURM_PROCID", "../../etc/x y", 1), 0);
  EXPECT_EQ(detect_rank().text, ".._.._etc_x_y");
  ASSERT_EQ(setenv("SLURM_PROCID", "7", 1), 0);
  EXPECT_EQ(detect_rank().text, "7");
  EXPECT_EQ(detect_rank().value, 7);
  unsetenv("SLURM_PROCID");
  EXPECT_EQ(output_token(std::string(500, 'r')).size(), 64u);
  EXPECT_EQ(output_token(""), "?");
}

}  // namespace
}  // namespace fabtrace
