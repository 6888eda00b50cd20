// The byte form `fabtrace report --mpi` gathers parsed reports in
// (parsed_report.h): a report and its rows come back field for field (the
// report compared through the preload's own JSON writer, which writes every
// field), and bytes cut short or with impossible counts are refused.
#include <gtest/gtest.h>

#include <string>

#include "fixtures/synthetic_job.h"
#include "userspace/report/job/parsed_report.h"

namespace fabtrace::report {
namespace {

ParsedReport sample() {
  test::SyntheticOptions o;
  o.nodes = 2;
  o.ranks_per_node = 2;
  ParsedReport p;
  p.ok = true;
  p.why = "why \xff\n";  // any bytes
  p.report = test::make_synthetic_job(o).reports[1];
  p.report.source = "uprobes";
  JobMeta& j = p.report.job;  // every field (FABTRACE_JOB_META_FIELDS)
  j.command = "./app -n 4";
  j.launcher = "slurm";
  j.job_id = "12";
  j.step_id = "3";
  j.node_list = "n[01-02]";
  j.start_wall_ns = 1767225600000000000ULL;
  j.libfabric = "1.17";
  j.run_id = "feed";
  p.link_count = 7;
  p.unlisted_locals = 3;
  double x = 0.125;
  for (const LinkReport& l : p.report.links)
    for (const OpRow& o2 : l.rows) {
      LinkRow r;
      r.set_owner(p.report.host, p.report.rank, -p.report.pid);
      r.set_link(l.local, l.remote);
      r.set_op(o2.op);
      r.row = o2;
      r.outlier_ratio = x;
      r.set_kernel(true, 11, 12);
      r.posted_mut().logged = 13;
      r.posted_mut().matched = 14;
      r.posted_mut().late = 15;
      r.posted_mut().late_median_ns = x * 3;
      r.posted_mut().set_unknown("unknown " + o2.op);
      x *= 1.7;
      p.rows.push_back(r);
    }
  return p;
}

void expect_same_rows(const ParsedReport& a, const ParsedReport& b) {
  ASSERT_EQ(a.rows.size(), b.rows.size());
  for (size_t i = 0; i < a.rows.size(); ++i) {
    const LinkRow& x = a.rows[i];
    const LinkRow& y = b.rows[i];
    EXPECT_EQ(x.host(), y.host());
    EXPECT_EQ(x.rank(), y.rank());
    EXPECT_EQ(x.pid(), y.pid());
    EXPECT_EQ(x.local(), y.local());
    EXPECT_EQ(x.remote(), y.remote());
    EXPECT_EQ(x.op(), y.op());
    EXPECT_EQ(x.outlier_ratio, y.outlier_ratio);
    EXPECT_EQ(x.kernel_logged(), y.kernel_logged());
    EXPECT_EQ(x.retrans(), y.retrans());
    EXPECT_EQ(x.drops(), y.drops());
    EXPECT_EQ(x.posted().logged, y.posted().logged);
    EXPECT_EQ(x.posted().matched, y.posted().matched);
    EXPECT_EQ(x.posted().late, y.posted().late);
    EXPECT_EQ(x.posted().late_median_ns, y.posted().late_median_ns);
    EXPECT_EQ(x.posted().unknown(), y.posted().unknown());
    // The row itself: its JSON form (every field of OpRow) through a one-row report.
    ProcessReport rx, ry;
    OpRow ox, oy;
    static_cast<OpStats&>(ox) = x.row;
    static_cast<OpStats&>(oy) = y.row;
    ox.op = x.op();
    oy.op = y.op();
    rx.links.push_back({"l", "r", {ox}});
    ry.links.push_back({"l", "r", {oy}});
    EXPECT_EQ(test::report_json_text(rx), test::report_json_text(ry));
  }
}

TEST(ParsedReportCodec, RoundTripsEveryField) {
  const ParsedReport a = sample();
  ASSERT_FALSE(a.rows.empty());
  ASSERT_FALSE(a.report.nics.empty());
  ASSERT_FALSE(a.report.cqs.empty());
  std::string bytes;
  encode_parsed_report(a, &bytes);
  ParsedReport second;
  second.why = "second";
  encode_parsed_report(second, &bytes);

  size_t pos = 0;
  ParsedReport b, c;
  ASSERT_TRUE(decode_parsed_report(bytes.data(), bytes.size(), &pos, &b));
  ASSERT_TRUE(decode_parsed_report(bytes.data(), bytes.size(), &pos, &c));
  EXPECT_EQ(pos, bytes.size());
  EXPECT_TRUE(b.ok);
  EXPECT_EQ(b.why, a.why);
  EXPECT_EQ(b.report.source, "uprobes");
  EXPECT_EQ(b.report.job.node_list, "n[01-02]");
  EXPECT_EQ(test::report_json_text(b.report), test::report_json_text(a.report));
  EXPECT_EQ(b.link_count, 7u);
  EXPECT_EQ(b.unlisted_locals, 3u);
  expect_same_rows(a, b);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.why, "second");
  EXPECT_TRUE(c.rows.empty());
}

TEST(ParsedReportCodec, RefusesBytesCutShortOrWithImpossibleCounts) {
  std::string bytes;
  encode_parsed_report(sample(), &bytes);
  for (size_t n = 0; n < bytes.size(); n += 1 + n / 16) {
    size_t pos = 0;
    ParsedReport p;
    EXPECT_FALSE(decode_parsed_report(bytes.data(), n, &pos, &p)) << "cut at " << n;
    EXPECT_EQ(pos, 0u);
  }
  // A string length of 2^64-1 right after the ok flag: refused, nothing allocated.
  std::string bad = bytes;
  for (size_t i = 1; i < 9; ++i) bad[i] = '\xff';
  size_t pos = 0;
  ParsedReport p;
  EXPECT_FALSE(decode_parsed_report(bad.data(), bad.size(), &pos, &p));
  pos = bytes.size() + 1;
  EXPECT_FALSE(decode_parsed_report(bytes.data(), bytes.size(), &pos, &p));
}

}  // namespace
}  // namespace fabtrace::report
