// The version of the fabtrace that wrote a file is in every kind of output
// (common/version.h): each rank's report (text and JSON), the per-op
// timeline, the kernel log, the counter CSV, and every output of `fabtrace
// report` (the summary, the HTML footer, the Perfetto trace's SystemInfo, the
// OTF2 archive's properties, manifest.json beside the tables). Each is read
// back with its own reader, or as the text a user sees. And `fabtrace report`
// says in one line when the ranks were written by different versions.
#include "common/version.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/counter_csv.h"
#include "common/kernel_log.h"
#include "common/oplog_file.h"
#include "common/report_writer.h"
#include "fixtures/perfetto_decode.h"
#include "fixtures/synthetic_job.h"
#include "tests/unit/scratch_dir.h"
#include "userspace/report/html/html_report.h"
#include "userspace/report/job/job.h"
#include "userspace/report/tables/manifest.h"
#include "userspace/report/otf2/otf2_export.h"
#include "userspace/report/perfetto/perfetto_trace.h"
#include "userspace/report/job/report_reader.h"
#include "userspace/report/text/summary.h"

namespace fabtrace {
namespace {

using test::ScratchDir;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Version, IsTheProjectsWithGitDescribe) {
  EXPECT_EQ(std::string(version_number()), "0.9.0");
  EXPECT_EQ(std::string(version()).rfind("0.9.0", 0), 0u) << version();
}

TEST(VersionOutputs, RankReportTextAndJson) {
  ProcessReport r;
  r.host = "node01";
  r.rank = "3";
  r.pid = 99;
  r.providers = "tcp;ofi_rxm";
  r.job.command = "./app -x";
  r.job.launcher = "slurm";
  r.job.job_id = "123";
  r.job.step_id = "0";
  r.job.node_list = "node[01-02]";
  r.job.start_wall_ns = 1767225600000000000ULL;  // 2026-01-01 00:00:00 UTC
  r.job.libfabric = "1.17";
  r.job.run_id = "feed";
  const std::string text = test::report_text(r);
  EXPECT_NE(text.find("[fabtrace] fabtrace " + std::string(version()) +
                      ", libfabric 1.17, slurm job 123 step 0 on node[01-02], started 2026-01-01 "
                      "00:00:00 UTC, "
                      "fabtrace run feed\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("[fabtrace] command: ./app -x\n"), std::string::npos) << text;

  ProcessReport back;
  std::string why;
  ASSERT_TRUE(report::parse_process_report(test::report_json_text(r), &back, &why)) << why;
  EXPECT_EQ(back.fabtrace_version, version());
  EXPECT_EQ(back.job.command, "./app -x");
  EXPECT_EQ(back.job.launcher, "slurm");
  EXPECT_EQ(back.job.job_id, "123");
  EXPECT_EQ(back.job.step_id, "0");
  EXPECT_EQ(back.job.node_list, "node[01-02]");
  EXPECT_EQ(back.job.start_wall_ns, r.job.start_wall_ns);
  EXPECT_EQ(back.job.libfabric, "1.17");
  EXPECT_EQ(back.job.run_id, "feed");
}

TEST(VersionOutputs, AVersion2ReportStillReads) {
  ProcessReport r;
  r.host = "h";
  r.rank = "0";
  r.pid = 1;
  std::string json = test::report_json_text(r);
  // What 0.8 wrote: version 2, without fabtrace_version and job.
  const auto cut = [&json](const std::string& from, const std::string& to) {
    const size_t a = json.find(from), b = json.find(to, a);
    ASSERT_NE(a, std::string::npos);
    ASSERT_NE(b, std::string::npos);
    json.erase(a, b - a);
  };
  cut("\"fabtrace_version\"", "\"host\"");
  json.replace(json.find("\"version\": 3"), 12, "\"version\": 2");
  ProcessReport back;
  std::string why;
  ASSERT_TRUE(report::parse_process_report(json, &back, &why)) << why << "\n" << json;
  EXPECT_EQ(back.fabtrace_version, "");
  EXPECT_EQ(back.job.command, "");
}

TEST(VersionOutputs, OplogKernelLogAndCounterCsv) {
  ScratchDir d;
  {
    OplogFileWriter w;
    OplogMeta m;
    m.host = "h";
    m.rank = "0";
    m.pid = 7;
    ASSERT_TRUE(w.open(d.path("a.oplog"), m));
    w.close();
    OplogReader r;
    std::string err;
    ASSERT_TRUE(r.open(d.path("a.oplog"), &err)) << err;
    EXPECT_EQ(r.header().meta.fabtrace_version, version());
  }
  {
    KernelLogWriter w;
    KernelLogMeta m;
    m.host = "h";
    ASSERT_TRUE(w.create(d.path("k.klog"), m));
    w.close();
    KernelLogReader r;
    std::string err;
    ASSERT_TRUE(r.open(d.path("k.klog"), &err)) << err;
    EXPECT_EQ(r.meta().fabtrace_version, version());
  }
  {
    CounterCsvHeader h;
    h.host = "h";
    h.rank = "0";
    h.pid = 7;
    h.columns = {kCounterMonoColumn, kCounterWallColumn};
    const uint64_t row[2] = {1, 2};
    ASSERT_TRUE(write_counter_csv(d.path("c.csv"), h, row, 1));
    CounterSeries s;
    std::string err;
    ASSERT_TRUE(read_counter_csv(d.path("c.csv"), &s, &err)) << err;
    EXPECT_EQ(s.fabtrace_version, version());
    EXPECT_EQ(s.rows.size(), 1u);
  }
}

class ReportOutputs : public ::testing::Test {
 protected:
  void SetUp() override {
    sj_ = test::make_synthetic_job();
    for (ProcessReport& r : sj_.reports) {
      r.job.command = "./solver --size 4096";
      r.job.launcher = "slurm";
      r.job.job_id = "555";
      r.job.node_list = "n[1-2]";
      r.job.libfabric = "1.17";
      r.job.start_wall_ns = sj_.first_wall_ns - 2000000000ULL;
    }
    dir_ = test::make_fixture_dir("version-outputs");
  }
  void TearDown() override { test::remove_tree(dir_); }
  report::Job load() {
    test::write_synthetic_job(sj_, dir_ + "/job");
    report::Job job;
    std::string err;
    EXPECT_TRUE(report::load_job(dir_ + "/job", &job, &err)) << err;
    return job;
  }
  test::SyntheticJob sj_;
  std::string dir_;
};

TEST_F(ReportOutputs, EveryOutputNamesTheVersionAndTheJob) {
  const report::Job job = load();
  const std::string v = version();
  // The summary opens with the version and the job.
  report::SummaryOptions so;
  so.dir = dir_ + "/job";
  const std::string summary = report::summary_text(job, so);
  const std::string first = summary.substr(0, summary.find('\n'));
  EXPECT_NE(first.find("by fabtrace " + v), std::string::npos) << first;
  EXPECT_NE(summary.find("launcher  slurm job 555 on n[1-2]\n"), std::string::npos) << summary;
  EXPECT_NE(summary.find("command   ./solver --size 4096\n"), std::string::npos) << summary;
  EXPECT_NE(summary.find("libfabric 1.17"), std::string::npos) << summary;
  EXPECT_NE(summary.find("started   2025-12-31 23:59:58 UTC"), std::string::npos) << summary;
  EXPECT_EQ(summary.find("versions  "), std::string::npos) << summary;  // one version
  // The HTML footer.
  const std::string html = report::html_report(job, report::HtmlOptions());
  EXPECT_NE(html.find("<footer>Written by fabtrace " + v), std::string::npos);
  EXPECT_NE(html.find("slurm job 555 on n[1-2]"), std::string::npos);
  // The Perfetto trace's metadata.
  std::vector<std::string> files;
  std::string err;
  ASSERT_TRUE(report::write_perfetto(job, dir_ + "/out", report::PerfettoOptions(), &files, &err))
      << err;
  ASSERT_FALSE(files.empty());
  const test::Decoded dec = test::decode_trace(files[0]);
  EXPECT_TRUE(dec.ok) << dec.problem;
  EXPECT_EQ(dec.service_version, "fabtrace " + v);
  // The OTF2 archive's properties, in its anchor file.
  if (report::otf2_built()) {
    std::string archive;
    report::Otf2Stats st;
    ASSERT_TRUE(report::write_otf2(job, dir_ + "/out", &archive, &st, &err)) << err;
    const std::string anchor = slurp(archive);
    EXPECT_NE(anchor.find(v), std::string::npos);
    EXPECT_NE(anchor.find("FABTRACE::VERSION"), std::string::npos);
    EXPECT_NE(anchor.find("slurm job 555 on n[1-2]"), std::string::npos);
  }
  // manifest.json beside the tables.
  ASSERT_TRUE(report::write_manifest(job, dir_ + "/job", dir_ + "/out",
                                     {dir_ + "/out/links.csv", dir_ + "/out/report.html"}, &err))
      << err;
  const nlohmann::json m = nlohmann::json::parse(slurp(dir_ + "/out/manifest.json"));
  EXPECT_EQ(m.at("format"), "fabtrace-report-manifest");
  EXPECT_EQ(m.at("fabtrace_version"), v);
  EXPECT_EQ(m.at("ranks"), 4);
  EXPECT_EQ(m.at("job").at("launchers"),
            nlohmann::json::parse(R"([["slurm job 555 on n[1-2]", 4]])"));
  EXPECT_EQ(m.at("job").at("rank_versions"), nlohmann::json::array({{v, 4}}));
  EXPECT_EQ(m.at("outputs"), nlohmann::json::parse(R"(["links.csv", "report.html"])"));
}

TEST_F(ReportOutputs, RanksOfDifferentVersionsAreSaidInOneLine) {
  sj_.reports[0].fabtrace_version = "0.9.1";
  const report::Job job = load();
  // Rank 0 claims 0.9.1; the three others were written with this version.
  const std::string summary = report::summary_text(job, report::SummaryOptions());
  const std::string line =
      "versions  the ranks were written by 2 fabtrace versions: " + std::string(version()) +
      " (3 ranks), 0.9.1 (1 rank)\n";
  EXPECT_NE(summary.find(line), std::string::npos) << summary;
}

}  // namespace
}  // namespace fabtrace
