// Receives are filed under the size that arrived, in every CQ format: ft_app's
// "sizes" family sends messages of 0, 1, 64, 256, 1000 and 4096 bytes into
// 4096-byte receives and says from its own plan how many of each size its
// receives got. The report's receive rows and the per-op timeline must give
// exactly those sizes and counts, with FI_CQ_FORMAT_CONTEXT and UNSPEC (whose
// entries have no length: the preload opens the CQ with one) as with the
// formats that carry it (where a 0-byte message must not be filed under the
// posted size).
#include <gtest/gtest.h>

#include <map>
#include <utility>

#include "common/op_kinds.h"
#include "common/oplog_file.h"
#include "tests/integration/harness.h"

namespace fabtrace::test {
namespace {

struct SizesCase {
  const char* prov;
  const char* cq_format;
};

void PrintTo(const SizesCase& c, std::ostream* os) { *os << c.prov << " cq=" << c.cq_format; }

using Sizes = std::map<std::pair<std::string, std::string>, uint64_t>;  // (op, "bytes") -> count

// What the program says its receives got.
Sizes planned(const nlohmann::json& app) {
  Sizes s;
  for (auto op = app.at("received_sizes").begin(); op != app.at("received_sizes").end(); ++op)
    for (auto sz = op.value().begin(); sz != op.value().end(); ++sz)
      s[{op.key(), sz.key()}] = sz.value().get<uint64_t>();
  return s;
}

// The report's receive rows; a row without a known size gets "?" before its bytes.
Sizes reported(const nlohmann::json& rep) {
  Sizes s;
  for (const auto& l : rep.at("links"))
    for (const auto& o : l.at("ops")) {
      const std::string op = o.at("op").get<std::string>();
      if (!op_is_recv(op_from_name(op.c_str())) || o.at("count").get<uint64_t>() == 0) continue;
      const std::string bytes = (o.value("size_unknown", false) ? "?" : "") +
                                std::to_string(o.at("bytes").get<uint64_t>());
      s[{op, bytes}] += o.at("count").get<uint64_t>();
    }
  return s;
}

// The per-op timeline's receives, the same way.
Sizes logged(const std::string& dir, const std::string& rank) {
  Sizes s;
  for (const std::string& f : list_files(dir, "fabtrace_ops.", ".oplog")) {
    if (f.find(".r" + rank + ".p") == std::string::npos) continue;
    OplogReader r;
    std::string err;
    EXPECT_TRUE(r.open(f, &err)) << err;
    EXPECT_TRUE(r.read_all(
        [&](const oplog::OpEntry* e, size_t n) {
          for (size_t i = 0; i < n; ++i) {
            const OpKind k = static_cast<OpKind>(e[i].kind);
            if (!op_is_recv(k) || e[i].error) continue;
            const std::string bytes =
                ((e[i].flags & oplog::kOpSizeUnknown) ? "?" : "") + std::to_string(e[i].bytes);
            ++s[{op_name(k), bytes}];
          }
        },
        &err))
        << err;
  }
  return s;
}

class RecvSizes : public ::testing::TestWithParam<SizesCase> {};

TEST_P(RecvSizes, FiledUnderTheSizeReceived) {
  const SizesCase c = GetParam();
  const std::string dir = make_temp_dir("sizes");
  const RunResult r =
      run({FT_APP, "--prov", c.prov, "--test", "sizes", "--cq-format", c.cq_format, "--result",
           dir + "/app"},
          {{"FABTRACE_DIR", dir}, {"FABTRACE_OPS_RANKS", "all"}, {"FABTRACE_OPS_MIN_BYTES", "0"}});
  if (r.exit_code == 77) GTEST_SKIP() << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto app = load_json(dir + "/app.r1.json");
  ASSERT_TRUE(app.at("ok").get<bool>()) << app.dump();
  const Sizes want = planned(app);
  ASSERT_FALSE(want.empty());
  const auto reps = reports_of_rank(dir, "1");
  ASSERT_EQ(reps.size(), 1u);
  EXPECT_EQ(reported(reps[0]), want);
  EXPECT_EQ(logged(dir, "1"), want);
}

std::string case_name(const ::testing::TestParamInfo<SizesCase>& info) {
  return test_name(std::string(info.param.prov) + "_" + info.param.cq_format);
}

std::vector<SizesCase> all_cases() {
  std::vector<SizesCase> v;
  for (const char* p : {"tcp;ofi_rxm", "udp;ofi_rxd", "shm", "sockets", "tcp"})
    for (const char* f : {"context", "unspec", "msg", "tagged"}) v.push_back({p, f});
  v.push_back({"tcp;ofi_rxm", "data"});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Providers, RecvSizes, ::testing::ValuesIn(all_cases()), case_name);

}  // namespace
}  // namespace fabtrace::test
