// report_reader: a per-rank report JSON read back, and every way a file in a
// job directory can be unusable; load_job over a directory mixing good and
// bad files.
#include "userspace/report/job/report_reader.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "common/report_writer.h"
#include "fixtures/synthetic_job.h"
#include "userspace/report/job/job.h"

namespace fabtrace::report {
namespace {

std::string json_of(const ProcessReport& r) { return test::report_json_text(r); }

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST(ReportReader, ReadsBackWhatThePreloadWrites) {
  const test::SyntheticJob sj = test::make_synthetic_job();
  const ProcessReport& in = sj.reports[1];
  ProcessReport out;
  std::string why;
  FileProblem p = FileProblem::kCorrupt;
  ASSERT_TRUE(parse_process_report(json_of(in), &out, &why, &p)) << why;
  EXPECT_EQ(p, FileProblem::kNone);
  EXPECT_EQ(out.host, in.host);
  EXPECT_EQ(out.rank, in.rank);
  EXPECT_EQ(out.pid, in.pid);
  EXPECT_EQ(out.providers, in.providers);
  EXPECT_EQ(out.start_mono_ns, in.start_mono_ns);
  EXPECT_EQ(out.start_wall_ns, in.start_wall_ns);
  EXPECT_DOUBLE_EQ(out.duration_s, in.duration_s);
  EXPECT_EQ(out.tsc, in.tsc);
  EXPECT_DOUBLE_EQ(out.ns_per_tick, in.ns_per_tick);
  EXPECT_EQ(out.ring_slots, in.ring_slots);
  ASSERT_EQ(out.nics.size(), in.nics.size());
  EXPECT_EQ(out.nics[0].domain, in.nics[0].domain);
  EXPECT_EQ(out.nics[0].bytes, in.nics[0].bytes);
  EXPECT_DOUBLE_EQ(out.nics[0].gbps, in.nics[0].gbps);
  ASSERT_EQ(out.cqs.size(), in.cqs.size());
  for (size_t i = 0; i < in.cqs.size(); ++i) {
    EXPECT_EQ(out.cqs[i].id, in.cqs[i].id);
    EXPECT_EQ(out.cqs[i].polls, in.cqs[i].polls);
    for (int k = 0; k < 6; ++k) EXPECT_EQ(out.cqs[i].gaps[k], in.cqs[i].gaps[k]);
    EXPECT_DOUBLE_EQ(out.cqs[i].max_gap_ns, in.cqs[i].max_gap_ns);
    EXPECT_DOUBLE_EQ(out.cqs[i].max_gap_end_s, in.cqs[i].max_gap_end_s);
  }
  ASSERT_EQ(out.links.size(), in.links.size());
  for (size_t i = 0; i < in.links.size(); ++i) {
    EXPECT_EQ(out.links[i].local, in.links[i].local);
    EXPECT_EQ(out.links[i].remote, in.links[i].remote);
    ASSERT_EQ(out.links[i].rows.size(), in.links[i].rows.size());
    for (size_t k = 0; k < in.links[i].rows.size(); ++k) {
      const OpRow &a = out.links[i].rows[k], &b = in.links[i].rows[k];
      EXPECT_EQ(a.op, b.op);
      EXPECT_EQ(a.bytes, b.bytes);
      EXPECT_EQ(a.size_unknown, b.size_unknown);
      EXPECT_EQ(a.count, b.count);
      EXPECT_EQ(a.errors, b.errors);
      EXPECT_EQ(a.unfinished, b.unfinished);
      EXPECT_EQ(a.eagain, b.eagain);
      EXPECT_EQ(a.within_50us, b.within_50us);
      EXPECT_EQ(a.recv, b.recv);
      EXPECT_DOUBLE_EQ(a.p50_ns, b.p50_ns);
      EXPECT_DOUBLE_EQ(a.p99_ns, b.p99_ns);
      EXPECT_DOUBLE_EQ(a.gbps, b.gbps);
    }
  }
}

TEST(ReportReader, TruncatedIsSaidToBeTruncated) {
  const std::string full = json_of(test::make_synthetic_job().reports[0]);
  for (size_t cut : {size_t{1}, size_t{40}, full.size() / 2, full.size() - 3}) {
    SCOPED_TRACE(cut);
    ProcessReport out;
    std::string why;
    FileProblem p;
    EXPECT_FALSE(parse_process_report(full.substr(0, cut), &out, &why, &p));
    EXPECT_EQ(p, FileProblem::kTruncated) << why;
    EXPECT_NE(why.find("truncated"), std::string::npos) << why;
    EXPECT_EQ(why.find('\n'), std::string::npos);
    EXPECT_TRUE(out.links.empty());
  }
}

TEST(ReportReader, CorruptForeignEmptyAndNewerAreToldApart) {
  const std::string good = json_of(test::make_synthetic_job().reports[0]);
  struct Case {
    std::string text;
    FileProblem want;
    const char* word;
  } cases[] = {
      {"", FileProblem::kEmpty, "empty"},
      {"  \n", FileProblem::kEmpty, "empty"},
      {"{\"format\": \"fabtrace-report\", oops}", FileProblem::kCorrupt, "not valid JSON"},
      {std::string("\x7f"
                   "ELF\x02\x01\x01\0\0\0",
                   10),
       FileProblem::kCorrupt, "JSON"},
      {good + "garbage", FileProblem::kCorrupt, "not valid JSON"},
      {"[1, 2, 3]", FileProblem::kForeign, "foreign"},
      {"{\"name\": \"some other tool\", \"links\": []}", FileProblem::kForeign, "foreign"},
      {"{\"format\": \"chrome-trace\", \"version\": 1}", FileProblem::kForeign, "chrome-trace"},
      {"{\"format\": \"fabtrace-report\", \"version\": 99, \"host\": \"h\"}", FileProblem::kVersion,
       "version 99"},
      {"{\"format\": \"fabtrace-report\", \"version\": 1, \"rank\": \"0\", \"pid\": 1}",
       FileProblem::kCorrupt, "host is missing"},
      {"{\"format\": \"fabtrace-report\", \"version\": 1, \"host\": \"h\", \"rank\": \"0\", "
       "\"pid\": 1, \"links\": [{\"local\": \"a\", \"remote\": \"b\", \"ops\": [{\"op\": "
       "\"fi_send\", \"count\": \"many\"}]}]}",
       FileProblem::kCorrupt, "links[0].ops[0].count"},
      {"{\"format\": \"fabtrace-report\", \"version\": 1, \"host\": \"h\", \"rank\": \"0\", "
       "\"pid\": 1, \"cqs\": {}}",
       FileProblem::kCorrupt, "cqs"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text.substr(0, 60));
    ProcessReport out;
    std::string why;
    FileProblem p = FileProblem::kNone;
    EXPECT_FALSE(parse_process_report(c.text, &out, &why, &p));
    EXPECT_EQ(p, c.want) << why;
    EXPECT_NE(why.find(c.word), std::string::npos) << why;
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  }
}

// A version 1 report (NIC addresses joined with commas, no ring_full, no
// size_unknown) still reads.
TEST(ReportReader, ReadsVersionOne) {
  const std::string v1 =
      "{\"format\": \"fabtrace-report\", \"version\": 1, \"host\": \"h\", \"rank\": \"0\", "
      "\"pid\": 7, \"nics\": [{\"domain\": \"eth0\", \"local\": "
      "\"fi_sockaddr_in://10.0.0.1:1,fi_sockaddr_in://10.0.0.1:2\", \"ops\": 3}], \"links\": "
      "[{\"local\": \"fi_sockaddr_in://10.0.0.1:1\", \"remote\": \"(any)\", \"ops\": [{\"op\": "
      "\"fi_recv\", \"bytes\": 64, \"count\": 5, \"untimed\": 2, \"imm\": 4}]}]}";
  ProcessReport out;
  std::string why;
  ASSERT_TRUE(parse_process_report(v1, &out, &why)) << why;
  ASSERT_EQ(out.nics.size(), 1u);
  EXPECT_EQ(out.nics[0].locals, (std::vector<std::string>{"fi_sockaddr_in://10.0.0.1:1",
                                                          "fi_sockaddr_in://10.0.0.1:2"}));
  const OpRow& r = out.links.at(0).rows.at(0);
  EXPECT_TRUE(r.recv);
  EXPECT_FALSE(r.size_unknown);
  EXPECT_EQ(r.untimed, 2u);
  EXPECT_EQ(r.ring_full, 0u);
  EXPECT_EQ(r.within_50us, 4u);  // version 1's "imm"
}

TEST(ReportReader, ToleratesMissingOptionalFieldsAndNulls) {
  ProcessReport out;
  std::string why;
  ASSERT_TRUE(parse_process_report(
      "{\"format\": \"fabtrace-report\", \"version\": 1, \"host\": \"h\", \"rank\": 3, \"pid\": 9, "
      "\"future_field\": {\"x\": 1}, \"links\": [{\"local\": \"a\", \"remote\": \"b\", \"ops\": "
      "[{\"op\": \"fi_recv\", \"count\": 2, \"p99_ns\": null}]}]}",
      &out, &why))
      << why;
  EXPECT_EQ(out.rank, "3");
  ASSERT_EQ(out.links.size(), 1u);
  EXPECT_TRUE(out.links[0].rows[0].recv);  // by the op's name
  EXPECT_EQ(out.links[0].rows[0].p99_ns, 0.0);
}

TEST(ReportReader, MissingFileIsUnreadable) {
  ProcessReport out;
  std::string why;
  FileProblem p;
  EXPECT_FALSE(read_process_report("/nonexistent/fabtrace.x.r0.p1.json", &out, &why, &p));
  EXPECT_EQ(p, FileProblem::kUnreadable);
  EXPECT_NE(why.find("No such file"), std::string::npos) << why;
}

// A job directory with good files and every kind of bad one: each bad file is
// skipped with its own one-line reason, everything else is read.
TEST(ReportLoader, SkipsEveryBadFileAndKeepsTheRest) {
  const std::string dir = test::make_fixture_dir("mixed");
  const test::SyntheticJob sj = test::make_synthetic_job();
  test::write_synthetic_job(sj, dir, /*per_node_dirs=*/true);
  const std::string good = json_of(sj.reports[0]);
  const std::map<std::string, std::string> bad = {
      {dir + "/fabtrace.cut.r8.p8.json", good.substr(0, good.size() / 3)},
      {dir + "/node01/fabtrace.bin.r9.p9.json", std::string("\0\1\2\3garbage", 11)},
      {dir + "/fabtrace.other.r7.p7.json", "{\"traceEvents\": []}"},
      {dir + "/fabtrace.empty.r6.p6.json", ""},
      {dir + "/fabtrace_ops.junk.r5.p5.oplog", "not an oplog at all"},
      {dir + "/fabtrace_nic.junk.r4.p4.csv", "time,value\n1,2\n"},
      {dir + "/fabtrace.textonly.r3.p3.txt", "[fabtrace] host=textonly\n"},
  };
  for (const auto& kv : bad) write_file(kv.first, kv.second);
  // Files with other names are not looked at.
  write_file(dir + "/notes.json", "{}");
  write_file(dir + "/app.log", "hello");
  // A second copy of rank 0's report: the same process, used once.
  std::filesystem::create_directories(dir + "/copy");
  write_file(dir + "/copy/" + test::report_name(sj.reports[0]), good);

  Job job;
  std::string err;
  ASSERT_TRUE(load_job(dir, &job, &err)) << err;
  EXPECT_EQ(job.ranks.size(), sj.reports.size());
  std::map<std::string, std::string> skipped;
  for (const Skipped& s : job.skipped) skipped[s.path] = s.why;
  EXPECT_EQ(skipped.size(), bad.size() + 1);
  // One of the two copies of rank 0's report is used, the other named.
  const std::string copy = dir + "/copy/" + test::report_name(sj.reports[0]);
  const std::string orig = dir + "/node01/" + test::report_name(sj.reports[0]);
  ASSERT_NE(skipped.count(copy) + skipped.count(orig), 0u);
  EXPECT_NE(skipped[skipped.count(copy) ? copy : orig].find("second report"), std::string::npos);
  for (const auto& kv : bad) {
    ASSERT_TRUE(skipped.count(kv.first)) << kv.first;
    EXPECT_EQ(skipped[kv.first].find('\n'), std::string::npos);
    EXPECT_EQ(skipped[kv.first].find(kv.first), std::string::npos) << "the path is given apart";
  }
  EXPECT_NE(skipped[dir + "/fabtrace.cut.r8.p8.json"].find("truncated"), std::string::npos);
  EXPECT_NE(skipped[dir + "/fabtrace.other.r7.p7.json"].find("foreign"), std::string::npos);
  EXPECT_NE(skipped[dir + "/fabtrace.empty.r6.p6.json"].find("empty"), std::string::npos);
  EXPECT_NE(skipped[dir + "/fabtrace_ops.junk.r5.p5.oplog"].find("not a fabtrace oplog"),
            std::string::npos)
      << skipped[dir + "/fabtrace_ops.junk.r5.p5.oplog"];
  EXPECT_EQ(
      skipped[dir + "/fabtrace_nic.junk.r4.p4.csv"].rfind("line 1: not a fabtrace-counters", 0), 0u)
      << skipped[dir + "/fabtrace_nic.junk.r4.p4.csv"];
  EXPECT_NE(skipped[dir + "/fabtrace.textonly.r3.p3.txt"].find("without its JSON"),
            std::string::npos);
  test::remove_tree(dir);
}

TEST(ReportLoader, NotADirectoryIsAnError) {
  Job job;
  std::string err;
  EXPECT_FALSE(load_job("/nonexistent/run42", &job, &err));
  EXPECT_NE(err.find("/nonexistent/run42"), std::string::npos);
}

}  // namespace
}  // namespace fabtrace::report
