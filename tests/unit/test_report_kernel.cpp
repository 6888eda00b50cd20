// `fabtrace report` joining a node's kernel log (fabtrace record) into the job:
// on a fixture whose log was written by the real writer with planted answers (a
// preemption, a futex block, a retransmit burst on one link, a slow op), the
// summary, stalls.csv, links.csv and the HTML say exactly those causes, and a
// missing, foreign or corrupt log is named and never fatal.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "common/kernel_log.h"
#include "fixtures/kernel_fixture.h"
#include "userspace/report/analysis/kernel_join.h"
#include "userspace/report/html/html_report.h"
#include "userspace/report/job/job.h"
#include "userspace/report/tables/tables.h"
#include "userspace/report/text/summary.h"

namespace fabtrace::report {
namespace {

struct Fixture {
  std::string dir;
  test::KernelFixture k;
  Job job;
};

Fixture load() {
  Fixture f;
  f.dir = test::make_fixture_dir("report-kernel");
  f.k = test::write_kernel_fixture(f.dir);
  std::string err;
  EXPECT_TRUE(load_job(f.dir, &f.job, &err)) << err;
  return f;
}

const Stall* stall(const Job& job, long pid, uint32_t cq) {
  for (const Stall& s : job.stalls)
    if (s.pid == pid && s.cq.id == cq) return &s;
  return nullptr;
}

std::string lines_after(const std::string& text, const std::string& first, int n) {
  const size_t at = text.find(first);
  if (at == std::string::npos) return "";
  size_t end = at;
  for (int i = 0; i <= n && end != std::string::npos; ++i) end = text.find('\n', end + 1);
  return text.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

TEST(ReportKernel, EachStallGetsTheKernelsCause) {
  const Fixture f = load();
  ASSERT_EQ(f.job.kernel.size(), 1u);
  const Stall* s0 = stall(f.job, f.k.pid0, 0);
  const Stall* s1 = stall(f.job, f.k.pid1, 0);
  ASSERT_NE(s0, nullptr);
  ASSERT_NE(s1, nullptr);
  ASSERT_TRUE(s0->has_cause);
  ASSERT_TRUE(s1->has_cause);
  EXPECT_EQ(s0->cause.verdict, "preempted by stress-ng[4312] for 48.1 of 50.2 ms");
  EXPECT_EQ(s1->cause.verdict, "blocked in futex for 9.8 of 10.0 ms");
  // The gap length stays the preload's.
  EXPECT_DOUBLE_EQ(s0->cq.max_gap_ns, f.k.gap0_ns);
  // A 1 ms gap under the stall threshold: the host has a log, the log no record.
  const Stall* other = stall(f.job, f.k.pid0, 1);
  ASSERT_NE(other, nullptr);
  EXPECT_TRUE(other->kernel_logged);
  EXPECT_FALSE(other->has_cause);
  EXPECT_NE(stall_why(*other).find("no record of this gap"), std::string::npos);
}

TEST(ReportKernel, SummaryNamesCausesSlowOpsAndTheNode) {
  const Fixture f = load();
  const std::string s = summary_text(f.job, SummaryOptions());
  const std::string r0 = lines_after(s, "node01 r0 CQ#0  50.2 ms", 1);
  EXPECT_NE(r0.find("      why: preempted by stress-ng[4312] for 48.1 of 50.2 ms"),
            std::string::npos)
      << s;
  const std::string r1 = lines_after(s, "node01 r1 CQ#0  10.0 ms", 1);
  EXPECT_NE(r1.find("      why: blocked in futex for 9.8 of 10.0 ms"), std::string::npos) << s;
  // By rank (the job's ranks only: summary_kernel.cpp).
  EXPECT_NE(s.find("  node01 r0 tid " + std::to_string(f.k.pid0) +
                   "  fi_send 4 KiB 10.0.0.1:50000 -> 10.0.0.1:50001  12.0 ms: on CPU for 12.0 "
                   "of 12.0 ms (running, not polling); 300 page faults"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("TCP: 10 retransmitted segments, 2 dropped packets (9 on traced connections"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("not attached: raw_tp/cass_err"), std::string::npos) << s;
  EXPECT_NE(s.find("IRQ time taken from traced threads: cpu1 100.0 us"), std::string::npos) << s;
}

TEST(ReportKernel, RetransmitsAndDropsLandOnTheirLink) {
  const Fixture f = load();
  size_t rows0 = 0, rows1 = 0;
  for (const LinkRow& l : f.job.links) {
    EXPECT_TRUE(l.kernel_logged());
    if (l.pid() == f.k.pid0 && l.local() == f.k.addr0 && l.remote() == f.k.addr1) {
      ++rows0;
      EXPECT_EQ(l.retrans(), f.k.retrans) << l.op();
      EXPECT_EQ(l.drops(), f.k.drops) << l.op();
    } else {
      ++rows1;
      EXPECT_EQ(l.retrans() + l.drops(), 0u) << l.host() << " " << l.rank() << " " << l.local();
    }
  }
  EXPECT_GT(rows0, 0u);
  EXPECT_GT(rows1, 0u);
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* m = open_memstream(&buf, &len);
  ASSERT_TRUE(write_links_csv(f.job, m));
  std::fclose(m);
  const std::string csv(buf, len);
  std::free(buf);
  EXPECT_NE(csv.find(",kernel_logged,retransmits,drops\n"), std::string::npos);
  EXPECT_NE(csv.find(",true,7,2\n"), std::string::npos) << csv.substr(0, 600);
}

TEST(ReportKernel, StallsTableHoldsTheBreakdown) {
  const Fixture f = load();
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* m = open_memstream(&buf, &len);
  ASSERT_TRUE(write_stalls_csv(f.job, m));
  std::fclose(m);
  std::istringstream in(std::string(buf, len));
  std::free(buf);
  std::string header, line, row0;
  std::getline(in, header);
  while (std::getline(in, line))
    if (line.rfind("node01,0," + std::to_string(f.k.pid0) + ",0,", 0) == 0) row0 = line;
  ASSERT_FALSE(row0.empty());
  std::vector<std::string> cols, vals;
  std::string x;
  for (std::istringstream h(header); std::getline(h, x, ',');) cols.push_back(x);
  for (std::istringstream v(row0); std::getline(v, x, ',');) vals.push_back(x);
  ASSERT_EQ(cols.size(), vals.size()) << row0;
  std::map<std::string, std::string> kv;
  for (size_t i = 0; i < cols.size(); ++i) kv[cols[i]] = vals[i];
  EXPECT_EQ(kv["explained"], "true");
  EXPECT_EQ(kv["runnable_ns"], "48100000");
  EXPECT_EQ(kv["on-cpu_ns"], "2100000");
  EXPECT_EQ(kv["ran_instead_1"], "stress-ng[4312]");
  EXPECT_EQ(kv["ran_instead_1_ns"], "48100000");
  EXPECT_EQ(kv["why"], "preempted by stress-ng[4312] for 48.1 of 50.2 ms");
}

TEST(ReportKernel, HtmlShowsWhyNetworkAndNodes) {
  const Fixture f = load();
  const std::string html = html_report(f.job, HtmlOptions());
  EXPECT_NE(html.find("id=\"why-table\""), std::string::npos);
  EXPECT_NE(html.find("preempted by stress-ng[4312] for 48.1 of 50.2 ms"), std::string::npos);
  EXPECT_NE(html.find("class=\"why-bar\""), std::string::npos);
  EXPECT_NE(html.find("id=\"net-table\""), std::string::npos);
  EXPECT_NE(html.find("<td class=\"n\">7</td><td class=\"n\">2</td>"), std::string::npos);
  EXPECT_NE(html.find("id=\"nodes\""), std::string::npos);
}

TEST(ReportKernel, ForeignCorruptAndOrphanLogsAreNamedNotFatal) {
  Fixture f = load();
  // A log cut in half, a file that is not a log, a log of a host without ranks.
  std::ifstream in(f.k.klog, std::ios::binary);
  std::stringstream whole;
  whole << in.rdbuf();
  const std::string bytes = whole.str();
  std::ofstream(f.dir + "/fabtrace_kernel.node01.p1.klog", std::ios::binary)
      << bytes.substr(0, bytes.size() / 2);
  std::ofstream(f.dir + "/fabtrace_kernel.node01.p2.klog") << "not a kernel log";
  {
    KernelLogMeta m;
    m.host = "node99";  // no rank of this job ran there
    KernelLogWriter w;
    ASSERT_TRUE(w.create(f.dir + "/fabtrace_kernel.node99.p3.klog", m)) << w.error();
    w.write_end(1);
    w.close();
  }
  Job job;
  std::string err;
  ASSERT_TRUE(load_job(f.dir, &job, &err)) << err;
  bool skipped_foreign = false, partial_cut = false, orphan = false;
  for (const Skipped& s : job.skipped)
    if (s.path.find(".p2.klog") != std::string::npos) skipped_foreign = true;
  for (const Skipped& s : job.partial) {
    if (s.path.find(".p1.klog") != std::string::npos &&
        s.why.find("cut short") != std::string::npos)
      partial_cut = true;
    if (s.path.find(".p3.klog") != std::string::npos &&
        s.why.find("no rank of this job") != std::string::npos)
      orphan = true;
  }
  EXPECT_TRUE(skipped_foreign);
  EXPECT_TRUE(partial_cut);
  EXPECT_TRUE(orphan);
  // The whole log still explains the stalls.
  const Stall* s0 = stall(job, f.k.pid0, 0);
  ASSERT_NE(s0, nullptr);
  EXPECT_TRUE(s0->has_cause);
}

}  // namespace
}  // namespace fabtrace::report
