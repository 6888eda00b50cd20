// CQ poll counts against the program's own: ft_app counts every fi_cq_read,
// fi_cq_readfrom and fi_cq_sread it makes, and the report's polls (summed
// over the rank's CQs) must be exactly that. On the utility providers
// (tcp;ofi_rxm, shm, udp;ofi_rxd) libfabric's fi_cq_read and fi_cq_sread call
// fi_cq_readfrom through the CQ's op table: a tracer that stamps that inner
// call too counts every poll twice.
#include <gtest/gtest.h>

#include "tests/integration/harness.h"

namespace fabtrace::test {
namespace {

struct PollCase {
  const char* prov;
  const char* test;  // tagged/msg: fi_cq_read / fi_cq_readfrom; pingpong: fi_cq_sread
};

void PrintTo(const PollCase& c, std::ostream* os) { *os << c.prov << " " << c.test; }

std::string case_name(const ::testing::TestParamInfo<PollCase>& info) {
  return test_name(std::string(info.param.prov) + "_" + info.param.test);
}

class CqPolls : public ::testing::TestWithParam<PollCase> {};

TEST_P(CqPolls, ReportPollsEqualTheProgramsOwnCount) {
  const PollCase c = GetParam();
  const std::string dir = make_temp_dir("polls");
  const RunResult r = run({FT_APP, "--prov", c.prov, "--test", c.test, "--result", dir + "/app"},
                          {{"FABTRACE_DIR", dir}});
  if (r.exit_code == 77) GTEST_SKIP() << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const std::string rank : {"0", "1"}) {
    SCOPED_TRACE("rank " + rank);
    const auto app = load_json(dir + "/app.r" + rank + ".json");
    const uint64_t polls = app.at("cq_polls").get<uint64_t>();
    ASSERT_GT(polls, 0u);
    const auto reps = reports_of_rank(dir, rank);
    ASSERT_EQ(reps.size(), 1u);
    uint64_t reported = 0;
    for (const auto& cq : reps[0].at("cqs")) reported += cq.at("polls").get<uint64_t>();
    EXPECT_EQ(reported, polls);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Providers, CqPolls,
    ::testing::Values(PollCase{"tcp;ofi_rxm", "tagged"}, PollCase{"shm", "tagged"},
                      PollCase{"udp;ofi_rxd", "tagged"}, PollCase{"sockets", "tagged"},
                      PollCase{"tcp", "msg"}, PollCase{"tcp;ofi_rxm", "msg"},
                      PollCase{"tcp;ofi_rxm", "pingpong"}, PollCase{"shm", "pingpong"}),
    case_name);

}  // namespace
}  // namespace fabtrace::test
