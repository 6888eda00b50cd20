// The preload on real clients: fi_pingpong from libfabric-bin on every provider,
// the inert and no-I/O cases, bad settings, and symbol-version interposition.
#include <gtest/gtest.h>

#include <sstream>

#include "tests/integration/harness.h"
#include "tests/support/require_program.h"

namespace fabtrace::test {
namespace {

const char* const kSendOps[] = {"fi_send",     "fi_sendv",  "fi_sendmsg",
                                "fi_senddata", "fi_inject", "fi_injectdata"};
const char* const kRecvOps[] = {"fi_recv", "fi_recvv", "fi_recvmsg"};

std::vector<std::string> with(std::vector<std::string> v, std::initializer_list<std::string> more) {
  v.insert(v.end(), more);
  return v;
}

uint64_t sum_issued(const std::map<std::string, OpTotals>& t, const char* const* ops, size_t n) {
  uint64_t s = 0;
  for (size_t i = 0; i < n; ++i) {
    auto it = t.find(ops[i]);
    if (it != t.end()) s += it->second.issued();
  }
  return s;
}

struct PingpongCase {
  const char* prov;
  const char* ep;
  int iters;
};

void PrintTo(const PingpongCase& c, std::ostream* os) { *os << c.prov << " " << c.ep; }

class Pingpong : public ::testing::TestWithParam<PingpongCase> {};

// fi_pingpong -I N: every message one side sends, the other receives exactly
// once; the reports of both ranks must agree on that, and each side sent N
// data messages plus its few sync messages.
TEST_P(Pingpong, ReportCountsMatchTheTraffic) {
  const PingpongCase c = GetParam();
  const std::string dir = make_temp_dir("pingpong");
  const std::string port = std::to_string(free_port());
  const std::vector<std::string> args = {"fi_pingpong",           "-p", c.prov, "-e", c.ep, "-I",
                                         std::to_string(c.iters), "-S", "1024"};
  const int server =
      spawn(with(args, {"-B", port}), {{"FABTRACE_DIR", dir}, {"RANK", "1"}}, dir + "/server.log");
  ASSERT_TRUE(wait_listening(std::stoi(port))) << "the server never listened on " << port;
  const std::vector<std::string> cargs = with(args, {"-P", port, "127.0.0.1"});
  const RunResult client = run(cargs, {{"FABTRACE_DIR", dir}, {"RANK", "0"}});
  ASSERT_EQ(client.exit_code, 0) << client.output;
  ASSERT_EQ(wait_for(server), 0);
  // fi_pingpong prints its own result line: the run was not disturbed.
  EXPECT_NE(client.output.find("1k"), std::string::npos) << client.output;

  auto r0 = reports_of_rank(dir, "0");
  auto r1 = reports_of_rank(dir, "1");
  ASSERT_EQ(r0.size(), 1u);
  ASSERT_EQ(r1.size(), 1u);
  EXPECT_EQ(r0[0].at("providers").get<std::string>(), c.prov);  // nested core objects not wrapped
  const auto t0 = op_totals(r0[0]);
  const auto t1 = op_totals(r1[0]);
  const uint64_t sent0 = sum_issued(t0, kSendOps, 6), sent1 = sum_issued(t1, kSendOps, 6);
  EXPECT_GE(sent0, static_cast<uint64_t>(c.iters));
  EXPECT_LE(sent0, static_cast<uint64_t>(c.iters) + 4);
  EXPECT_GE(sent1, static_cast<uint64_t>(c.iters));
  // Every receive that completed matches a message the peer sent.
  auto completed_recvs = [](const std::map<std::string, OpTotals>& t) {
    uint64_t s = 0;
    for (const char* op : kRecvOps)
      if (t.count(op)) s += t.at(op).count;
    return s;
  };
  EXPECT_EQ(completed_recvs(t1), sent0);
  EXPECT_EQ(completed_recvs(t0), sent1);
  for (auto* t : {&t0, &t1})
    for (auto& kv : *t) EXPECT_EQ(kv.second.errors, 0u) << kv.first;
  // The CQ was polled and the poll-gap histogram filled.
  ASSERT_FALSE(r0[0].at("cqs").empty());
  EXPECT_GT(r0[0].at("cqs")[0].at("polls").get<uint64_t>(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Providers, Pingpong,
                         ::testing::Values(PingpongCase{"tcp;ofi_rxm", "rdm", 500},
                                           PingpongCase{"udp;ofi_rxd", "rdm", 200},
                                           PingpongCase{"shm", "rdm", 500},
                                           PingpongCase{"sockets", "rdm", 20},
                                           PingpongCase{"tcp", "msg", 500}),
                         [](const auto& p) { return test_name(p.param.prov); });

// FABTRACE=0: loaded, inert, no report; the program works.
TEST(Preload, InertWhenDisabled) {
  const std::string dir = make_temp_dir("inert");
  const std::string port = std::to_string(free_port());
  const std::vector<std::string> args = {"fi_pingpong", "-p",  "tcp;ofi_rxm", "-e", "rdm",
                                         "-I",          "100", "-S",          "64"};
  const Env env = {{"FABTRACE_DIR", dir}, {"FABTRACE", "0"}};
  const int server = spawn(with(args, {"-B", port}), env, dir + "/server.log");
  ASSERT_TRUE(wait_listening(std::stoi(port))) << "the server never listened on " << port;
  const std::vector<std::string> cargs = with(args, {"-P", port, "127.0.0.1"});
  const RunResult client = run(cargs, env);
  ASSERT_EQ(client.exit_code, 0) << client.output;
  ASSERT_EQ(wait_for(server), 0);
  EXPECT_TRUE(list_files(dir, "fabtrace.", ".json").empty());
  EXPECT_TRUE(list_files(dir, "fabtrace.", ".txt").empty());
}

// A process that never touches the fabric writes nothing and says nothing.
TEST(Preload, NoFabricNoReport) {
  const std::string dir = make_temp_dir("nofab");
  const RunResult r = run({"sh", "-c", "echo hello"}, {{"FABTRACE_DIR", dir}});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "hello\n");
  EXPECT_TRUE(list_files(dir, "fabtrace.", "").empty());
}

// A bad value gets one warning line naming it, and the default is used.
TEST(Preload, BadSettingWarnsOnceAndUsesDefault) {
  const std::string dir = make_temp_dir("badenv");
  const std::string port = std::to_string(free_port());
  const std::vector<std::string> args = {"fi_pingpong", "-p", "tcp;ofi_rxm", "-e", "rdm",
                                         "-I",          "50", "-S",          "64"};
  const Env env = {{"FABTRACE_DIR", dir}, {"FABTRACE_INFLIGHT", "lots"}, {"RANK", "0"}};
  const int server =
      spawn(with(args, {"-B", port}), {{"FABTRACE_DIR", dir}, {"RANK", "1"}}, dir + "/server.log");
  ASSERT_TRUE(wait_listening(std::stoi(port))) << "the server never listened on " << port;
  const std::vector<std::string> cargs = with(args, {"-P", port, "127.0.0.1"});
  const RunResult client = run(cargs, env);
  ASSERT_EQ(client.exit_code, 0) << client.output;
  ASSERT_EQ(wait_for(server), 0);
  size_t n = 0;
  for (size_t p = 0; (p = client.output.find("FABTRACE_INFLIGHT=lots", p)) != std::string::npos;
       ++p)
    ++n;
  EXPECT_EQ(n, 1u) << client.output;
  auto r0 = reports_of_rank(dir, "0");
  ASSERT_EQ(r0.size(), 1u);
  EXPECT_EQ(r0[0].at("ring_slots").get<uint64_t>(), 16384u);
}

// Every exported version of fi_getinfo / fi_fabric binds to the preload.
TEST(Preload, InterposesEverySymbolVersion) {
  const RunResult r = run({SYMVER_PROBE}, {});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::istringstream in(r.output);
  std::string sym, obj;
  int n = 0;
  while (in >> sym >> obj) {
    if (sym.rfind("fi_", 0) != 0) continue;
    ++n;
    EXPECT_NE(obj.find("libfabtrace"), std::string::npos) << sym << " bound to " << obj;
  }
  EXPECT_GE(n, 6);  // libfabric 1.17: fi_getinfo 1.0-1.3, fi_fabric 1.0-1.1
}

// mpirun -np 2 over libfabric (pml cm, mtl ofi; no shm provider: the ranks
// talk through the traced data path), then `rest` (-x options and the command).
std::vector<std::string> mpirun_mtl_ofi(const std::vector<std::string>& rest) {
  std::vector<std::string> a = {MPIRUN,
                                "--allow-run-as-root",
                                "--oversubscribe",
                                "-np",
                                "2",
                                "--mca",
                                "pml",
                                "cm",
                                "--mca",
                                "mtl",
                                "ofi",
                                "--mca",
                                "mtl_ofi_provider_exclude",
                                "shm",
                                "-x",
                                "ASAN_OPTIONS"};
  a.insert(a.end(), rest.begin(), rest.end());
  return a;
}

// Open MPI over libfabric (pml cm, mtl ofi): a real MPI job, two ranks, each
// writing its own report; every message rank 0 sends, rank 1 receives.
TEST(Mpi, OpenMpiMtlOfiPingpong) {
  ASSERT_FALSE(std::string(MPI_PINGPONG).empty())
      << "Open MPI was not found at build time: scripts/install-deps installs libopenmpi-dev";
  REQUIRE_PROGRAM(MPIRUN, "openmpi-bin");
  const std::string dir = make_temp_dir("mpi");
  const std::string san = SANITIZER_PRELOAD;
  const std::string lib = san.empty() ? FABTRACE_LIB : san + ":" + FABTRACE_LIB;
  const RunResult r = run(mpirun_mtl_ofi({"-x", "LD_PRELOAD=" + lib, "-x", "FABTRACE_DIR=" + dir,
                                          MPI_PINGPONG, "500", "4096"}),
                          {}, false, 180);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("rank 0: 500 round trips, 0 bad bytes"), std::string::npos) << r.output;
  auto r0 = reports_of_rank(dir, "0");
  auto r1 = reports_of_rank(dir, "1");
  ASSERT_EQ(r0.size(), 1u) << r.output;
  ASSERT_EQ(r1.size(), 1u) << r.output;
  auto tagged_sent = [](const std::map<std::string, OpTotals>& t) {
    uint64_t s = 0;
    for (const char* op :
         {"fi_tsend", "fi_tsendv", "fi_tsendmsg", "fi_tsenddata", "fi_tinject", "fi_tinjectdata"})
      if (t.count(op)) s += t.at(op).issued();
    return s;
  };
  auto tagged_received = [](const std::map<std::string, OpTotals>& t) {
    uint64_t s = 0;
    for (const char* op : {"fi_trecv", "fi_trecvv", "fi_trecvmsg"})
      if (t.count(op)) s += t.at(op).count;
    return s;
  };
  const auto t0 = op_totals(r0[0]);
  const auto t1 = op_totals(r1[0]);
  EXPECT_GE(tagged_sent(t0), 500u);
  EXPECT_EQ(tagged_received(t1), tagged_sent(t0));
  EXPECT_EQ(tagged_received(t0), tagged_sent(t1));
}

// Under a launcher, one `fabtrace run` per rank (mpirun -np 2 fabtrace run --
// app): each prints the report of its own process tree only, though both
// write into one directory: two reports in the output, not 2 x 2.
TEST(Mpi, EachFabtraceRunPrintsOnlyItsOwnRank) {
  ASSERT_FALSE(std::string(MPI_PINGPONG).empty())
      << "Open MPI was not found at build time: scripts/install-deps installs libopenmpi-dev";
  REQUIRE_PROGRAM(MPIRUN, "openmpi-bin");
  const std::string dir = make_temp_dir("mpi-run");
  const std::string san = SANITIZER_PRELOAD;
  const std::string lib = san.empty() ? FABTRACE_LIB : san + ":" + FABTRACE_LIB;
  const RunResult r = run(mpirun_mtl_ofi({"-x", "FABTRACE_PRELOAD=" + lib, FABTRACE_CLI, "run",
                                          "--dir", dir, "--", MPI_PINGPONG, "200", "4096"}),
                          {}, false, 180);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("rank 0: 200 round trips, 0 bad bytes"), std::string::npos) << r.output;
  ASSERT_EQ(reports_of_rank(dir, "0").size(), 1u) << r.output;
  ASSERT_EQ(reports_of_rank(dir, "1").size(), 1u) << r.output;
  size_t printed = 0, rank0 = 0, rank1 = 0;
  for (size_t at = r.output.find("[fabtrace] host="); at != std::string::npos;
       at = r.output.find("[fabtrace] host=", at + 1)) {
    ++printed;
    const std::string line = r.output.substr(at, r.output.find('\n', at) - at);
    rank0 += line.find(" rank=0 ") != std::string::npos;
    rank1 += line.find(" rank=1 ") != std::string::npos;
  }
  EXPECT_EQ(printed, 2u) << r.output;
  EXPECT_EQ(rank0, 1u) << r.output;
  EXPECT_EQ(rank1, 1u) << r.output;
}

// `fabtrace run` preloads the library and prints the reports of the run.
TEST(Cli, RunPrintsTheReport) {
  const std::string dir = make_temp_dir("cli");
  const std::string port = std::to_string(free_port());
  const std::vector<std::string> args = {"fi_pingpong", "-p",  "tcp;ofi_rxm", "-e", "rdm",
                                         "-I",          "100", "-S",          "64"};
  const int server =
      spawn(with(args, {"-B", port}), {{"FABTRACE_DIR", dir}, {"RANK", "1"}}, dir + "/server.log");
  ASSERT_TRUE(wait_listening(std::stoi(port))) << "the server never listened on " << port;
  std::vector<std::string> cargs = {FABTRACE_CLI, "run", "--dir", dir, "--"};
  for (const std::string& a : with(args, {"-P", port, "127.0.0.1"})) cargs.push_back(a);
  const std::string san = SANITIZER_PRELOAD;
  const std::string lib = san.empty() ? FABTRACE_LIB : san + ":" + FABTRACE_LIB;
  const RunResult r = run(cargs, {{"RANK", "0"}, {"FABTRACE_PRELOAD", lib}}, false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(wait_for(server), 0);
  EXPECT_NE(r.output.find("[fabtrace] host="), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("fi_send"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace fabtrace::test
