// The output file names (common/output_names.h): built and read back, and names
// that are not fabtrace's, or are built from hostile hosts and ranks.
#include "common/output_names.h"

#include <gtest/gtest.h>

#include <string>

namespace fabtrace {
namespace {

TEST(OutputNames, EveryKindHasItsName) {
  EXPECT_EQ(output_file_name(OutputKind::kReportJson, "n1", "0", 42), "fabtrace.n1.r0.p42.json");
  EXPECT_EQ(output_file_name(OutputKind::kReportText, "n1", "0", 42), "fabtrace.n1.r0.p42.txt");
  EXPECT_EQ(output_file_name(OutputKind::kOplog, "n1", "0", 42), "fabtrace_ops.n1.r0.p42.oplog");
  EXPECT_EQ(output_file_name(OutputKind::kNicCounters, "n1", "0", 42),
            "fabtrace_nic.n1.r0.p42.csv");
  EXPECT_EQ(output_file_name(OutputKind::kKernelLog, "n1", "ignored", 77),
            "fabtrace_kernel.n1.p77.klog");
  EXPECT_EQ(kernel_log_file_name("n1", 77), "fabtrace_kernel.n1.p77.klog");
  // The node-wide session's counter series: rank "node", without the "r", and
  // still a counters file by its name.
  const std::string node = node_counters_file_name("n1", 77);
  EXPECT_EQ(node, "fabtrace_nic.n1.node.p77.csv");
  OutputKind kind = OutputKind::kReportJson;
  ASSERT_TRUE(output_kind_of(node, &kind));
  EXPECT_EQ(kind, OutputKind::kNicCounters);
}

TEST(OutputNames, BuildAndParseRoundTrip) {
  for (OutputKind k : {OutputKind::kReportJson, OutputKind::kReportText, OutputKind::kOplog,
                       OutputKind::kNicCounters, OutputKind::kKernelLog}) {
    for (const char* host : {"n1", "nid001234", "node.example.org", "h.r5.p6"}) {
      for (const char* rank : {"0", "NA", "17", "1.5"}) {
        const std::string name = output_file_name(k, host, rank, 123456);
        OutputKind kind;
        ASSERT_TRUE(output_kind_of(name, &kind)) << name;
        EXPECT_EQ(kind, k) << name;
        OutputName n;
        ASSERT_TRUE(parse_output_name(name, &n)) << name;
        EXPECT_EQ(n.kind, k) << name;
        EXPECT_EQ(n.pid, 123456) << name;
        EXPECT_EQ(n.host, host) << name;
        EXPECT_EQ(n.rank, k == OutputKind::kKernelLog ? "" : rank) << name;
      }
    }
  }
}

TEST(OutputNames, HostileHostsAndRanksStayInTheirDirectory) {
  const std::string name = output_file_name(OutputKind::kReportJson, "../../etc/x y", "1,2\n/3", 9);
  EXPECT_EQ(name.find('/'), std::string::npos) << name;
  EXPECT_EQ(name.find(' '), std::string::npos) << name;
  EXPECT_EQ(name.find('\n'), std::string::npos) << name;
  EXPECT_EQ(name.find(','), std::string::npos) << name;
  EXPECT_EQ(name, "fabtrace..._.._etc_x_y.r1_2__3.p9.json");
  OutputName n;
  ASSERT_TRUE(parse_output_name(name, &n));
  EXPECT_EQ(n.host, ".._.._etc_x_y");
  EXPECT_EQ(n.rank, "1_2__3");

  const std::string klog = kernel_log_file_name("a/b", 1);
  EXPECT_EQ(klog, "fabtrace_kernel.a_b.p1.klog");
  EXPECT_EQ(node_counters_file_name("a/b", 1), "fabtrace_nic.a_b.node.p1.csv");

  // An empty host or rank is a token too ("?"), and a long one is cut at 64 bytes.
  EXPECT_EQ(output_file_name(OutputKind::kOplog, "", "", 1), "fabtrace_ops.?.r?.p1.oplog");
  const std::string long_host(300, 'h');
  EXPECT_EQ(output_file_name(OutputKind::kReportText, long_host, "0", 1),
            "fabtrace." + std::string(64, 'h') + ".r0.p1.txt");
}

TEST(OutputNames, OtherFilesAreNotOutputs) {
  OutputKind kind;
  for (const char* name :
       {"", "fabtrace", "fabtrace.", "report.json", "fabtrace.n1.r0.p1.json.bak",
        "fabtrace.n1.r0.p1.csv", "fabtrace_ops.n1.r0.p1.json", "fabtrace_nic.n1.r0.p1.txt",
        "fabtrace_kernel.n1.p1.log", "Fabtrace.n1.r0.p1.json", "fabtraceX.n1.r0.p1.json"}) {
    EXPECT_FALSE(output_kind_of(name, &kind)) << name;
    OutputName n;
    EXPECT_FALSE(parse_output_name(name, &n)) << name;
  }
}

TEST(OutputNames, MalformedPartsAreNotParsed) {
  OutputName n;
  for (const char* name :
       {"fabtrace.json", "fabtrace.json.json", "fabtrace..json", "fabtrace.n1.r0.json",
        "fabtrace.n1.r0.p.json", "fabtrace.n1.r0.p-1.json", "fabtrace.n1.r0.p+1.json",
        "fabtrace.n1.r0.p1x.json", "fabtrace.n1.r0.px1.json", "fabtrace.n1.p1.json",
        "fabtrace..r0.p1.json", "fabtrace.n1.r.p1.json",
        "fabtrace.n1.r0.p99999999999999999999.json", "fabtrace_kernel..p1.klog",
        "fabtrace_kernel.n1.klog", "fabtrace_kernel.n1.q1.klog"}) {
    EXPECT_FALSE(parse_output_name(name, &n)) << name;
  }
  // The kind alone is still known: the loader files it by kind and reads
  // host, rank and pid from inside.
  OutputKind kind;
  EXPECT_TRUE(output_kind_of("fabtrace.n1.r0.json", &kind));
  EXPECT_EQ(kind, OutputKind::kReportJson);
  EXPECT_TRUE(output_kind_of("fabtrace.json", &kind));  // prefix and extension overlap
  EXPECT_EQ(kind, OutputKind::kReportJson);
}

}  // namespace
}  // namespace fabtrace
