// The project's own workload (tests/apps, ft_app) on every provider and op
// family, under the preload. The program verifies its data and that every
// completion carries exactly one of its own contexts; the test checks that the
// report's op counts equal what the program issued.
#include <gtest/gtest.h>

#include "tests/integration/harness.h"

namespace fabtrace::test {
namespace {

struct AppCase {
  const char* prov;
  const char* test;
  const char* cq_format;  // nullptr = the program's default
};

void PrintTo(const AppCase& c, std::ostream* os) {
  *os << c.prov << " " << c.test << (c.cq_format ? std::string(" cq=") + c.cq_format : "");
}

std::string case_name(const ::testing::TestParamInfo<AppCase>& info) {
  std::string n = std::string(info.param.prov) + "_" + info.param.test;
  if (info.param.cq_format) n += std::string("_cq_") + info.param.cq_format;
  return test_name(n);
}

class App : public ::testing::TestWithParam<AppCase> {};

TEST_P(App, ReportMatchesWhatTheProgramDid) {
  const AppCase c = GetParam();
  const std::string dir = make_temp_dir("app");
  std::vector<std::string> argv = {FT_APP, "--prov",   c.prov,      "--test",
                                   c.test, "--result", dir + "/app"};
  if (c.cq_format) argv.insert(argv.end(), {"--cq-format", c.cq_format});
  const RunResult r = run(argv, {{"FABTRACE_DIR", dir}}, true, 240);
  if (r.exit_code == 77) GTEST_SKIP() << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;

  for (const std::string rank : {"0", "1"}) {
    SCOPED_TRACE("rank " + rank);
    const auto app = load_json(dir + "/app.r" + rank + ".json");
    EXPECT_TRUE(app.at("ok").get<bool>());
    EXPECT_EQ(app.at("context_errors").get<uint64_t>(), 0u);
    EXPECT_EQ(app.at("data_errors").get<uint64_t>(), 0u);
    const auto& issued = app.at("issued");
    uint64_t total_issued = 0;
    for (auto it = issued.begin(); it != issued.end(); ++it)
      total_issued += it.value().get<uint64_t>();

    const auto reps = reports_of_rank(dir, rank);
    if (total_issued == 0) {
      EXPECT_TRUE(reps.empty());
      continue;
    }
    ASSERT_EQ(reps.size(), 1u) << "one report per rank";
    const auto t = op_totals(reps[0]);
    // Same ops, same counts, both ways.
    for (auto it = issued.begin(); it != issued.end(); ++it) {
      const uint64_t n = it.value().get<uint64_t>();
      const uint64_t got = t.count(it.key()) ? t.at(it.key()).issued() : 0;
      EXPECT_EQ(got, n) << it.key();
    }
    for (const auto& kv : t) {
      if (kv.second.issued()) {
        EXPECT_TRUE(issued.contains(kv.first)) << "unexpected " << kv.first;
      }
    }
    // Refusals as the program saw them.
    if (app.contains("eagain")) {
      for (auto it = app["eagain"].begin(); it != app["eagain"].end(); ++it) {
        EXPECT_EQ(t.count(it.key()) ? t.at(it.key()).eagain : 0, it.value().get<uint64_t>())
            << it.key();
      }
    }
    // Error completions (cancelled receives) are counted as errors, not timed;
    // those of ops whose context went to the provider unchanged (a peek that found
    // nothing) cannot be told apart from the application's and are not counted.
    uint64_t errors = 0;
    for (const auto& kv : t) errors += kv.second.errors;
    EXPECT_EQ(errors, app.at("error_completions").get<uint64_t>() -
                          app.value("kept_context_errors", uint64_t{0}));
    // FI_PEEK / FI_CLAIM / FI_MULTI_RECV / FI_TRIGGER ops keep their context: untimed.
    if (app.contains("kept_context")) {
      for (auto it = app["kept_context"].begin(); it != app["kept_context"].end(); ++it) {
        EXPECT_GE(t.count(it.key()) ? t.at(it.key()).untimed : 0, it.value().get<uint64_t>())
            << it.key();
      }
    }
    // Ops with no completion are counted, never timed.
    for (const auto& kv : t) {
      const bool inject = kv.first.find("inject") != std::string::npos;
      if (inject) {
        EXPECT_EQ(kv.second.count, 0u) << kv.first;
      }
    }
    if (app.contains("no_completion")) {
      for (auto it = app["no_completion"].begin(); it != app["no_completion"].end(); ++it) {
        EXPECT_GE(t.count(it.key()) ? t.at(it.key()).untimed : 0, it.value().get<uint64_t>())
            << it.key();
      }
    }
  }
}

constexpr const char* kProviders[] = {"tcp;ofi_rxm", "udp;ofi_rxd", "shm", "sockets", "tcp"};
constexpr const char* kTests[] = {"msg",     "tagged",    "rma",  "atomic", "inject", "cancel",
                                  "threads", "multirecv", "peek", "sep",    "srx",    "trigger"};

std::vector<AppCase> all_cases() {
  std::vector<AppCase> v;
  for (const char* p : kProviders)
    for (const char* t : kTests) v.push_back({p, t, nullptr});
  // Every CQ entry format, where the op context sits at different strides.
  for (const char* f : {"context", "msg", "data", "tagged"})
    v.push_back({"tcp;ofi_rxm", "tagged", f});
  // Multi-receive completions (several per context) in every format; shm reports
  // the buffer's release as an entry of its own.
  for (const char* f : {"context", "msg", "data"}) v.push_back({"shm", "multirecv", f});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Providers, App, ::testing::ValuesIn(all_cases()), case_name);

}  // namespace
}  // namespace fabtrace::test
