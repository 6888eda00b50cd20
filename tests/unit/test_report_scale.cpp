// `fabtrace report` at scale: the table rows written without a JSON document
// per row give the text nlohmann's dump() gives (the ground truth is nlohmann
// itself), and loading a job on several threads gives the job one thread gives.
#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/csv.h"
#include "fixtures/synthetic_job.h"
#include "userspace/report/job/job.h"
#include "userspace/report/tables/table_row.h"
#include "userspace/report/tables/tables.h"

namespace fabtrace::report {
namespace {

std::string json_double(double v) {
  std::string s;
  append_json_double(&s, v);
  return s;
}

std::string json_string(const std::string& v) {
  std::string s;
  append_json_string(&s, v);
  return s;
}

TEST(TableRow, DoublesAreTheTextNlohmannDumps) {
  const double fixed[] = {0.0,    -0.0,   1.0,      0.1,  20000.0, 1e15,   1e16,
                          1e17,   1e21,   1e-4,     1e-5, 123.456, 5e-324, 1.7976931348623157e308,
                          2.5e-7, 900000, 1.0 / 3.0};
  for (const double v : fixed) EXPECT_EQ(json_double(v), nlohmann::json(v).dump()) << v;
  // Random bit patterns: every finite double is a possible latency or rate.
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const uint64_t bits = rng();
    double v;
    std::memcpy(&v, &bits, sizeof(v));
    if (!std::isfinite(v)) continue;
    ASSERT_EQ(json_double(v), nlohmann::json(v).dump()) << bits;
  }
  EXPECT_EQ(json_double(std::numeric_limits<double>::quiet_NaN()), "null");
  EXPECT_EQ(json_double(std::numeric_limits<double>::infinity()), "null");
}

// The CSV's doubles: std::to_chars's shortest text (whole numbers are
// written without it, tables.cpp): fixed or scientific, whichever is shorter.
TEST(TableRow, CsvDoublesAreTheTextToCharsWrites) {
  const auto want = [](double v) {
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof(buf), v);
    return std::string(buf, r.ptr);
  };
  std::vector<double> cases = {0.0,
                               -0.0,
                               1,
                               -1,
                               9007199254740991.0,
                               -9007199254740991.0,
                               9007199254740992.0,
                               1e15,
                               1e16,
                               123456789012345.0,
                               0.5,
                               1e-7};
  for (int m = 0; m <= 15; ++m)
    for (int k = 1; k < 1000; ++k) {
      const double v = k * std::pow(10.0, m);
      cases.push_back(v);
      cases.push_back(-v);
      cases.push_back(v + 1);
    }
  std::mt19937_64 rng(53);
  for (int i = 0; i < 200000; ++i) {
    cases.push_back(static_cast<double>(rng() >> (11 + rng() % 53)));
    uint64_t bits = rng();
    double v;
    std::memcpy(&v, &bits, sizeof v);
    if (std::isfinite(v)) cases.push_back(v);
  }
  for (const double v : cases) ASSERT_EQ(number_text(v), want(v)) << v;
}

TEST(TableRow, StringsAreEscapedAsNlohmannEscapes) {
  const std::string cases[] = {"",
                               "node01",
                               "fi_addr_cxi://0x10a00",
                               "a \"quoted\" word",
                               "back\\slash",
                               std::string("nul\0in", 6),
                               "tab\tnew\nline\r\x01\x1f",
                               "del\x7f",
                               "caf\xc3\xa9 \xe2\x82\xac",
                               "(any)"};
  for (const std::string& s : cases) EXPECT_EQ(json_string(s), nlohmann::json(s).dump()) << s;
  // Invalid UTF-8 is refused as nlohmann refuses it (the writer's caller
  // sees the same error as before).
  EXPECT_THROW(json_string("bad \xff byte"), nlohmann::json::type_error);
}

TEST(TableRow, RowsAreTheDumpOfTheSameObjectAndTheCsvOfItsValues) {
  std::string json, csv;
  JsonRow j(&json);
  CsvRow c(&csv);
  nlohmann::ordered_json want;
  std::vector<std::string> want_csv;
  const auto both = [&](const char* key, const auto& v) {
    j(key, v);
    c(key, v);
    want[key] = v;
  };
  both("host", std::string("node,01"));
  both("pid", int64_t{-4});
  both("bytes", uint64_t{18446744073709551615u});
  both("cq", uint32_t{7});
  both("p99_ns", 20050.5);
  both("whole", 3.0);
  both("flag", true);
  both("off", false);
  both("why", std::string("say \"hi\"\n"));
  j.end();
  c.end();
  EXPECT_EQ(json, want.dump());
  EXPECT_EQ(csv, csv_quote("node,01") + ",-4,18446744073709551615,7,20050.5,3,true,false," +
                     csv_quote("say \"hi\"\n") + "\n");
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// Every table of the job, and what the loader skipped, as one text.
std::string tables_text(const Job& job, const std::string& out) {
  std::filesystem::create_directories(out);
  std::string err;
  std::vector<std::string> files;
  EXPECT_TRUE(write_tables(job, out, &files, &err)) << err;
  std::string all;
  for (const std::string& f : files) all += "== " + f.substr(out.size()) + "\n" + slurp(f);
  for (const Skipped& s : job.skipped) all += "skipped " + s.path + ": " + s.why + "\n";
  for (const Rank& r : job.ranks)
    all += "rank " + r.host() + " " + r.rank() + " links " + std::to_string(r.link_count) + "\n";
  all += "nics " + std::to_string(job.nic_count()) + " ops " + std::to_string(job.ops) + "\n";
  return all;
}

TEST(ReportLoader, OneThreadAndSeveralGiveTheSameJob) {
  const std::string dir = test::make_fixture_dir("threads");
  test::SyntheticOptions o;
  o.nodes = 3;
  o.ranks_per_node = 5;
  const test::SyntheticJob sj = test::make_synthetic_job(o);
  test::write_synthetic_job(sj, dir + "/job", /*per_node_dirs=*/true);
  // A second copy of a report (which one is used depends on the file order,
  // never on the threads) and a truncated report.
  std::filesystem::copy_file(dir + "/job/node02/" + test::report_name(sj.reports[6]),
                             dir + "/job/" + test::report_name(sj.reports[6]));
  {
    const std::string text = test::report_json_text(sj.reports[0]);
    std::ofstream(dir + "/job/fabtrace.cut.r99.p99.json") << text.substr(0, text.size() / 2);
  }
  std::string first;
  for (const unsigned threads : {1u, 2u, 7u}) {
    LoadOptions opt;
    opt.threads = threads;
    Job job;
    std::string err;
    ASSERT_TRUE(load_job(dir + "/job", opt, &job, &err)) << err;
    ASSERT_EQ(job.ranks.size(), sj.reports.size());
    EXPECT_EQ(job.skipped.size(), 2u);
    EXPECT_EQ(job.ops, sj.ops);
    // The ranks' rows were moved into the job's table, counted first.
    size_t rows = 0;
    for (const ProcessReport& r : sj.reports)
      for (const LinkReport& l : r.links) rows += l.rows.size();
    EXPECT_EQ(job.links.size(), rows);
    for (size_t i = 0; i < job.ranks.size(); ++i) {
      EXPECT_TRUE(job.ranks[i].report.links.empty());
      EXPECT_EQ(job.ranks[i].link_count, sj.reports[i].links.size());
    }
    const std::string text = tables_text(job, dir + "/out" + std::to_string(threads));
    if (first.empty())
      first = text;
    else
      EXPECT_EQ(text, first) << threads << " threads";
  }
  test::remove_tree(dir);
}

}  // namespace
}  // namespace fabtrace::report
