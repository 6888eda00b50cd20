#include "common/version.h"
#include "sampler/cxi_counters.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "tests/unit/fake_cxi_tree.h"

namespace fabtrace {
namespace {

using test::FakeCxiTree;
using Config = CounterSampler::Config;

// Sets/unsets environment variables for one test and restores them afterwards.
class ScopedEnv {
 public:
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second.first)
        setenv(it->first.c_str(), it->second.second.c_str(), 1);
      else
        unsetenv(it->first.c_str());
    }
  }
  void set(const char* name, const char* value) {
    save(name);
    setenv(name, value, 1);
  }
  void unset(const char* name) {
    save(name);
    unsetenv(name);
  }

 private:
  void save(const char* name) {
    const char* v = std::getenv(name);
    saved_.push_back({name, {v != nullptr, v ? v : ""}});
  }
  std::vector<std::pair<std::string, std::pair<bool, std::string>>> saved_;
};

// Every variable the sampler's configuration or the local-rank detection reads.
void clear_sampler_env(ScopedEnv* env) {
  for (const char* v :
       {"FABTRACE_NIC", "FABTRACE_NIC_MS", "FABTRACE_NIC_DEV", "FABTRACE_NIC_COUNTERS",
        "FABTRACE_NIC_MAX_MB", "FABTRACE_CXI_SYSFS_ROOT", "FABTRACE_CXI_RUN_ROOT", "SLURM_LOCALID",
        "MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_LOCAL_RANK", "FLUX_TASK_LOCAL_ID"})
    env->unset(v);
}

template <typename F>
std::string stderr_of(F&& f) {
  testing::internal::CaptureStderr();
  f();
  return testing::internal::GetCapturedStderr();
}

size_t line_count(const std::string& s) {
  return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
}

std::vector<std::string> prefixed(const std::string& prefix,
                                  const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const std::string& n : names) out.push_back(prefix + n);
  return out;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// The curated names (in curated order) that the standard fake tree provides.
std::vector<std::string> expected_default(const std::string& dev) {
  std::vector<std::string> out;
  for (const std::string& n : cxi_curated_telemetry())
    if (contains(FakeCxiTree::standard_curated_telemetry(), n)) out.push_back(dev + ":" + n);
  for (const std::string& n : cxi_curated_rh())
    if (contains(FakeCxiTree::standard_curated_rh(), n)) out.push_back(dev + ":rh:" + n);
  return out;
}

std::vector<std::string> all_telemetry() {
  return sorted(
      concat(FakeCxiTree::standard_curated_telemetry(), FakeCxiTree::standard_extra_telemetry()));
}

std::vector<std::string> all_rh() {
  return sorted(concat(FakeCxiTree::standard_curated_rh(), FakeCxiTree::standard_extra_rh()));
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Threads of this process whose name is the sampler's.
// Polls `done` every millisecond until it holds or `limit` has passed: the
// sampler's thread gets there on its own time.
template <class Done>
void wait_for(Done done, std::chrono::seconds limit) {
  const auto t0 = std::chrono::steady_clock::now();
  while (!done() && std::chrono::steady_clock::now() - t0 < limit)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

int sampler_threads() {
  int n = 0;
  DIR* d = opendir("/proc/self/task");
  if (!d) return -1;
  while (struct dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::string comm = read_file(std::string("/proc/self/task/") + e->d_name + "/comm");
    if (comm == "fabtrace-nic\n") ++n;
  }
  closedir(d);
  return n;
}

class CxiCounterTest : public ::testing::Test {
 protected:
  void SetUp() override { clear_sampler_env(&env_); }

  Config config() const {
    Config c;
    c.sysfs_root = tree_.sysfs_root();
    c.run_root = tree_.run_root();
    c.interval_ms = 5;
    c.max_bytes = 1 << 20;
    c.local_rank = -1;
    return c;
  }
  // The config of a sampler that samples every `interval_ms`.
  Config config_every(uint64_t interval_ms) const {
    Config c = config();
    c.interval_ms = interval_ms;
    return c;
  }
  Config config(const std::string& devices, const std::string& counters) const {
    Config c = config();
    c.devices = devices;
    c.counters = counters;
    return c;
  }

  // Labels chosen by a selection on cxi0 (via the local rank, so no device message).
  std::vector<std::string> labels_for(const std::string& counters, std::string* err = nullptr) {
    Config c = config("", counters);
    c.local_rank = 0;
    CounterSampler s(c);
    std::string out = stderr_of([&] { EXPECT_TRUE(s.open()); });
    if (err)
      *err = out;
    else
      EXPECT_EQ(out, "") << counters;
    EXPECT_EQ(s.devices(), std::vector<std::string>{"cxi0"});
    return s.labels();
  }

  ScopedEnv env_;
  FakeCxiTree tree_;
};

class CxiCounterStdTest : public CxiCounterTest {
 protected:
  void SetUp() override {
    CxiCounterTest::SetUp();
    tree_.populate_standard();
  }
};

// ---- parse_cxi_counter ---------------------------------------------------------

TEST(CxiCounterParse, ValueAndStamp) {
  uint64_t v = 1, st = 1;
  const std::string s = "123@1712345678.000000123\n";
  ASSERT_TRUE(parse_cxi_counter(s.data(), s.size(), &v, &st));
  EXPECT_EQ(v, 123u);
  EXPECT_EQ(st, 1712345678000000123ull);
}

TEST(CxiCounterParse, ValueOnly) {
  uint64_t v = 0, st = 9;
  ASSERT_TRUE(parse_cxi_counter("42\n", 3, &v, &st));
  EXPECT_EQ(v, 42u);
  EXPECT_EQ(st, 0u);
  ASSERT_TRUE(parse_cxi_counter("  7", 3, &v, &st));
  EXPECT_EQ(v, 7u);
  ASSERT_TRUE(parse_cxi_counter("5@", 2, &v, &st));  // a stamp without digits reads as none
  EXPECT_EQ(v, 5u);
  EXPECT_EQ(st, 0u);
  ASSERT_TRUE(parse_cxi_counter("0", 1, &v, nullptr));
  EXPECT_EQ(v, 0u);
}

TEST(CxiCounterParse, Limits) {
  uint64_t v = 0, st = 0;
  const std::string max = "18446744073709551615@1.5";
  ASSERT_TRUE(parse_cxi_counter(max.data(), max.size(), &v, &st));
  EXPECT_EQ(v, UINT64_MAX);
  EXPECT_EQ(st, 1500000000u);
  const std::string over = "18446744073709551616\n";
  EXPECT_FALSE(parse_cxi_counter(over.data(), over.size(), &v, &st));
}

TEST(CxiCounterParse, FractionIsDecimal) {
  uint64_t v = 0, st = 0;
  ASSERT_TRUE(parse_cxi_counter("7@10.5", 6, &v, &st));
  EXPECT_EQ(st, 10500000000ull);
  const std::string longfrac = "7@10.1234567891\n";
  ASSERT_TRUE(parse_cxi_counter(longfrac.data(), longfrac.size(), &v, &st));
  EXPECT_EQ(st, 10123456789ull);
  ASSERT_TRUE(parse_cxi_counter("7@10", 4, &v, &st));
  EXPECT_EQ(st, 10000000000ull);
}

TEST(CxiCounterParse, TrailingBytesIgnored) {
  uint64_t v = 0, st = 0;
  const std::string s = "5@10.000000001\nstale junk 99";
  ASSERT_TRUE(parse_cxi_counter(s.data(), s.size(), &v, &st));
  EXPECT_EQ(v, 5u);
  EXPECT_EQ(st, 10000000001ull);
  // Only len bytes are looked at.
  ASSERT_TRUE(parse_cxi_counter("123456", 3, &v, &st));
  EXPECT_EQ(v, 123u);
}

TEST(CxiCounterParse, Rejects) {
  uint64_t v = 0, st = 0;
  EXPECT_FALSE(parse_cxi_counter("", 0, &v, &st));
  EXPECT_FALSE(parse_cxi_counter("\n", 1, &v, &st));
  EXPECT_FALSE(parse_cxi_counter("abc", 3, &v, &st));
  EXPECT_FALSE(parse_cxi_counter("-1", 2, &v, &st));
  EXPECT_FALSE(parse_cxi_counter("@5", 2, &v, &st));
  EXPECT_FALSE(parse_cxi_counter("n/a\n", 4, &v, &st));
}

// ---- selection ------------------------------------------------------------------

TEST_F(CxiCounterStdTest, DefaultIsCuratedPresentOnly) {
  const std::vector<std::string> labels = labels_for("");
  EXPECT_EQ(labels, expected_default("cxi0"));
  for (const std::string& extra : FakeCxiTree::standard_extra_telemetry())
    EXPECT_FALSE(contains(labels, "cxi0:" + extra)) << extra;
  // The curated names exist in the real lists.
  EXPECT_EQ(cxi_curated_telemetry().front(), "hni_sts_tx_ok_octets");
  EXPECT_EQ(cxi_curated_rh().back(), "nacks");
  EXPECT_GT(cxi_curated_telemetry().size(), 80u);
}

TEST_F(CxiCounterStdTest, DefaultKeywordMatchesDefault) {
  EXPECT_EQ(labels_for("default"), expected_default("cxi0"));
  EXPECT_EQ(labels_for("default,lpe_net_match_success_0"),
            concat(expected_default("cxi0"), {"cxi0:lpe_net_match_success_0"}));
}

TEST_F(CxiCounterStdTest, AllIsEveryTelemetryThenEveryRh) {
  // No "config" subdirectory, no write-only reset file.
  EXPECT_EQ(labels_for("all"),
            concat(prefixed("cxi0:", all_telemetry()), prefixed("cxi0:rh:", all_rh())));
}

TEST_F(CxiCounterStdTest, RhAll) {
  EXPECT_EQ(labels_for("rh:"), prefixed("cxi0:rh:", all_rh()));
  EXPECT_EQ(labels_for("rh:*"), prefixed("cxi0:rh:", all_rh()));
}

TEST_F(CxiCounterStdTest, RhNameAndPrefix) {
  EXPECT_EQ(labels_for("rh:spt_timeouts"), std::vector<std::string>{"cxi0:rh:spt_timeouts"});
  EXPECT_EQ(labels_for("rh:nack*"),
            (std::vector<std::string>{"cxi0:rh:nack_resource_busy", "cxi0:rh:nacks"}));
}

TEST_F(CxiCounterStdTest, TelemetryPrefix) {
  EXPECT_EQ(labels_for("hni_*"),
            (std::vector<std::string>{"cxi0:hni_discard_cntr_0", "cxi0:hni_pause_sent",
                                      "cxi0:hni_sts_rx_ok_octets", "cxi0:hni_sts_tx_ok_octets",
                                      "cxi0:hni_tx_paused_0"}));
  EXPECT_EQ(labels_for("*"), prefixed("cxi0:", all_telemetry()));
}

TEST_F(CxiCounterStdTest, ExplicitNamesKeepTheirOrder) {
  EXPECT_EQ(labels_for("lpe_net_match_success_1, pct_spt_timeouts"),
            (std::vector<std::string>{"cxi0:lpe_net_match_success_1", "cxi0:pct_spt_timeouts"}));
}

TEST_F(CxiCounterStdTest, MixtureIsDeduplicated) {
  const std::vector<std::string> labels =
      labels_for("pct_spt_timeouts,hni_*,rh:nacks,pct_spt_timeouts,rh:*,hni_pause_sent,,all");
  std::vector<std::string> want = {"cxi0:pct_spt_timeouts"};
  for (const std::string& n : all_telemetry())
    if (n.compare(0, 4, "hni_") == 0) want.push_back("cxi0:" + n);
  want.push_back("cxi0:rh:nacks");
  for (const std::string& n : all_rh())
    if (n != "nacks") want.push_back("cxi0:rh:" + n);
  for (const std::string& n : all_telemetry())
    if (n.compare(0, 4, "hni_") != 0 && n != "pct_spt_timeouts") want.push_back("cxi0:" + n);
  EXPECT_EQ(labels, want);
  EXPECT_EQ(std::set<std::string>(labels.begin(), labels.end()).size(), labels.size());
}

TEST_F(CxiCounterStdTest, UnmatchedTokensWarnOnce) {
  std::string err;
  const std::vector<std::string> labels =
      labels_for("no_such_counter,rh:no_such_stat,zzz*,pct_spt_timeouts,rh:reset_counters", &err);
  EXPECT_EQ(labels, std::vector<std::string>{"cxi0:pct_spt_timeouts"});
  EXPECT_EQ(line_count(err), 1u) << err;
  EXPECT_EQ(err.rfind("[fabtrace] warning: FABTRACE_NIC_COUNTERS", 0), 0u) << err;
  for (const char* t : {"no_such_counter", "rh:no_such_stat", "zzz*", "rh:reset_counters"})
    EXPECT_NE(err.find(t), std::string::npos) << t;
  EXPECT_EQ(err.find("pct_spt_timeouts"), std::string::npos) << err;
}

TEST_F(CxiCounterStdTest, MalformedTokensWarnAndFallBackToDefault) {
  std::string err;
  EXPECT_EQ(labels_for("../../etc/passwd,a*b,rh:x/y", &err), expected_default("cxi0"));
  EXPECT_EQ(line_count(err), 1u) << err;
  EXPECT_NE(err.find("../../etc/passwd"), std::string::npos) << err;
  EXPECT_NE(err.find("default set"), std::string::npos) << err;

  // With a valid token beside them, only that one is used.
  EXPECT_EQ(labels_for("a*b,pct_spt_timeouts", &err),
            std::vector<std::string>{"cxi0:pct_spt_timeouts"});
  EXPECT_EQ(line_count(err), 1u) << err;
  EXPECT_EQ(err.find("default set"), std::string::npos) << err;
}

TEST_F(CxiCounterStdTest, MissingAndUnreadableFilesAreSkipped) {
  ASSERT_EQ(::unlink(tree_.telemetry_path("cxi0", "hni_pause_sent").c_str()), 0);
  // A dangling symlink, a file that holds no number, a directory in place of a counter.
  ASSERT_EQ(
      ::symlink("/nonexistent/fabtrace", tree_.telemetry_path("cxi0", "hni_fgfc_discard").c_str()),
      0);
  FakeCxiTree::write_text(tree_.telemetry_path("cxi0", "cq_cq_oxe_num_flits"), "n/a\n");
  ASSERT_EQ(::mkdir(tree_.telemetry_path("cxi0", "hni_pause_refresh").c_str(), 0755), 0);
  std::vector<std::string> want = expected_default("cxi0");
  want.erase(std::find(want.begin(), want.end(), "cxi0:hni_pause_sent"));
  EXPECT_EQ(labels_for(""), want);

  std::string err;
  EXPECT_EQ(
      labels_for("hni_fgfc_discard,cq_cq_oxe_num_flits,hni_pause_refresh,pct_spt_timeouts", &err),
      std::vector<std::string>{"cxi0:pct_spt_timeouts"});
  EXPECT_EQ(line_count(err), 1u) << err;

  if (geteuid() != 0) {  // root reads through permissions
    ASSERT_EQ(::chmod(tree_.telemetry_path("cxi0", "pct_spt_timeouts").c_str(), 0), 0);
    EXPECT_FALSE(contains(labels_for(""), "cxi0:pct_spt_timeouts"));
  }
}

// ---- devices ----------------------------------------------------------------------

TEST_F(CxiCounterStdTest, LocalRankPicksItsDevice) {
  env_.set("SLURM_LOCALID", "1");
  env_.set("FABTRACE_CXI_SYSFS_ROOT", tree_.sysfs_root().c_str());
  env_.set("FABTRACE_CXI_RUN_ROOT", tree_.run_root().c_str());
  Config c = CounterSampler::config_from_env();
  EXPECT_EQ(c.local_rank, 1);
  CounterSampler s(c);
  EXPECT_EQ(stderr_of([&] { EXPECT_TRUE(s.open()); }), "");
  EXPECT_EQ(s.devices(), std::vector<std::string>{"cxi1"});
  EXPECT_EQ(s.labels(), expected_default("cxi1"));
}

TEST_F(CxiCounterStdTest, LocalRankWithoutItsDeviceSamplesAll) {
  Config c = config();
  c.local_rank = 5;
  CounterSampler s(c);
  EXPECT_EQ(stderr_of([&] { EXPECT_TRUE(s.open()); }), "");
  EXPECT_EQ(s.devices(), (std::vector<std::string>{"cxi0", "cxi1"}));
  EXPECT_EQ(s.labels(), concat(expected_default("cxi0"), expected_default("cxi1")));
  EXPECT_EQ(s.columns()[2], "cxi0:telemetry_wall_ns");
  EXPECT_EQ(s.column_index("cxi1:telemetry_wall_ns"),
            static_cast<int>(3 + expected_default("cxi0").size()));
}

TEST_F(CxiCounterStdTest, NoLocalRankSamplesAll) {
  CounterSampler s(config());
  EXPECT_EQ(stderr_of([&] { EXPECT_TRUE(s.open()); }), "");
  EXPECT_EQ(s.devices(), (std::vector<std::string>{"cxi0", "cxi1"}));
}

TEST_F(CxiCounterStdTest, ExplicitDevices) {
  struct Case {
    const char* spec;
    std::vector<std::string> want;
  } cases[] = {{"cxi1", {"cxi1"}},
               {"cxi1, cxi0", {"cxi0", "cxi1"}},
               {"cxi0,cxi0", {"cxi0"}},
               {"all", {"cxi0", "cxi1"}},
               {"cxi1,all", {"cxi0", "cxi1"}}};
  for (const Case& k : cases) {
    Config c = config(k.spec, "");
    c.local_rank = 0;  // an explicit list wins over the local rank
    CounterSampler s(c);
    EXPECT_EQ(stderr_of([&] { EXPECT_TRUE(s.open()); }), "") << k.spec;
    EXPECT_EQ(s.devices(), k.want) << k.spec;
  }
}

TEST_F(CxiCounterStdTest, UnknownDevicesWarnOnce) {
  CounterSampler s(config("cxi0,cxi9,cxi_user,cxi9", ""));
  const std::string err = stderr_of([&] { EXPECT_TRUE(s.open()); });
  EXPECT_EQ(s.devices(), std::vector<std::string>{"cxi0"});
  EXPECT_EQ(line_count(err), 1u) << err;
  EXPECT_NE(err.find("cxi9,cxi_user"), std::string::npos) << err;
}

TEST_F(CxiCounterStdTest, NoListedDeviceFallsBackToAll) {
  CounterSampler s(config("cxi5,cxi6", ""));
  const std::string err = stderr_of([&] { EXPECT_TRUE(s.open()); });
  EXPECT_EQ(s.devices(), (std::vector<std::string>{"cxi0", "cxi1"}));
  EXPECT_EQ(line_count(err), 1u) << err;
  EXPECT_NE(err.find("cxi5,cxi6"), std::string::npos) << err;
}

TEST_F(CxiCounterTest, DevicesInNumericOrderAndNonDevicesIgnored) {
  for (int n : {10, 2, 0}) {
    tree_.add_device(n);
    tree_.add_rh("cxi" + std::to_string(n), "nacks");
  }
  tree_.add_non_device("cxi_user", true);
  tree_.add_non_device("cxi3", false);  // a file, not a device directory
  tree_.add_non_device("cxi4x", true);
  CounterSampler s(config("all", ""));
  EXPECT_TRUE(s.open());
  EXPECT_EQ(s.devices(), (std::vector<std::string>{"cxi0", "cxi2", "cxi10"}));
}

TEST_F(CxiCounterTest, NoDevicesIsSilentAndFree) {
  CounterSampler s(config());
  EXPECT_EQ(stderr_of([&] {
              EXPECT_FALSE(s.start());
              EXPECT_FALSE(s.open());
              EXPECT_FALSE(s.sample_once());
              s.stop();
            }),
            "");
  EXPECT_TRUE(s.devices().empty());
  EXPECT_TRUE(s.labels().empty());
  EXPECT_EQ(s.samples(), 0u);
  EXPECT_EQ(s.reserved_bytes(), 0u);
  EXPECT_FALSE(s.write_csv(tree_.root() + "/x.csv", "h", "0", 1));
  EXPECT_EQ(sampler_threads(), 0);
}

TEST_F(CxiCounterTest, MissingRootIsSilentUnlessDevicesWereAsked) {
  Config c = config();
  c.sysfs_root = tree_.root() + "/no/such/dir";
  {
    CounterSampler s(c);
    EXPECT_EQ(stderr_of([&] { EXPECT_FALSE(s.start()); }), "");
  }
  c.devices = "cxi0";
  CounterSampler s(c);
  const std::string err = stderr_of([&] { EXPECT_FALSE(s.start()); });
  EXPECT_EQ(line_count(err), 1u) << err;
  EXPECT_NE(err.find("/no/such/dir"), std::string::npos) << err;
}

TEST_F(CxiCounterTest, DevicesWithoutCounterFilesDoNotStart) {
  tree_.add_device(0);
  {
    CounterSampler s(config());
    EXPECT_EQ(stderr_of([&] { EXPECT_FALSE(s.start()); }), "");
  }
  CounterSampler s(config("cxi0", ""));
  const std::string err = stderr_of([&] { EXPECT_FALSE(s.start()); });
  EXPECT_EQ(line_count(err), 1u) << err;
  EXPECT_EQ(sampler_threads(), 0);
}

TEST_F(CxiCounterStdTest, DisabledDoesNothing) {
  Config c = config();
  c.enabled = false;
  CounterSampler s(c);
  EXPECT_EQ(stderr_of([&] {
              EXPECT_FALSE(s.start());
              EXPECT_FALSE(s.sample_once());
            }),
            "");
  EXPECT_TRUE(s.labels().empty());
  EXPECT_EQ(sampler_threads(), 0);
}

// ---- settings from the environment ---------------------------------------------

// The FABTRACE_NIC_* variables a case sets, and the whole Config they give
// (read without a warning), as describe() writes it: enabled, interval_ms,
// [devices], [counters], max_bytes, sysfs_root, run_root, local_rank.
struct EnvCase {
  const char* name;
  std::vector<std::pair<const char*, const char*>> env;
  const char* want;
};

void PrintTo(const EnvCase& c, std::ostream* os) { *os << c.name; }

std::string describe(const Config& c) {
  return std::to_string(c.enabled) + " " + std::to_string(c.interval_ms) + " [" + c.devices +
         "] [" + c.counters + "] " + std::to_string(c.max_bytes) + " " + c.sysfs_root + " " +
         c.run_root + " " + std::to_string(c.local_rank);
}

class CxiEnvTest : public CxiCounterTest, public ::testing::WithParamInterface<EnvCase> {};

TEST_P(CxiEnvTest, ReadsTheWholeConfig) {
  for (const auto& kv : GetParam().env) env_.set(kv.first, kv.second);
  Config c;
  EXPECT_EQ(stderr_of([&] { c = CounterSampler::config_from_env(); }), "");
  EXPECT_EQ(describe(c), GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    Settings, CxiEnvTest,
    ::testing::Values(EnvCase{"Defaults", {}, "1 100 [] [] 268435456 /sys/class/cxi /run/cxi -1"},
                      EnvCase{"Values",
                              {{"FABTRACE_NIC", "on"},
                               {"FABTRACE_NIC_MS", "5"},
                               {"FABTRACE_NIC_DEV", " cxi1,cxi0 "},
                               {"FABTRACE_NIC_COUNTERS", "rh:,hni_*"},
                               {"FABTRACE_NIC_MAX_MB", "2"},
                               {"FABTRACE_CXI_SYSFS_ROOT", "/x/sys"},
                               {"FABTRACE_CXI_RUN_ROOT", "/x/run"},
                               {"MPI_LOCALRANKID", "3"}},
                              // blanks trimmed; the local rank from MPI_LOCALRANKID
                              "1 5 [cxi1,cxi0] [rh:,hni_*] 2097152 /x/sys /x/run 3"}),
    [](const ::testing::TestParamInfo<EnvCase>& i) { return std::string(i.param.name); });

TEST_F(CxiCounterTest, EnvBadValuesWarnOnceEachAndUseDefaults) {
  env_.set("FABTRACE_NIC", "maybe");
  env_.set("FABTRACE_NIC_MS", "0");
  env_.set("FABTRACE_NIC_MAX_MB", "lots");
  Config c;
  std::string err = stderr_of([&] { c = CounterSampler::config_from_env(); });
  EXPECT_EQ(line_count(err), 3u) << err;
  EXPECT_NE(err.find("FABTRACE_NIC=maybe"), std::string::npos) << err;
  EXPECT_NE(err.find("FABTRACE_NIC_MS=0"), std::string::npos) << err;
  EXPECT_NE(err.find("FABTRACE_NIC_MAX_MB=lots"), std::string::npos) << err;
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.interval_ms, 100u);
  EXPECT_EQ(c.max_bytes, uint64_t{256} << 20);

  env_.set("FABTRACE_NIC_MS", "60001");
  err = stderr_of([&] { c = CounterSampler::config_from_env(); });
  EXPECT_NE(err.find("FABTRACE_NIC_MS=60001"), std::string::npos) << err;
  EXPECT_EQ(c.interval_ms, 100u);
}

TEST_F(CxiCounterTest, EnvDisabledReadsNothingElse) {
  env_.set("FABTRACE_NIC", "0");
  env_.set("FABTRACE_NIC_MS", "garbage");
  Config c;
  EXPECT_EQ(stderr_of([&] { c = CounterSampler::config_from_env(); }), "");
  EXPECT_FALSE(c.enabled);
  CounterSampler s(c);
  EXPECT_FALSE(s.start());
}

// ---- values ---------------------------------------------------------------------------

TEST_F(CxiCounterTest, ValuesAndStampsReadExactly) {
  tree_.add_device(0);
  tree_.add_device(1);
  FakeCxiTree::write_text(tree_.telemetry_path("cxi0", "hni_sts_tx_ok_octets"),
                          "18446744073709551615@1712345678.000000123\n");
  FakeCxiTree::write_text(tree_.telemetry_path("cxi0", "hni_pause_sent"), "7@1712345679.5");
  FakeCxiTree::write_text(tree_.telemetry_path("cxi0", "pct_spt_timeouts"),
                          "0@1712345600.999999999\n");
  FakeCxiTree::write_text(tree_.rh_path("cxi0", "nacks"), "42\n");
  FakeCxiTree::write_text(tree_.rh_path("cxi1", "nacks"), "5\n");  // cxi1: no telemetry at all

  CounterSampler s(config("all", "all"));
  ASSERT_TRUE(s.open());
  ASSERT_EQ(s.labels(),
            (std::vector<std::string>{"cxi0:hni_pause_sent", "cxi0:hni_sts_tx_ok_octets",
                                      "cxi0:pct_spt_timeouts", "cxi0:rh:nacks", "cxi1:rh:nacks"}));
  const uint64_t mono0 = mono_ns(), real0 = real_ns();
  ASSERT_TRUE(s.sample_once());
  const uint64_t mono1 = mono_ns(), real1 = real_ns();
  ASSERT_EQ(s.samples(), 1u);
  auto v = [&](const char* col) {
    const int i = s.column_index(col);
    EXPECT_GE(i, 0) << col;
    return s.value(0, static_cast<size_t>(i));
  };
  EXPECT_GE(v("t_mono_ns"), mono0);  // absolute CLOCK_MONOTONIC
  EXPECT_LE(v("t_mono_ns"), mono1);
  EXPECT_GE(v("wall_ns"), real0);
  EXPECT_LE(v("wall_ns"), real1);
  EXPECT_EQ(v("cxi0:hni_sts_tx_ok_octets"), UINT64_MAX);
  EXPECT_EQ(v("cxi0:hni_pause_sent"), 7u);
  EXPECT_EQ(v("cxi0:pct_spt_timeouts"), 0u);
  EXPECT_EQ(v("cxi0:rh:nacks"), 42u);
  EXPECT_EQ(v("cxi1:rh:nacks"), 5u);
  EXPECT_EQ(v("cxi0:telemetry_wall_ns"), 1712345679500000000ull);  // the newest of the three
  EXPECT_EQ(v("cxi1:telemetry_wall_ns"), 0u);
  EXPECT_EQ(s.read_errors(), 0u);
  EXPECT_EQ(s.dropped(), 0u);
}

TEST_F(CxiCounterStdTest, FailedReadIsZeroAndCounted) {
  CounterSampler s(config("cxi0", "pct_spt_timeouts,rh:nacks"));
  ASSERT_TRUE(s.open());
  ASSERT_TRUE(s.sample_once());
  const size_t tel = static_cast<size_t>(s.column_index("cxi0:pct_spt_timeouts"));
  const size_t rh = static_cast<size_t>(s.column_index("cxi0:rh:nacks"));
  EXPECT_EQ(s.value(0, tel), tree_.value_at("cxi0:pct_spt_timeouts", 0));
  EXPECT_EQ(s.value(0, rh), tree_.value_at("cxi0:rh:nacks", 0));

  // Emptied in place (the sampler's descriptor still points at it): the read yields nothing.
  FakeCxiTree::write_text(tree_.telemetry_path("cxi0", "pct_spt_timeouts"), "");
  ASSERT_TRUE(s.sample_once());
  EXPECT_EQ(s.value(1, tel), 0u);
  EXPECT_EQ(s.value(1, 2), 0u);  // no telemetry read: no stamp
  EXPECT_EQ(s.value(1, rh), tree_.value_at("cxi0:rh:nacks", 0));
  EXPECT_EQ(s.read_errors(), 1u);

  FakeCxiTree::write_text(tree_.telemetry_path("cxi0", "pct_spt_timeouts"), "77@1.000000002\n");
  ASSERT_TRUE(s.sample_once());
  EXPECT_EQ(s.value(2, tel), 77u);
  EXPECT_EQ(s.value(2, 2), 1000000002u);
  EXPECT_EQ(s.read_errors(), 1u);
}

TEST_F(CxiCounterStdTest, ValuesWhileAWriterAdvancesThem) {
  Config c = config("all", "all");
  c.interval_ms = 1;
  CounterSampler s(c);
  ASSERT_TRUE(s.start());

  std::thread writer([&] {
    while (tree_.advance()) std::this_thread::sleep_for(std::chrono::microseconds(700));
  });
  writer.join();
  s.stop();
  ASSERT_TRUE(s.sample_once());  // after the writer: the final values exactly

  const uint64_t n = s.samples();
  ASSERT_GE(n, 5u);
  EXPECT_EQ(s.read_errors(), 0u);
  EXPECT_EQ(s.dropped(), 0u);
  const std::vector<std::string> tracked = tree_.tracked_labels();
  ASSERT_EQ(sorted(s.labels()), tracked);  // "all" = exactly the tracked files

  std::set<uint64_t> stamps;
  for (int k = 0; k <= FakeCxiTree::kMaxSteps; ++k) stamps.insert(FakeCxiTree::stamp_at(k));
  for (const std::string& label : tracked) {
    std::set<uint64_t> written;
    for (int k = 0; k <= FakeCxiTree::kMaxSteps; ++k) written.insert(tree_.value_at(label, k));
    const size_t col = static_cast<size_t>(s.column_index(label));
    uint64_t prev = 0;
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t v = s.value(i, col);
      ASSERT_TRUE(written.count(v)) << label << " sample " << i << " read " << v;
      ASSERT_GE(v, prev) << label << " sample " << i;
      prev = v;
    }
    EXPECT_EQ(s.value(n - 1, col), tree_.value_at(label, FakeCxiTree::kMaxSteps)) << label;
  }
  for (const char* dev : {"cxi0", "cxi1"}) {
    const size_t col = static_cast<size_t>(s.column_index(std::string(dev) + ":telemetry_wall_ns"));
    uint64_t prev = 0;
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t st = s.value(i, col);
      ASSERT_TRUE(stamps.count(st)) << dev << " sample " << i << " stamp " << st;
      ASSERT_GE(st, prev);
      prev = st;
    }
    EXPECT_EQ(s.value(n - 1, col), FakeCxiTree::stamp_at(FakeCxiTree::kMaxSteps));
  }
  // The writer moved while sampling ran, so the series is not flat.
  const size_t col0 = static_cast<size_t>(s.column_index(tracked.front()));
  EXPECT_LT(s.value(0, col0), s.value(n - 1, col0));
  for (uint64_t i = 1; i < n; ++i) ASSERT_GE(s.value(i, 0), s.value(i - 1, 0));
}

// ---- cadence, threads, memory ------------------------------------------------------

TEST_F(CxiCounterStdTest, CadenceIsMeasuredAndReported) {
  CounterSampler s(config_every(5));
  ASSERT_TRUE(s.start());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  s.stop();
  const uint64_t n = s.samples();
  // About 60; loose bounds, this is not a benchmark.
  EXPECT_GE(n, 10u);
  EXPECT_LE(n, 90u);
  const double mean = s.achieved_mean_ms();
  EXPECT_GE(mean, 4.0);
  EXPECT_LE(mean, 40.0);

  const std::string path = tree_.root() + "/cadence.csv";
  ASSERT_TRUE(s.write_csv(path, "h", "0", 1));
  CounterSeries cs;
  std::string err;
  ASSERT_TRUE(read_counter_csv(path, &cs, &err)) << err;
  EXPECT_EQ(cs.interval_ms, 5u);
  EXPECT_NEAR(cs.achieved_mean_ms, mean, 0.0006);
  EXPECT_EQ(cs.samples, n);
  EXPECT_NE(read_file(path).find("# interval_ms=5 achieved_mean_ms="), std::string::npos);
}

TEST_F(CxiCounterStdTest, StartIsIdempotentAcrossThreads) {
  CounterSampler s(config_every(2));
  std::atomic<int> ok{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < 8; ++i)
    ts.emplace_back([&] {
      if (s.start()) ok.fetch_add(1);
    });
  for (std::thread& t : ts) t.join();
  EXPECT_EQ(ok.load(), 8);
  EXPECT_TRUE(s.start());
  EXPECT_EQ(sampler_threads(), 1);
  // Readers while the thread samples.
  for (int i = 0; i < 20; ++i) {
    const uint64_t n = s.samples();
    if (n) {
      EXPECT_NE(s.value(n - 1, 0), 0u);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  s.stop();
  s.stop();
  EXPECT_EQ(sampler_threads(), 0);
  EXPECT_FALSE(s.start());  // stop() is final
  EXPECT_EQ(sampler_threads(), 0);
  EXPECT_GE(s.samples(), 1u);
}

TEST_F(CxiCounterStdTest, StopWakesALongSleep) {
  CounterSampler s(config_every(60000));
  ASSERT_TRUE(s.start());
  const auto t0 = std::chrono::steady_clock::now();
  wait_for([&] { return s.samples() > 0; }, std::chrono::seconds(5));
  s.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  EXPECT_EQ(s.samples(), 1u);  // the first sample is taken at once
}

TEST_F(CxiCounterStdTest, StopWithoutStartAndDestructorWhileRunning) {
  {
    CounterSampler s(config());
    s.stop();
    s.stop();
    EXPECT_FALSE(s.start());
  }
  {
    CounterSampler s(config());
    ASSERT_TRUE(s.open());
    s.stop();
    EXPECT_FALSE(s.start());
    EXPECT_TRUE(s.sample_once());  // the files stay open for a final sample
  }
  {
    CounterSampler s(config());
    ASSERT_TRUE(s.start());
  }  // the destructor stops and joins
  EXPECT_EQ(sampler_threads(), 0);
}

TEST_F(CxiCounterStdTest, ForkedChildCopyIsInert) {
  CounterSampler s(config_every(1));
  ASSERT_TRUE(s.start());
  wait_for([&] { return s.samples() >= 2; }, std::chrono::seconds(5));
  const std::string csv = tree_.root() + "/child.csv";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // No gtest assertions here: report through the exit status.
    int bad = 0;
    const auto c0 = std::chrono::steady_clock::now();
    s.stop();  // must not wait for a thread that did not follow the fork
    if (std::chrono::steady_clock::now() - c0 > std::chrono::milliseconds(500)) bad |= 1;
    if (s.start()) bad |= 2;
    if (s.sample_once()) bad |= 4;
    if (s.samples() < 2) bad |= 8;
    if (!s.write_csv(csv, "h", "0", static_cast<long>(getpid()))) bad |= 16;
    _exit(bad);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(s.start());  // the parent's sampler is untouched
  s.stop();
  EXPECT_EQ(sampler_threads(), 0);
  CounterSeries cs;
  std::string err;
  EXPECT_TRUE(read_counter_csv(csv, &cs, &err)) << err;
  EXPECT_EQ(cs.pid, static_cast<long>(pid));
}

TEST_F(CxiCounterStdTest, MemoryCapDropsAndNeverGrows) {
  Config c = config("cxi0", "pct_spt_timeouts");
  const uint64_t row_bytes = 4 * sizeof(uint64_t);  // t_mono, wall, stamp, one counter
  c.max_bytes = 3 * row_bytes + 5;
  CounterSampler s(c);
  ASSERT_TRUE(s.open());
  EXPECT_EQ(s.capacity_samples(), 3u);
  EXPECT_EQ(s.reserved_bytes(), 3 * row_bytes);
  EXPECT_LE(s.reserved_bytes(), c.max_bytes);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(s.sample_once(), i < 3) << i;
  EXPECT_EQ(s.samples(), 3u);
  EXPECT_EQ(s.dropped(), 7u);
  EXPECT_EQ(s.reserved_bytes(), 3 * row_bytes);

  const std::string path = tree_.root() + "/cap.csv";
  ASSERT_TRUE(s.write_csv(path, "h", "0", 1));
  CounterSeries cs;
  std::string err;
  ASSERT_TRUE(read_counter_csv(path, &cs, &err)) << err;
  EXPECT_EQ(cs.dropped, 7u);
  EXPECT_EQ(cs.rows.size(), 3u);
}

TEST_F(CxiCounterStdTest, MemoryCapWithTheThread) {
  Config c = config("all", "all");
  c.interval_ms = 1;
  c.max_bytes = 1000;  // a couple of rows
  CounterSampler s(c);
  ASSERT_TRUE(s.start());
  const uint64_t cap = s.capacity_samples();
  ASSERT_GE(cap, 1u);
  wait_for([&] { return s.dropped() >= 5; }, std::chrono::seconds(10));
  s.stop();
  EXPECT_EQ(s.samples(), cap);
  EXPECT_GE(s.dropped(), 5u);
}

TEST_F(CxiCounterStdTest, CapBelowOneRowStoresNothing) {
  Config c = config();
  c.max_bytes = 8;
  CounterSampler s(c);
  ASSERT_TRUE(s.open());
  EXPECT_EQ(s.capacity_samples(), 0u);
  EXPECT_FALSE(s.sample_once());
  EXPECT_EQ(s.samples(), 0u);
  EXPECT_EQ(s.dropped(), 1u);
}

// ---- CSV -------------------------------------------------------------------------------

TEST_F(CxiCounterStdTest, CsvRoundTrip) {
  CounterSampler s(config());
  ASSERT_TRUE(s.open());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(s.sample_once());
    ASSERT_TRUE(tree_.advance());
  }
  const std::string path = tree_.root() + "/counters.csv";
  ASSERT_TRUE(s.write_csv(path, "nodeA", "3", 4242));

  const std::string text = read_file(path);
  std::vector<std::string> lines;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) lines.push_back(l);
  ASSERT_GE(lines.size(), 10u);
  EXPECT_EQ(lines[0], "# fabtrace-counters v1 host=nodeA rank=3 pid=4242");
  EXPECT_EQ(lines[1].rfind("# interval_ms=5 achieved_mean_ms=", 0), 0u) << lines[1];
  EXPECT_NE(lines[1].find(" devices=cxi0,cxi1 counters=" + std::to_string(s.labels().size()) +
                          " samples=3 dropped=0 read_errors=0"),
            std::string::npos)
      << lines[1];
  EXPECT_EQ(lines[2],
            "# clock t_mono_ns=CLOCK_MONOTONIC ns (same clock as every fabtrace output); "
            "wall_ns=CLOCK_REALTIME; *:telemetry_wall_ns=newest telemetry stamp of that device in "
            "the sample");
  EXPECT_EQ(lines[3], std::string("# writer fabtrace ") + version());
  EXPECT_EQ(lines[4], "# dev cxi0 nic_addr=0x12a0 nid=0x4a0");
  EXPECT_EQ(lines[5], "# dev cxi1 nic_addr=0x12a1 nid=?");
  EXPECT_EQ(
      lines[6].rfind("t_mono_ns,wall_ns,cxi0:telemetry_wall_ns,cxi0:hni_sts_tx_ok_octets,", 0), 0u)
      << lines[6];
  EXPECT_EQ(lines.size(), 10u);
  EXPECT_EQ(text.back(), '\n');

  CounterSeries cs;
  std::string err;
  ASSERT_TRUE(read_counter_csv(path, &cs, &err)) << err;
  EXPECT_EQ(cs.host, "nodeA");
  EXPECT_EQ(cs.rank, "3");
  EXPECT_EQ(cs.pid, 4242);
  EXPECT_EQ(cs.interval_ms, 5u);
  EXPECT_EQ(cs.devices, (std::vector<std::string>{"cxi0", "cxi1"}));
  EXPECT_EQ(cs.counters, s.labels().size());
  EXPECT_EQ(cs.samples, 3u);
  EXPECT_EQ(cs.dropped, 0u);
  EXPECT_EQ(cs.read_errors, 0u);
  EXPECT_FALSE(cs.truncated);
  ASSERT_EQ(cs.device_info.size(), 2u);
  EXPECT_EQ(cs.device_info[0].name, "cxi0");
  EXPECT_EQ(cs.device_info[0].nic_addr, "0x12a0");
  EXPECT_EQ(cs.device_info[0].nid, "0x4a0");
  EXPECT_EQ(cs.device_info[1].name, "cxi1");
  EXPECT_EQ(cs.device_info[1].nid, "?");
  EXPECT_EQ(cs.columns, s.columns());
  ASSERT_EQ(cs.rows.size(), 3u);
  for (size_t i = 0; i < 3; ++i)
    for (size_t c = 0; c < cs.columns.size(); ++c)
      ASSERT_EQ(cs.rows[i][c], s.value(i, c)) << i << "," << c;
  // The series moved with the tree.
  const int col = cs.column("cxi1:rh:nacks");
  ASSERT_GE(col, 0);
  for (int k = 0; k < 3; ++k)
    EXPECT_EQ(cs.rows[static_cast<size_t>(k)][static_cast<size_t>(col)],
              tree_.value_at("cxi1:rh:nacks", k));
  EXPECT_EQ(cs.column("nope"), -1);
}

TEST_F(CxiCounterStdTest, CsvHostAndRankStayOneToken) {
  CounterSampler s(config("cxi0", "rh:nacks"));
  ASSERT_TRUE(s.open());
  const std::string path = tree_.root() + "/h.csv";
  ASSERT_TRUE(s.write_csv(path, "my host\n", "", 7));
  CounterSeries cs;
  std::string err;
  ASSERT_TRUE(read_counter_csv(path, &cs, &err)) << err;
  EXPECT_EQ(cs.host, "my_host_");
  EXPECT_EQ(cs.rank, "?");
  EXPECT_EQ(cs.pid, 7);
  EXPECT_TRUE(cs.rows.empty());
}

TEST_F(CxiCounterStdTest, CsvTruncatedFileReadsItsWholeRows) {
  CounterSampler s(config());
  ASSERT_TRUE(s.open());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(s.sample_once());
  const std::string path = tree_.root() + "/t.csv";
  ASSERT_TRUE(s.write_csv(path, "h", "0", 1));
  const std::string text = read_file(path);
  const size_t last_row_start = text.rfind('\n', text.size() - 2) + 1;

  CounterSeries cs;
  std::string err;
  // Cut in the middle of the last row.
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(last_row_start + 7)), 0);
  ASSERT_TRUE(read_counter_csv(path, &cs, &err)) << err;
  EXPECT_EQ(cs.rows.size(), 4u);
  EXPECT_TRUE(cs.truncated);
  EXPECT_EQ(cs.samples, 5u);  // the header still says what was meant to be there
  for (size_t c = 0; c < cs.columns.size(); ++c) EXPECT_EQ(cs.rows[3][c], s.value(3, c));

  // Cut right after a whole row.
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(last_row_start)), 0);
  ASSERT_TRUE(read_counter_csv(path, &cs, &err)) << err;
  EXPECT_EQ(cs.rows.size(), 4u);
  EXPECT_FALSE(cs.truncated);

  // Cut before the header row is complete.
  ASSERT_EQ(::truncate(path.c_str(), 40), 0);
  EXPECT_FALSE(read_counter_csv(path, &cs, &err));
  EXPECT_NE(err.find("header"), std::string::npos) << err;
}

TEST_F(CxiCounterTest, CsvReaderRejectsOtherFiles) {
  CounterSeries cs;
  std::string err;
  EXPECT_FALSE(read_counter_csv(tree_.root() + "/missing.csv", &cs, &err));
  EXPECT_NE(err.find("missing.csv"), std::string::npos) << err;

  const std::string path = tree_.root() + "/bad.csv";
  FakeCxiTree::write_text(path, "hello\n");
  EXPECT_FALSE(read_counter_csv(path, &cs, &err));

  FakeCxiTree::write_text(path, "# fabtrace-counters v2 host=h rank=0 pid=1\nt_mono_ns,wall_ns\n");
  EXPECT_FALSE(read_counter_csv(path, &cs, &err));
  EXPECT_NE(err.find("v2"), std::string::npos) << err;

  FakeCxiTree::write_text(path, "# fabtrace-counters v1 host=h rank=0 pid=1\nfoo,bar\n");
  EXPECT_FALSE(read_counter_csv(path, &cs, &err));

  FakeCxiTree::write_text(path,
                          "# fabtrace-counters v1 host=h rank=0 pid=1\n# something new=1\n"
                          "t_mono_ns,wall_ns,a\n1,2,3\n4,x,6\n7,8,9\n");
  EXPECT_FALSE(read_counter_csv(path, &cs, &err));
  EXPECT_NE(err.find(":5:"), std::string::npos) << err;

  FakeCxiTree::write_text(path,
                          "# fabtrace-counters v1 host=h rank=0 pid=1\nt_mono_ns,wall_ns,a\n1,2\n");
  EXPECT_FALSE(read_counter_csv(path, &cs, &err));

  // Unknown comment lines before the header are skipped.
  FakeCxiTree::write_text(path,
                          "# fabtrace-counters v1 host=h rank=0 pid=1\n# something new=1\n"
                          "t_mono_ns,wall_ns,a\n1,2,3\n");
  ASSERT_TRUE(read_counter_csv(path, &cs, &err)) << err;
  ASSERT_EQ(cs.rows.size(), 1u);
  EXPECT_EQ(cs.rows[0], (std::vector<uint64_t>{1, 2, 3}));
}

TEST_F(CxiCounterStdTest, CsvWriteFailureIsOneMessage) {
  CounterSampler s(config());
  ASSERT_TRUE(s.open());
  ASSERT_TRUE(s.sample_once());
  const std::string err = stderr_of(
      [&] { EXPECT_FALSE(s.write_csv(tree_.root() + "/no/such/dir/x.csv", "h", "0", 1)); });
  EXPECT_EQ(line_count(err), 1u) << err;
  EXPECT_EQ(err.rfind("[fabtrace] ", 0), 0u) << err;
}

TEST_F(CxiCounterStdTest, CsvWhileSampling) {
  CounterSampler s(config_every(1));
  ASSERT_TRUE(s.start());
  const std::string path = tree_.root() + "/live.csv";
  for (int i = 0; i < 5; ++i) {
    ::unlink(path.c_str());  // write_csv creates a new file, never over an existing one
    ASSERT_TRUE(s.write_csv(path, "h", "0", 1));
    CounterSeries cs;
    std::string err;
    ASSERT_TRUE(read_counter_csv(path, &cs, &err)) << err;
    EXPECT_EQ(cs.rows.size(), cs.samples);
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
  }
  s.stop();
}

}  // namespace
}  // namespace fabtrace
