#include "common/report_writer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "fixtures/synthetic_job.h"

namespace fabtrace {
namespace {

ProcessReport sample() {
  ProcessReport r;
  r.host = "node\"1";
  r.rank = "3";
  r.pid = 4242;
  r.providers = "tcp;ofi_rxm";
  r.duration_s = 1.5;
  r.tsc = true;
  r.ns_per_tick = 0.5;
  r.ring_slots = 16384;
  r.ring_full = 7;
  NicReport n;
  n.domain = "cxi0";
  n.locals = {"0x01ad0407"};
  n.ops = 10;
  n.bytes = 10 << 20;
  n.busy_ns = 2e6;
  n.gbps = 5.24288;
  r.nics.push_back(n);
  CqReport c;
  c.id = 0;
  c.polls = 99;
  c.gaps[0] = 90;
  c.gaps[5] = 1;
  c.max_gap_ns = 2.5e8;
  c.max_gap_end_s = 1.25;
  r.cqs.push_back(c);
  LinkReport l;
  l.local = "0x01ad0407";
  l.remote = "0x01ad0501";
  OpRow s;
  s.op = "fi_tsend";
  s.bytes = 65536;
  s.count = 100;
  s.avg_ns = 12000;
  s.p50_ns = 11000;
  s.p99_ns = 30000;
  s.min_ns = 9000;
  s.max_ns = 31000;
  s.gbps = 65536 / 12000.0;
  s.eagain = 3;
  OpRow rv;
  rv.op = "fi_trecv";
  rv.recv = true;
  rv.bytes = 65536;
  rv.count = 10;
  rv.within_50us = 4;
  rv.errors = 2;
  l.rows = {s, rv};
  r.links.push_back(l);
  return r;
}

TEST(ReportWriter, JsonCarriesEveryField) {
  const auto j = nlohmann::json::parse(test::report_json_text(sample()));
  EXPECT_EQ(j["format"], "fabtrace-report");
  EXPECT_EQ(j["host"], "node\"1");
  EXPECT_EQ(j["rank"], "3");
  EXPECT_EQ(j["pid"], 4242);
  EXPECT_EQ(j["ring_full"], 7);
  EXPECT_EQ(j["clock"]["source"], "tsc");
  EXPECT_DOUBLE_EQ(j["nics"][0]["achieved_gbps"].get<double>(), 5.24288);
  EXPECT_EQ(j["cqs"][0]["gaps"][">=100ms"], 1);
  const auto& ops = j["links"][0]["ops"];
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0]["op"], "fi_tsend");
  EXPECT_EQ(ops[0]["eagain"], 3);
  EXPECT_FALSE(ops[0].contains("completed_within_50us"));  // only receives have it
  EXPECT_EQ(ops[1]["completed_within_50us"], 4);
  EXPECT_EQ(ops[1]["errors"], 2);
  EXPECT_DOUBLE_EQ(ops[0]["p99_ns"].get<double>(), 30000);
}

TEST(ReportWriter, TextHasTheSeedLayoutAndTheNewColumns) {
  const std::string t = test::report_text(sample());
  EXPECT_NE(t.find("[fabtrace] host=node\"1 rank=3 pid=4242 providers=tcp;ofi_rxm"),
            std::string::npos);
  EXPECT_NE(t.find("[fabtrace] NIC cxi0"), std::string::npos);
  EXPECT_NE(t.find("achieved    5.243 GB/s"), std::string::npos) << t;
  EXPECT_NE(t.find("[fabtrace] CQ#0 polls 99"), std::string::npos);
  EXPECT_NE(t.find(">=100ms 1  max 250.000 ms at t+1.250 s"), std::string::npos) << t;
  EXPECT_NE(t.find("=== 0x01ad0407 -> 0x01ad0501 ==="), std::string::npos);
  EXPECT_NE(t.find("p50    11.000  p99    30.000"), std::string::npos) << t;
  EXPECT_NE(t.find("[3 EAGAIN]"), std::string::npos);
  EXPECT_NE(t.find("[<50us of post 4 = 40.0%]"), std::string::npos);
  EXPECT_NE(t.find("[2 err]"), std::string::npos);
  EXPECT_NE(t.find("7 ops not timed: in-flight ring full"), std::string::npos);
}

// A receive whose completions carried no length is not given a size it did
// not have, nor a bandwidth computed from its posted size.
TEST(ReportWriter, ReceivesOfUnknownSizeSaySoWithoutBandwidth) {
  ProcessReport r = sample();
  OpRow& rv = r.links[0].rows[1];
  rv.size_unknown = true;
  rv.bytes = 6291456;
  rv.avg_ns = 1000;
  const std::string t = test::report_text(r);
  const size_t at = t.find("fi_trecv");
  ASSERT_NE(at, std::string::npos) << t;
  const std::string line = t.substr(at, t.find('\n', at) - at);
  EXPECT_NE(line.find("size unknown, posted 6291456 B"), std::string::npos) << line;
  EXPECT_EQ(line.find("GB/s"), std::string::npos) << line;
  const auto j = nlohmann::json::parse(test::report_json_text(r));
  EXPECT_EQ(j["links"][0]["ops"][1]["size_unknown"], true);
  EXPECT_FALSE(j["links"][0]["ops"][0].contains("size_unknown"));
}

}  // namespace
}  // namespace fabtrace
