// report_rows: a report's link rows read in one strict pass give what the full
// parse (parse_process_report, a JSON tree) and the loader's staging give,
// compared as their byte form (encode_parsed_report: every field, doubles bit
// for bit): on what the preload writes, on texts laid out otherwise, and on
// thousands of damaged texts, where the strict pass declines and the full
// parse's verdict and message stand.
#include "userspace/report/job/report_rows.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "fixtures/synthetic_job.h"
#include "userspace/report/job/report_reader.h"

namespace fabtrace::report {
namespace {

ParsedReport full_parse(const std::string& text) {
  ParsedReport p;
  p.ok = parse_process_report(text, &p.report, &p.why);
  stage_rows(&p);
  return p;
}

std::string bytes_of(const ParsedReport& p) {
  std::string b;
  encode_parsed_report(p, &b);
  return b;
}

// parse_report_rows(text) against the full parse; returns whether the strict
// pass took the text.
bool expect_same(const std::string& text) {
  ParsedReport fast;
  const bool took = parse_report_rows_fast(text, &fast);
  ParsedReport either;
  parse_report_rows(text, &either);
  const ParsedReport want = full_parse(text);
  EXPECT_EQ(either.ok, want.ok) << text;
  EXPECT_EQ(either.why, want.why) << text;
  EXPECT_EQ(bytes_of(either), bytes_of(want)) << text;
  if (took) {
    EXPECT_TRUE(want.ok) << text;
    EXPECT_EQ(bytes_of(fast), bytes_of(want)) << text;
  }
  return took;
}

std::string report_text(const test::SyntheticJob& sj, size_t i) {
  return test::report_json_text(sj.reports.at(i));
}

TEST(ReportRows, WhatThePreloadWritesIsReadInOnePass) {
  test::SyntheticOptions o;
  o.nodes = 2;
  o.ranks_per_node = 3;
  const test::SyntheticJob sj = test::make_synthetic_job(o);
  for (size_t i = 0; i < sj.reports.size(); ++i) {
    ParsedReport p;
    ASSERT_TRUE(parse_report_rows_fast(report_text(sj, i), &p)) << i;
    EXPECT_TRUE(expect_same(report_text(sj, i)));
    // Every row: a send per peer, a write to the next rank, a receive.
    EXPECT_EQ(p.rows.size(), sj.reports[i].links.size() + 1);
    EXPECT_EQ(p.link_count, sj.reports[i].links.size());
    EXPECT_EQ(p.rows.back().posted().unknown(), kPostedNotRead);
  }
  // Receives sized as posted, a version 1 row ("imm"), an address that no NIC
  // row lists, an empty link and one without "ops".
  ProcessReport r = sj.reports[1];
  r.links[0].rows[0].size_unknown = true;
  r.links[0].rows[0].recv = true;
  r.links.push_back(LinkReport{"fi_addr_cxi://0x99999", "(any)", {}});
  EXPECT_TRUE(expect_same(test::report_json_text(r)));
  EXPECT_TRUE(expect_same(
      "{\"format\": \"fabtrace-report\", \"version\": 1, \"host\": \"h\", \"rank\": \"0\", "
      "\"pid\": 7, \"nics\": [{\"domain\": \"eth0\", \"local\": \"a,b\", \"ops\": 3}], "
      "\"links\": [{\"local\": \"c\", \"remote\": \"(any)\", \"ops\": [{\"op\": \"fi_recv\", "
      "\"bytes\": 64, \"count\": 5, \"untimed\": 2, \"imm\": 4}]}, {\"local\": \"a\"}, "
      "{\"remote\": \"x\", \"ops\": null}]}"));
}

TEST(ReportRows, OtherLayoutsAndKeyOrdersAreReadInOnePass) {
  const std::string head =
      "{\"format\":\"fabtrace-report\",\"version\":2,\"host\":\"h\",\"rank\":\"1\",\"pid\":3,";
  const std::vector<std::string> links = {
      // Compact, keys in another order, "local" after "ops", unknown keys of
      // any shape, a repeated key (the last one counts, as in the tree).
      "\"links\":[{\"ops\":[{\"p99_ns\":3,\"op\":\"fi_send\",\"x\":{\"y\":[1,{\"z\":null}]},"
      "\"count\":2,\"count\":7,\"bytes\":1.5e3,\"gbps\":0.25,\"size_unknown\":false}],"
      "\"local\":\"l\",\"remote\":\"r\",\"local\":\"l2\"}]}",
      // Counts written as floats, times as integers, nulls, "-0".
      "\"links\" : [ { \"local\" : \"l\" , \"remote\" : \"r\" , \"ops\" : [ { \"op\" : "
      "\"fi_trecv\" , \"count\" : 1E2 , \"errors\" : null , \"eagain\" : -0 , \"avg_ns\" : "
      "12 , \"min_ns\" : -0.0 , \"p50_ns\" : 1234567890123 } ] } ] }",
      // No links.
      "\"links\":[]}",
      "\"links\":null}",
      "\"links\":[{},{\"ops\":[]}]}",
  };
  for (const std::string& l : links) EXPECT_TRUE(expect_same(head + l)) << l;
}

TEST(ReportRows, WhatTheOnePassDoesNotReadGoesToTheFullParse) {
  const std::string head =
      "{\"format\":\"fabtrace-report\",\"version\":2,\"host\":\"h\",\"rank\":\"1\",\"pid\":3,";
  const std::string row = "{\"op\":\"fi_send\",\"count\":2}";
  const std::vector<std::string> links = {
      // Escapes and bytes outside ASCII: read by the full parse.
      "\"links\":[{\"local\":\"a\\u0041\",\"ops\":[" + row + "]}]}",
      "\"links\":[{\"local\":\"caf\xc3\xa9\",\"ops\":[" + row + "]}]}",
      "\"li\\u006eks\":[{\"ops\":[" + row + "]}]}",
      // A rank written as a number is the full parse's (it accepts it).
      "\"links\":[{\"local\":7,\"ops\":[" + row + "]}]}",
      "\"links\":[{\"ops\":[" + row + "],\"ops\":[" + row + "," + row + "]}]}",
      "\"links\":[],\"links\":[{\"ops\":[" + row + "]}]}",
      // Refused, with the full parse's message.
      "\"links\":[{\"ops\":[{\"op\":\"fi_send\",\"count\":-1}]}]}",
      "\"links\":[{\"ops\":[{\"op\":\"fi_send\",\"count\":1e400}]}]}",
      "\"links\":[{\"ops\":[{\"op\":\"fi_send\",\"p99_ns\":\"slow\"}]}]}",
      "\"links\":[{\"ops\":[{\"op\":\"fi_send\",\"count\":4611686018427387905}]}]}",
      "\"links\":[{\"ops\":[{\"op\":\"fi_send\",\"p50_ns\":18446744073709551616}]}]}",
      "\"links\":[{\"ops\":[{\"count\":2}]}]}",
      "\"links\":[{\"ops\":[{\"op\":\"fi_send\",\"size_unknown\":1}]}]}",
      "\"links\":[{\"ops\":[" + row + ",]}]}",
      "\"links\":[{\"ops\":[" + row + "]}]",
      "\"links\":[{\"ops\":[" + row + "]}]} x",
      "\"links\":{\"ops\":[" + row + "]}}",
      "\"links\":[[" + row + "]]}",
      "\"links\":[{\"ops\":[" + row + "]}],\"nics\":5}",
      "\"links\":[{\"ops\":[" + row + "]}],\"pid\":\"3\"}",
      "\"links\":[{\"x\":" + std::string(70, '[') + std::string(70, ']') + "}]}",
  };
  for (const std::string& l : links) EXPECT_FALSE(expect_same(head + l)) << l;
  EXPECT_FALSE(expect_same(""));
  EXPECT_FALSE(expect_same("[]"));
  EXPECT_FALSE(expect_same("{\"format\":\"other\",\"links\":[]}"));
}

// Damaged copies of a real report: a byte changed, removed or repeated, a
// span cut out or doubled. Whatever the strict pass makes of them, the result
// is the full parse's.
TEST(ReportRows, DamagedTextsGiveWhatTheFullParseGives) {
  test::SyntheticOptions o;
  o.nodes = 1;
  o.ranks_per_node = 3;
  const test::SyntheticJob sj = test::make_synthetic_job(o);
  ProcessReport r = sj.reports[1];
  r.links[1].rows[0].size_unknown = true;
  const std::string base = test::report_json_text(r);
  const std::string bytes = "\"\\{}[],:0-+.eE nt\x01\xc3\x7f";
  std::mt19937 rng(36);
  int took = 0, declined = 0;
  for (int n = 0; n < 3000; ++n) {
    std::string t = base;
    const size_t at = rng() % t.size();
    switch (rng() % 5) {
      case 0:
        t[at] = bytes[rng() % bytes.size()];
        break;
      case 1:
        t.erase(at, 1 + rng() % 3);
        break;
      case 2:
        t.insert(at, 1, bytes[rng() % bytes.size()]);
        break;
      case 3:
        t.erase(at, rng() % 200);
        break;
      default:
        t.insert(at, t.substr(rng() % t.size(), rng() % 200));
        break;
    }
    (expect_same(t) ? took : declined) += 1;
    if (HasFailure()) break;
  }
  // Both ways were taken many times.
  EXPECT_GT(took, 200);
  EXPECT_GT(declined, 200);
}

}  // namespace
}  // namespace fabtrace::report
