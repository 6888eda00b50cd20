// links.csv/json and nics.csv/json: written, parsed back (CSV by hand, JSON
// with nlohmann) and compared with the job, value for value.
#include "userspace/report/tables/tables.h"

#include <gtest/gtest.h>
#include <zstd.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/csv.h"
#include "fixtures/csv_records.h"
#include "fixtures/synthetic_job.h"
#include "userspace/report/job/job.h"

namespace fabtrace::report {
namespace {

using test::parse_csv;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

uint64_t u64(const std::string& s) {
  uint64_t v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  EXPECT_TRUE(r.ec == std::errc() && r.ptr == s.data() + s.size()) << s;
  return v;
}

double dbl(const std::string& s) {
  double v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  EXPECT_TRUE(r.ec == std::errc() && r.ptr == s.data() + s.size()) << s;
  return v;
}

Job synthetic_job_with_awkward_names() {
  const test::SyntheticJob sj = test::make_synthetic_job();
  Job job;
  for (const ProcessReport& r : sj.reports) job.ranks.push_back(make_rank(r));
  // Names a CSV must quote.
  job.ranks[0].report.host = job.ranks[0].report.host = "node,\"01\"";
  job.ranks[0].report.links[0].remote = "fi_sockaddr_in6://[fe80::1],x\ny";
  build_job_tables(&job);
  return job;
}

TEST(ReportTables, LinksAndNicsRoundTripThroughCsvAndJson) {
  const Job job = synthetic_job_with_awkward_names();
  const std::string dir = test::make_fixture_dir("tables");
  std::vector<std::string> files;
  std::string err;
  ASSERT_TRUE(write_tables(job, dir, &files, &err)) << err;
  EXPECT_EQ(files, (std::vector<std::string>{dir + "/links.csv", dir + "/links.json",
                                             dir + "/nics.csv", dir + "/nics.json",
                                             dir + "/stalls.csv", dir + "/stalls.json"}));

  // links.csv
  const auto csv = parse_csv(slurp(dir + "/links.csv"));
  ASSERT_EQ(csv.size(), job.links.size() + 1);
  EXPECT_EQ(csv[0], link_columns());
  // links.json
  const nlohmann::json js = nlohmann::json::parse(slurp(dir + "/links.json"));
  ASSERT_TRUE(js.is_array());
  ASSERT_EQ(js.size(), job.links.size());
  for (size_t i = 0; i < job.links.size(); ++i) {
    SCOPED_TRACE(i);
    const LinkRow& l = job.links[i];
    const std::vector<std::string>& c = csv[i + 1];
    ASSERT_EQ(c.size(), link_columns().size());
    const nlohmann::json& j = js[i];
    ASSERT_EQ(j.size(), link_columns().size());
    for (const std::string& k : link_columns()) EXPECT_TRUE(j.contains(k)) << k;
    EXPECT_EQ(c[0], l.host());
    EXPECT_EQ(c[1], l.rank());
    EXPECT_EQ(c[2], std::to_string(l.pid()));
    EXPECT_EQ(c[3], l.local());
    EXPECT_EQ(c[4], l.remote());
    EXPECT_EQ(c[5], l.op());
    const uint64_t ints[] = {l.row.bytes,      l.row.count,  l.row.errors,  l.row.untimed,
                             l.row.unfinished, l.row.eagain, l.row.refused, l.row.within_50us};
    for (size_t k = 0; k < 8; ++k) {
      EXPECT_EQ(u64(c[6 + k]), ints[k]) << link_columns()[6 + k];
      EXPECT_EQ(j.at(link_columns()[6 + k]).get<uint64_t>(), ints[k]) << link_columns()[6 + k];
    }
    const double dbls[] = {l.row.avg_ns, l.row.min_ns, l.row.max_ns,   l.row.p50_ns,
                           l.row.p99_ns, l.row.gbps,   l.outlier_ratio};
    for (size_t k = 0; k < 7; ++k) {
      EXPECT_EQ(dbl(c[14 + k]), dbls[k])
          << link_columns()[14 + k];  // exact: shortest round-trip text
      EXPECT_EQ(j.at(link_columns()[14 + k]).get<double>(), dbls[k]) << link_columns()[14 + k];
    }
    EXPECT_EQ(j.at("host").get<std::string>(), l.host());
    EXPECT_EQ(j.at("rank").get<std::string>(), l.rank());
    EXPECT_EQ(j.at("pid").get<long>(), l.pid());
    EXPECT_EQ(j.at("local").get<std::string>(), l.local());
    EXPECT_EQ(j.at("remote").get<std::string>(), l.remote());
    EXPECT_EQ(j.at("op").get<std::string>(), l.op());
    EXPECT_EQ(c[21], l.row.size_unknown ? "true" : "false");
    EXPECT_EQ(j.at("size_unknown").get<bool>(), l.row.size_unknown);
    EXPECT_EQ(u64(c[22]), l.row.ring_full);
    EXPECT_EQ(j.at("ring_full").get<uint64_t>(), l.row.ring_full);
  }
  // The planted outlier is visible to pandas too.
  size_t outliers = 0;
  for (const auto& row : js)
    if (row.at("outlier_ratio").get<double>() >= kOutlierRatio && row.at("op") == "fi_tsend")
      ++outliers;
  EXPECT_EQ(outliers, 1u);

  // nics
  const auto ncsv = parse_csv(slurp(dir + "/nics.csv"));
  const nlohmann::json nj = nlohmann::json::parse(slurp(dir + "/nics.json"));
  ASSERT_EQ(ncsv.size(), job.nics.size() + 1);
  EXPECT_EQ(ncsv[0], nic_columns());
  ASSERT_EQ(nj.size(), job.nics.size());
  for (size_t i = 0; i < job.nics.size(); ++i) {
    const NicRow& n = job.nics[i];
    const auto& c = ncsv[i + 1];
    ASSERT_EQ(c.size(), nic_columns().size());
    EXPECT_EQ(c[0], n.host);
    EXPECT_EQ(c[1], n.rank);
    EXPECT_EQ(c[3], n.nic.domain);
    std::string locals;
    for (const std::string& a : n.nic.locals) locals += (locals.empty() ? "" : " ") + a;
    EXPECT_EQ(c[4], locals);
    EXPECT_EQ(u64(c[5]), n.nic.ops);
    EXPECT_EQ(u64(c[6]), n.nic.bytes);
    EXPECT_EQ(dbl(c[7]), n.nic.busy_ns);
    EXPECT_EQ(dbl(c[8]), n.nic.gbps);
    EXPECT_EQ(nj[i].at("host").get<std::string>(), n.host);
    EXPECT_EQ(nj[i].at("domain").get<std::string>(), n.nic.domain);
    EXPECT_EQ(nj[i].at("bytes").get<uint64_t>(), n.nic.bytes);
    EXPECT_EQ(nj[i].at("busy_ns").get<double>(), n.nic.busy_ns);
    EXPECT_EQ(nj[i].at("gbps").get<double>(), n.nic.gbps);
  }
  test::remove_tree(dir);
}

TEST(ReportTables, EmptyJobGivesHeadersAndEmptyArrays) {
  const Job job;
  const std::string dir = test::make_fixture_dir("tables-empty");
  std::string err;
  ASSERT_TRUE(write_tables(job, dir, nullptr, &err)) << err;
  EXPECT_EQ(parse_csv(slurp(dir + "/links.csv")).size(), 1u);
  EXPECT_TRUE(nlohmann::json::parse(slurp(dir + "/links.json")).empty());
  EXPECT_TRUE(nlohmann::json::parse(slurp(dir + "/nics.json")).empty());
  test::remove_tree(dir);
}

TEST(ReportTables, UnwritableDirectoryIsNamed) {
  std::string err;
  EXPECT_FALSE(write_tables(Job(), "/nonexistent/out", nullptr, &err));
  EXPECT_NE(err.find("/nonexistent/out/links.csv"), std::string::npos) << err;
}

// The bytes of a file of zstd frames, decompressed ("" with a failure).
std::string unzstd(const std::string& compressed) {
  ZSTD_DCtx* d = ZSTD_createDCtx();
  std::string out;
  std::vector<char> buf(ZSTD_DStreamOutSize());
  ZSTD_inBuffer in{compressed.data(), compressed.size(), 0};
  size_t last = 0;
  while (in.pos < in.size) {
    ZSTD_outBuffer o{buf.data(), buf.size(), 0};
    last = ZSTD_decompressStream(d, &o, &in);
    if (ZSTD_isError(last)) {
      ADD_FAILURE() << ZSTD_getErrorName(last);
      break;
    }
    out.append(buf.data(), o.pos);
  }
  ZSTD_freeDCtx(d);
  EXPECT_EQ(last, 0u) << "the frame is not complete";
  return out;
}

// A job of more link rows than the threshold (lowered here) gets
// links.csv.zst and no links.json; its bytes decompress to the links.csv the
// same job gets at or under the threshold. A report of the other form into
// the same directory removes the earlier one's links files.
TEST(ReportTables, LargeJobsGetLinksCsvZstWithTheCsvBytes) {
  test::SyntheticOptions so;
  so.nodes = 16;
  so.ranks_per_node = 8;  // 128 ranks, 16.5k link rows: a 3 MB CSV, several flushes
  const test::SyntheticJob sj = test::make_synthetic_job(so);
  Job job;
  for (const ProcessReport& r : sj.reports) job.ranks.push_back(make_rank(r));
  build_job_tables(&job);
  ASSERT_GT(job.links.size(), 16000u);
  const size_t rows = job.links.size();
  const std::string dir = test::make_fixture_dir("tables-zst");
  std::vector<std::string> files;
  std::string err;
  ASSERT_TRUE(write_tables(job, dir, &files, &err, false, rows)) << err;
  EXPECT_EQ(files, (std::vector<std::string>{dir + "/links.csv", dir + "/links.json",
                                             dir + "/nics.csv", dir + "/nics.json",
                                             dir + "/stalls.csv", dir + "/stalls.json"}));
  EXPECT_STREQ(links_table_name(job, rows), "links.csv");
  const std::string csv = slurp(dir + "/links.csv");
  ASSERT_EQ(parse_csv(csv).size(), rows + 1);
  const std::string nics = slurp(dir + "/nics.csv");

  files.clear();
  ASSERT_TRUE(write_tables(job, dir, &files, &err, false, rows - 1)) << err;
  EXPECT_EQ(files,
            (std::vector<std::string>{dir + "/links.csv.zst", dir + "/nics.csv", dir + "/nics.json",
                                      dir + "/stalls.csv", dir + "/stalls.json"}));
  EXPECT_STREQ(links_table_name(job, rows - 1), "links.csv.zst");
  EXPECT_FALSE(std::filesystem::exists(dir + "/links.csv"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/links.json"));
  const std::string zst = slurp(dir + "/links.csv.zst");
  EXPECT_LT(zst.size() * 4, csv.size()) << "compressed " << zst.size() << " of " << csv.size();
  EXPECT_TRUE(unzstd(zst) == csv) << "the decompressed bytes differ from links.csv";
  EXPECT_EQ(slurp(dir + "/nics.csv"), nics);

  // Back under the threshold: the .zst of the report before is gone.
  ASSERT_TRUE(write_tables(job, dir, nullptr, &err, false, rows)) << err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/links.csv.zst"));
  EXPECT_EQ(slurp(dir + "/links.csv"), csv);
  test::remove_tree(dir);
}

TEST(ReportTables, QuotingAndNumbers) {
  EXPECT_EQ(csv_quote("plain"), "plain");
  EXPECT_EQ(csv_quote("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_quote("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(number_text(0.1), "0.1");
  EXPECT_EQ(number_text(12000), "12000");
  EXPECT_EQ(number_text(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(number_text(std::numeric_limits<double>::quiet_NaN()), "0");
}

}  // namespace
}  // namespace fabtrace::report
