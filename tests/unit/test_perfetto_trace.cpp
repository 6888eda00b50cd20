// write_perfetto on a synthetic Job: two ranks on two hosts with different
// CLOCK_MONOTONIC origins, oplogs written with OplogFileWriter, a counter CSV
// written by hand, CQ stalls. The trace is read back two ways:
//   - a test-only decoder (wire format + the Perfetto fields the writer uses)
//     for the deep checks: names, lanes, per-track order, timestamps, rates;
//   - `protoc --decode_raw` (skipped when protoc is absent) to count packets,
//     descriptors, slice begins/ends, instants and counter values independently.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/op_kinds.h"
#include "common/oplog_file.h"
#include "fixtures/kernel_fixture.h"
#include "fixtures/perfetto_decode.h"
#include "tests/support/require_program.h"
#include "tests/unit/scratch_dir.h"
#include "userspace/report/job/job.h"
#include "userspace/report/perfetto/perfetto_trace.h"
#include "userspace/report/perfetto/writer.h"

namespace fabtrace::report {
namespace {

using test::check_tracks;
using test::decode_trace;
using test::Decoded;
using test::Descriptor;
using test::read_file;
using test::TraceEvent;

// ------------------------------------------------------------ protoc --decode_raw

struct TextNode {
  std::string key, value;
  std::vector<TextNode> kids;
  const TextNode* child(const std::string& k) const {
    for (const TextNode& n : kids)
      if (n.key == k) return &n;
    return nullptr;
  }
};

// Parses decode_raw's text ("N: value" leaves, "N {" ... "}" messages).
bool parse_text(const std::string& text, TextNode* root) {
  std::vector<TextNode*> stack{root};
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    const size_t b = line.find_first_not_of(' ');
    if (b == std::string::npos) continue;
    line = line.substr(b);
    if (line == "}") {
      if (stack.size() < 2) return false;
      stack.pop_back();
    } else if (line.size() > 2 && line.compare(line.size() - 2, 2, " {") == 0) {
      stack.back()->kids.push_back(TextNode{line.substr(0, line.size() - 2), "", {}});
      stack.push_back(&stack.back()->kids.back());
    } else {
      const size_t c = line.find(": ");
      if (c == std::string::npos) return false;
      stack.back()->kids.push_back(TextNode{line.substr(0, c), line.substr(c + 2), {}});
    }
  }
  return stack.size() == 1;
}

struct RawCounts {
  bool ok = false;
  size_t packets = 0, descriptors = 0, begins = 0, ends = 0, instants = 0, counters = 0;
};

RawCounts decode_raw_counts(const std::string& path) {
  RawCounts c;
  const std::string out = path + ".txt";
  const std::string cmd = "protoc --decode_raw < " + path + " > " + out + " 2>/dev/null";
  if (std::system(cmd.c_str()) != 0) return c;
  TextNode root;
  const bool parsed = parse_text(read_file(out), &root);
  ::unlink(out.c_str());
  if (!parsed) return c;
  for (const TextNode& p : root.kids) {
    if (p.key != "1") return c;
    ++c.packets;
    if (p.child("60")) ++c.descriptors;
    if (const TextNode* te = p.child("11")) {
      const TextNode* type = te->child("9");
      const std::string t = type ? type->value : "";
      if (t == "1") ++c.begins;
      if (t == "2") ++c.ends;
      if (t == "3") ++c.instants;
      if (t == "4") ++c.counters;
    }
  }
  c.ok = true;
  return c;
}

// ------------------------------------------------------------ the synthetic job

constexpr uint64_t kWall0 = 1700000000000000000ull;  // rank 0's first activity, wall ns
constexpr uint64_t kMono0 = 1000000000000ull;        // rank 0's CLOCK_MONOTONIC then (1000 s)
constexpr uint64_t kMono1 = 5000000000000ull;        // rank 1's (another node: 5000 s)
constexpr uint64_t kWall1 = kWall0 + 2000000;        // rank 1 started 2 ms later
constexpr uint64_t kUs = 1000;

struct Op {  // times: ns after the rank's monotonic origin
  uint64_t start, end;
  uint32_t link;
  OpKind kind;
  uint64_t bytes;
  bool error;
};

Rank rank_at(const std::string& host, const std::string& rank, long pid);

class PerfettoTrace : public ::testing::Test {
 protected:
  // The trace of `job` written into dir_ with the default options.
  struct Written {
    bool ok = false;
    std::string err;
    std::vector<std::string> files;
    PerfettoStats st;
  };
  Written write_trace(const Job& job) {
    Written w;
    w.ok = write_perfetto_stats(job, dir_, PerfettoOptions(), &w.files, &w.st, &w.err);
    return w;
  }
  // The trace of one rank ("0" on host "h") whose oplog holds `ops` on one
  // link a -> b.
  Written trace_of_ops(const std::vector<Op>& ops, bool tsc) {
    Job job;
    Rank r = rank_at("h", "0", 1);
    r.oplog_path = write_oplog("o.oplog", tsc, kMono0, ops, {{0, "a", "b"}}, "0");
    job.ranks.push_back(r);
    return write_trace(job);
  }

  // Rank 0: TSC ticks at 0.5 ns/tick; rank 1: ticks are ns. Ops are written in
  // the order given (the oplog's completion order).
  // Op times are ns after mono0 on the rank's CLOCK_MONOTONIC.
  std::string write_oplog(const std::string& name, bool tsc, uint64_t mono0,
                          const std::vector<Op>& ops, const std::vector<OplogLink>& links,
                          const std::string& rank) {
    const std::string path = dir_ + "/" + name;
    OplogFileWriter w;
    EXPECT_TRUE(w.open(path, OplogMeta{"h" + rank, rank, 100}));
    OplogCalib c;
    c.tsc = tsc;
    c.ns_per_tick = tsc ? 0.5 : 1.0;
    c.tick0 = tsc ? 7000000 : 0;
    c.mono0_ns = tsc ? mono0 : 0;
    c.pairs = 10;
    EXPECT_TRUE(w.write_calib(c));
    EXPECT_TRUE(w.write_links(links));
    std::vector<oplog::OpEntry> entries;
    const auto ticks = [&](uint64_t rel_ns) -> uint64_t {
      return tsc ? c.tick0 + 2 * rel_ns : mono0 + rel_ns;
    };
    for (const Op& o : ops) {
      oplog::OpEntry e{};
      e.start_ticks = ticks(o.start);
      e.end_ticks = ticks(o.end);
      e.bytes = o.bytes;
      e.link_id = o.link;
      e.tid = 1;
      e.kind = static_cast<uint8_t>(o.kind);
      e.error = o.error ? 1 : 0;
      entries.push_back(e);
    }
    EXPECT_TRUE(w.write_ops(entries.data(), entries.size()));
    EXPECT_TRUE(w.write_end(entries.size(), 0, 0));
    w.close();
    return path;
  }

  std::string write_counters(const std::string& name) {
    const std::string path = dir_ + "/" + name;
    std::ofstream f(path);
    f << "# fabtrace-counters v1 host=h0 rank=0 pid=100\n"
         "# interval_ms=100 achieved_mean_ms=100.000 devices=cxi0 counters=3 samples=4 "
         "dropped=0 read_errors=1\n"
         "# clock t_mono_ns=CLOCK_MONOTONIC ns (sample start); wall_ns=CLOCK_REALTIME\n"
         "# dev cxi0 nic_addr=0x12 nid=18\n"
         "t_mono_ns,wall_ns,cxi0:telemetry_wall_ns,cxi0:hni_tx_ok_octets,cxi0:lpe_in_use,"
         "cxi0:rh:nacks\n";
    // octets: cumulative 0, 1e6, 3e6, 3e6 over 100 ms steps -> 1e7, 2e7, 0 per s.
    // lpe_in_use: a gauge, plotted as sampled.
    // rh:nacks: cumulative with an unreadable sample (0) in row 1 -> 100/s, 100/s.
    const uint64_t oct[] = {0, 1000000, 3000000, 3000000};
    const uint64_t in_use[] = {5, 7, 6, 2};
    const uint64_t nacks[] = {10, 0, 30, 40};
    for (int k = 0; k < 4; ++k) {
      const uint64_t t = kMono0 + static_cast<uint64_t>(k) * 100000000ull;
      f << t << "," << (t - kMono0 + kWall0 + 12345) << "," << (kWall0 + 1) << "," << oct[k] << ","
        << in_use[k] << "," << nacks[k] << "\n";
    }
    return path;
  }

  Job make_job() {
    Job job;
    Rank r0;
    r0.report.host = "h0";
    r0.report.rank = "0";
    r0.report.pid = 100;
    r0.report.start_mono_ns = kMono0;
    r0.report.start_wall_ns = kWall0;
    // Link 0: a [0,100] b [10,50] c [20,120] d [100,150] e [60,70] (us), written in
    // completion order b e a c d. Sorted by start, first-fit lanes are
    // lane 1 {a, d}, lane 2 {b, e}, lane 3 {c}. Link 1: one op in error.
    r0_ops_ = {
        {10 * kUs, 50 * kUs, 0, OpKind::kTsend, 4096, false},
        {60 * kUs, 70 * kUs, 0, OpKind::kTsend, 4096, false},
        {0 * kUs, 100 * kUs, 0, OpKind::kTsend, 65536, false},
        {20 * kUs, 120 * kUs, 0, OpKind::kWrite, 1 << 20, false},
        {100 * kUs, 150 * kUs, 0, OpKind::kTsend, 4096, false},
        {200 * kUs, 300 * kUs, 1, OpKind::kRead, 8192, true},
    };
    r0.oplog_path = write_oplog("r0.oplog", true, kMono0, r0_ops_,
                                {{0, "nicA", "nicB"}, {1, "nicA", "nicC"}}, "0");
    r0.counters_path = write_counters("r0.csv");
    Rank r1;
    r1.report.host = "h1";
    r1.report.rank = "1";
    r1.report.pid = 100;  // same pid on another host: still its own process track
    r1.report.start_mono_ns = kMono1;
    r1.report.start_wall_ns = kWall1;
    // Starts at wall kWall0 exactly, like rank 0's op a: on rank 1's monotonic
    // clock that is kMono1 - 2 ms.
    r1_ops_ = {{0, 40 * kUs, 7, OpKind::kTrecv, 4096, false}};
    r1.oplog_path =
        write_oplog("r1.oplog", false, kMono1 - 2000000, r1_ops_, {{7, "nicC", "nicA"}}, "1");
    job.ranks = {r0, r1};
    Stall s = stall("h0", "0", 2, 1000, 25e6);
    s.end_wall_ns = kWall0 + 5000000;
    job.stalls.push_back(s);
    s.cq.id = 3;
    s.cq.max_gap_ns = 5e6;  // below long_gap_ms: no instant
    job.stalls.push_back(s);
    Stall s1 = stall("h1", "1", 0, 10, 15e6);
    s1.cq.max_gap_end_s = 0.25;  // no end_wall_ns: start + 0.25 s
    job.stalls.push_back(s1);
    job.first_wall_ns = kWall0;
    return job;
  }

  // A stall of CQ `cq` of rank `rank` on `host`, with its polls and longest gap.
  static Stall stall(const char* host, const char* rank, uint32_t cq, uint64_t polls,
                     double max_gap_ns) {
    Stall s;
    s.host = host;
    s.rank = rank;
    s.cq.id = cq;
    s.cq.polls = polls;
    s.cq.max_gap_ns = max_gap_ns;
    return s;
  }

  test::ScratchDir scratch_;  // the test's own directory, removed with all in it
  const std::string dir_ = scratch_.path();
  std::vector<Op> r0_ops_, r1_ops_;
};

// A rank that started at kMono0 on its monotonic clock, kWall0 on the wall.
Rank rank_at(const std::string& host, const std::string& rank, long pid) {
  Rank r;
  r.report.host = host;
  r.report.rank = rank;
  r.report.pid = pid;
  r.report.start_mono_ns = kMono0;
  r.report.start_wall_ns = kWall0;
  return r;
}

const Descriptor* find_desc(const Decoded& d, const std::string& name) {
  for (const Descriptor& x : d.descs)
    if (x.name == name) return &x;
  return nullptr;
}

TEST_F(PerfettoTrace, SyntheticJobRoundTrip) {
  const Job job = make_job();
  PerfettoOptions opt;
  std::vector<std::string> files;
  PerfettoStats st;
  std::string err;
  ASSERT_TRUE(write_perfetto_stats(job, dir_ + "/out", opt, &files, &st, &err)) << err;
  ASSERT_EQ(files, std::vector<std::string>{dir_ + "/out/trace.pftrace"});
  EXPECT_TRUE(st.warnings.empty()) << st.warnings[0];

  const Decoded d = decode_trace(files[0]);
  ASSERT_TRUE(d.ok) << d.problem;
  EXPECT_EQ(check_tracks(d), "");
  EXPECT_TRUE(d.first_clears_state);
  // BOOTTIME and REALTIME declared equal.
  ASSERT_EQ(d.clocks.size(), 2u);
  EXPECT_EQ(d.clocks[0].first, 6u);
  EXPECT_EQ(d.clocks[1].first, 1u);
  EXPECT_EQ(d.clocks[0].second, d.clocks[1].second);

  // Tracks: 2 processes, 3 links, 2 extra lanes, 2 gap tracks, 3 counters,
  // plus the root-ordering descriptor (uuid 0).
  const Descriptor* p0 = find_desc(d, "rank 0 (h0)");
  const Descriptor* p1 = find_desc(d, "rank 1 (h1)");
  ASSERT_TRUE(p0 && p1);
  EXPECT_TRUE(p0->process && p1->process);
  EXPECT_EQ(p0->pid, 100);
  EXPECT_EQ(p1->pid, 100);
  EXPECT_EQ(p0->process_name, "rank 0 (h0)");
  EXPECT_NE(p0->uuid, p1->uuid);
  const Descriptor* l0 = find_desc(d, "nicA -> nicB");
  const Descriptor* l1 = find_desc(d, "nicA -> nicC");
  const Descriptor* l2 = find_desc(d, "nicC -> nicA");
  ASSERT_TRUE(l0 && l1 && l2);
  EXPECT_EQ(l0->parent, p0->uuid);
  EXPECT_EQ(l1->parent, p0->uuid);
  EXPECT_EQ(l2->parent, p1->uuid);
  std::map<std::string, const Descriptor*> lanes;
  size_t counters = 0, gaps = 0;
  for (const Descriptor& x : d.descs) {
    if (x.name.rfind("lane ", 0) == 0) {
      EXPECT_EQ(x.parent, l0->uuid);
      lanes[x.name] = &x;
    }
    if (x.counter) ++counters;
    if (x.name == "CQ poll gaps") ++gaps;
  }
  ASSERT_EQ(lanes.size(), 2u);
  ASSERT_TRUE(lanes.count("lane 2") && lanes.count("lane 3"));
  EXPECT_EQ(counters, 3u);
  EXPECT_EQ(gaps, 2u);
  EXPECT_EQ(d.descs.size(), 2u + 3 + 2 + 2 + 3 + 1);

  // N ops -> N begins and N ends; lanes as laid out by hand above.
  std::map<uint64_t, std::vector<const TraceEvent*>> begins_by_track;
  size_t begins = 0, ends = 0, instants = 0, values = 0;
  for (const TraceEvent& e : d.events) {
    if (e.type == 1) {
      ++begins;
      begins_by_track[e.track].push_back(&e);
    }
    if (e.type == 2) ++ends;
    if (e.type == 3) ++instants;
    if (e.type == 4) ++values;
  }
  EXPECT_EQ(begins, r0_ops_.size() + r1_ops_.size());
  EXPECT_EQ(ends, begins);
  EXPECT_EQ(st.slices, begins);
  EXPECT_EQ(instants, 1u /*error*/ + 2u /*stalls*/);
  EXPECT_EQ(values, 9u);
  EXPECT_EQ(st.counter_values, 9u);
  EXPECT_EQ(st.max_lanes, 3u);
  EXPECT_EQ(st.overlap_dropped, 0u);

  const auto starts = [&](uint64_t track) {
    std::vector<uint64_t> v;
    for (const TraceEvent* e : begins_by_track[track]) v.push_back((e->ts - kWall0) / kUs);
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(starts(l0->uuid), (std::vector<uint64_t>{0, 100}));
  EXPECT_EQ(starts(lanes["lane 2"]->uuid), (std::vector<uint64_t>{10, 60}));
  EXPECT_EQ(starts(lanes["lane 3"]->uuid), (std::vector<uint64_t>{20}));

  // Names and args of the slices; the error op: arg, and an instant at its end.
  for (const TraceEvent& e : d.events) {
    if (e.type != 1) continue;
    const uint64_t rel = (e.ts - kWall0) / kUs;
    if (e.track == l0->uuid && rel == 0) {
      EXPECT_EQ(e.name, "fi_tsend");
      EXPECT_EQ(e.args.at("bytes"), "65536");
      EXPECT_EQ(e.args.at("error"), "false");
    }
    if (rel == 20) {
      EXPECT_EQ(e.name, "fi_write");
    }
    if (e.track == l1->uuid) {
      EXPECT_EQ(e.name, "fi_read");
      EXPECT_EQ(e.args.at("error"), "true");
      EXPECT_EQ(e.args.at("bytes"), "8192");
    }
  }
  bool saw_error = false;
  for (const TraceEvent& e : d.events) {
    if (e.type == 3 && e.track == l1->uuid) {
      saw_error = true;
      EXPECT_EQ(e.name, "fi_read error");
      EXPECT_EQ(e.ts, kWall0 + 300 * kUs);
    }
  }
  EXPECT_TRUE(saw_error);

  // Two ranks with different monotonic clocks, one wall-clock timeline: rank
  // 1's op starts at the same wall instant as rank 0's op a.
  for (const TraceEvent& e : d.events) {
    if (e.type == 1 && e.track == l2->uuid) {
      EXPECT_EQ(e.ts, kWall0);
      EXPECT_EQ(e.name, "fi_trecv");
    }
    if (e.type == 2 && e.track == l2->uuid) {
      EXPECT_EQ(e.ts, kWall0 + 40 * kUs);
    }
  }

  // Stalls: CQ#2 of rank 0 at its end; CQ#0 of rank 1 from its start + 0.25 s.
  std::vector<std::pair<std::string, uint64_t>> stall_ev;
  for (const TraceEvent& e : d.events)
    if (e.type == 3 && e.name.find("poll gap") != std::string::npos)
      stall_ev.emplace_back(e.name, e.ts);
  std::sort(stall_ev.begin(), stall_ev.end());
  ASSERT_EQ(stall_ev.size(), 2u);
  EXPECT_EQ(stall_ev[0].first, "CQ#0 poll gap 15.000 ms");
  EXPECT_EQ(stall_ev[0].second, kWall1 + 250000000ull);
  EXPECT_EQ(stall_ev[1].first, "CQ#2 poll gap 25.000 ms");
  EXPECT_EQ(stall_ev[1].second, kWall0 + 5000000ull);

  // Counters: rates of the cumulative ones at the interval's start, gauge as sampled.
  std::map<std::string, std::vector<std::pair<uint64_t, double>>> series;
  std::map<uint64_t, std::string> counter_name;
  for (const Descriptor& x : d.descs)
    if (x.counter) {
      counter_name[x.uuid] = x.name;
      EXPECT_EQ(x.parent, p0->uuid);
    }
  for (const TraceEvent& e : d.events) {
    if (e.type != 4) continue;
    ASSERT_TRUE(counter_name.count(e.track));
    series[counter_name[e.track]].emplace_back(
        (e.ts - kWall0) / 1000000, e.has_double ? e.dvalue : static_cast<double>(e.ivalue));
  }
  using S = std::vector<std::pair<uint64_t, double>>;
  EXPECT_EQ(series["cxi0:hni_tx_ok_octets"], (S{{0, 1e7}, {100, 2e7}, {200, 0}}));
  EXPECT_EQ(series["cxi0:lpe_in_use"], (S{{0, 5}, {100, 7}, {200, 6}, {300, 2}}));
  EXPECT_EQ(series["cxi0:rh:nacks"], (S{{0, 100}, {200, 100}}));
  EXPECT_EQ(find_desc(d, "cxi0:hni_tx_ok_octets")->unit_name, "/s");
  EXPECT_EQ(find_desc(d, "cxi0:lpe_in_use")->unit_name, "");

  // protoc's own reading of the file agrees on every count.
  REQUIRE_PROGRAM("protoc", "protobuf-compiler");
  const RawCounts raw = decode_raw_counts(files[0]);
  ASSERT_TRUE(raw.ok);
  EXPECT_EQ(raw.packets, d.packets);
  EXPECT_EQ(raw.descriptors, d.descs.size());
  EXPECT_EQ(raw.begins, begins);
  EXPECT_EQ(raw.ends, ends);
  EXPECT_EQ(raw.instants, instants);
  EXPECT_EQ(raw.counters, values);
}

TEST_F(PerfettoTrace, SplitPerRank) {
  const Job job = make_job();
  PerfettoOptions opt;
  opt.split_per_rank = true;
  std::vector<std::string> files;
  std::string err;
  ASSERT_TRUE(write_perfetto(job, dir_, opt, &files, &err)) << err;
  ASSERT_EQ(files,
            (std::vector<std::string>{dir_ + "/trace.r0.pftrace", dir_ + "/trace.r1.pftrace"}));
  const Decoded d0 = decode_trace(files[0]), d1 = decode_trace(files[1]);
  ASSERT_TRUE(d0.ok) << d0.problem;
  ASSERT_TRUE(d1.ok) << d1.problem;
  EXPECT_TRUE(find_desc(d0, "rank 0 (h0)") && !find_desc(d0, "rank 1 (h1)"));
  EXPECT_TRUE(find_desc(d1, "rank 1 (h1)") && !find_desc(d1, "rank 0 (h0)"));
  size_t b0 = 0, b1 = 0;
  for (const TraceEvent& e : d0.events) b0 += e.type == 1;
  for (const TraceEvent& e : d1.events) b1 += e.type == 1;
  EXPECT_EQ(b0, r0_ops_.size());
  EXPECT_EQ(b1, r1_ops_.size());
}

// Many ops, a small max_file_bytes: trace.0.pftrace, trace.1.pftrace, ...
// each self-contained (decode_trace checks every track and iid is defined in
// the file) and within the limit; together they hold every op once.
TEST_F(PerfettoTrace, SplitsLargeTraceIntoSelfContainedFiles) {
  Job job;
  Rank r = rank_at("big", "5", 4242);
  std::vector<Op> ops;
  for (uint64_t i = 0; i < 3000; ++i) {
    // Two links, pairs of overlapping ops (two lanes), some errors.
    ops.push_back({i * 10 * kUs, i * 10 * kUs + 15 * kUs, static_cast<uint32_t>(i % 2),
                   i % 3 ? OpKind::kSend : OpKind::kRecv, i, i % 97 == 0});
  }
  r.oplog_path =
      write_oplog("big.oplog", true, kMono0, ops, {{0, "n0", "n1"}, {1, "n0", "n2"}}, "5");
  job.ranks.push_back(r);
  PerfettoOptions opt;
  opt.max_file_bytes = 64 * 1024;
  std::vector<std::string> files;
  PerfettoStats st;
  std::string err;
  ASSERT_TRUE(write_perfetto_stats(job, dir_, opt, &files, &st, &err)) << err;
  ASSERT_GE(files.size(), 3u);
  size_t begins = 0, ends = 0, errors = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    EXPECT_EQ(files[i], dir_ + "/trace." + std::to_string(i) + ".pftrace");
    struct stat sb;
    ASSERT_EQ(::stat(files[i].c_str(), &sb), 0);
    EXPECT_LE(static_cast<uint64_t>(sb.st_size), opt.max_file_bytes);
    const Decoded d = decode_trace(files[i]);
    ASSERT_TRUE(d.ok) << files[i] << ": " << d.problem;
    EXPECT_EQ(check_tracks(d), "") << files[i];
    EXPECT_TRUE(d.first_clears_state);
    EXPECT_TRUE(find_desc(d, "rank 5 (big)"));
    for (const TraceEvent& e : d.events) {
      begins += e.type == 1;
      ends += e.type == 2;
      errors += e.type == 3;
    }
  }
  EXPECT_EQ(::access((dir_ + "/trace.pftrace").c_str(), F_OK), -1);
  EXPECT_EQ(begins, ops.size());
  EXPECT_EQ(ends, ops.size());
  EXPECT_EQ(errors, (ops.size() + 96) / 97);
  EXPECT_EQ(st.max_lanes, 1u);  // 15 us ops every 20 us per link: no overlap within a link
}

// More overlap than lanes: the extra ops are counted, not drawn, and the rank
// track says so.
TEST_F(PerfettoTrace, OverlapBeyondMaxLanesIsCounted) {
  std::vector<Op> ops;
  const uint64_t n = kPerfettoMaxLanes + 6;
  for (uint64_t i = 0; i < n; ++i) ops.push_back({i, 1000 * kUs, 0, OpKind::kTsend, 1, false});
  const Written out = trace_of_ops(ops, true);
  ASSERT_TRUE(out.ok) << out.err;
  EXPECT_EQ(out.st.overlap_dropped, 6u);
  EXPECT_EQ(out.st.slices, kPerfettoMaxLanes);
  EXPECT_EQ(out.st.max_lanes, kPerfettoMaxLanes);
  const Decoded d = decode_trace(out.files[0]);
  ASSERT_TRUE(d.ok) << d.problem;
  EXPECT_EQ(check_tracks(d), "");
  std::set<uint64_t> tracks;
  bool note = false;
  for (const TraceEvent& e : d.events) {
    if (e.type == 1) tracks.insert(e.track);
    if (e.type == 3 && e.name.find("6 ops not drawn") == 0) note = true;
  }
  EXPECT_EQ(tracks.size(), kPerfettoMaxLanes);
  EXPECT_TRUE(note);
}

// Ops that do not overlap but arrive far out of start order (two threads'
// chunks): the reorder window sorts them, so they share one lane.
TEST_F(PerfettoTrace, ReorderWindowPacksOutOfOrderOps) {
  std::vector<Op> ops;
  for (uint64_t i = 0; i < 1000; ++i)  // thread B's chunk first: odd slots
    ops.push_back(
        {(2 * i + 1) * 10 * kUs, (2 * i + 1) * 10 * kUs + 5 * kUs, 0, OpKind::kSend, 1, false});
  for (uint64_t i = 0; i < 1000; ++i)  // then thread A's: even slots
    ops.push_back({2 * i * 10 * kUs, 2 * i * 10 * kUs + 5 * kUs, 0, OpKind::kSend, 1, false});
  const Written out = trace_of_ops(ops, false);
  ASSERT_TRUE(out.ok) << out.err;
  EXPECT_EQ(out.st.slices, 2000u);
  EXPECT_EQ(out.st.max_lanes, 1u);
  EXPECT_EQ(out.st.late_ops, 0u);
  const Decoded d = decode_trace(out.files[0]);
  ASSERT_TRUE(d.ok) << d.problem;
  EXPECT_EQ(check_tracks(d), "");
  // Within the track, the file order is the time order.
  uint64_t last = 0;
  for (const TraceEvent& e : d.events) {
    if (e.type != 1 && e.type != 2) continue;
    EXPECT_GE(e.ts, last);
    last = e.ts;
  }
}

// Missing or corrupt inputs of one rank are skipped with a warning; the rank
// keeps its process track.
TEST_F(PerfettoTrace, UnreadableInputsAreSkipped) {
  Job job;
  Rank r;
  r.report.host = "h";
  r.report.rank = "NA";
  r.report.pid = 0;  // unknown pid: a synthetic one
  r.report.start_wall_ns = kWall0;
  r.oplog_path = dir_ + "/missing.oplog";
  r.counters_path = dir_ + "/missing.csv";
  job.ranks.push_back(r);
  const Written out = write_trace(job);
  ASSERT_TRUE(out.ok) << out.err;
  const PerfettoStats& st = out.st;
  const std::vector<std::string>& files = out.files;
  EXPECT_EQ(st.warnings.size(), 2u);
  const Decoded d = decode_trace(files[0]);
  ASSERT_TRUE(d.ok) << d.problem;
  const Descriptor* p = find_desc(d, "rank NA (h)");
  ASSERT_TRUE(p);
  EXPECT_GT(p->pid, 4194304);
}

// A NIC's time bins become a counter track under its rank: each bin's
// bytes over its length in GB/s from the bin's start, back to 0 after an
// active bin that the next one does not follow.
TEST_F(PerfettoTrace, NicBandwidthTrackFromTheTimeBins) {
  Job job;
  Rank r = rank_at("h0", "0", 100);
  NicReport n;
  n.domain = "eth0";
  n.locals = {"fi_sockaddr_in://10.0.0.1:7", "fi_sockaddr_in://10.0.0.1:8"};
  n.window_ns = 10e6;
  n.bins = {{0, 5e6, 1000000}, {1, 10e6, 2000000}, {5, 1e6, 500000}};
  r.report.nics.push_back(n);
  job.ranks.push_back(r);
  const Written out = write_trace(job);
  ASSERT_TRUE(out.ok) << out.err;
  const PerfettoStats& st = out.st;
  const std::vector<std::string>& files = out.files;
  EXPECT_EQ(st.nic_tracks, 1u);
  EXPECT_EQ(st.nic_values, 5u);
  const Decoded d = decode_trace(files[0]);
  ASSERT_TRUE(d.ok) << d.problem;
  const Descriptor* t = find_desc(d, "NIC eth0 10.0.0.1:7 +1 more GB/s");
  const Descriptor* p = find_desc(d, "rank 0 (h0)");
  ASSERT_TRUE(t && p);
  EXPECT_TRUE(t->counter);
  EXPECT_EQ(t->parent, p->uuid);
  std::vector<std::pair<uint64_t, double>> got;
  for (const TraceEvent& e : d.events)
    if (e.track == t->uuid) got.push_back({(e.ts - kWall0) / 1000000, e.dvalue});
  const std::vector<std::pair<uint64_t, double>> want = {
      {0, 0.1}, {10, 0.2}, {20, 0.0}, {50, 0.05}, {60, 0.0}};
  EXPECT_EQ(got, want);
}

TEST_F(PerfettoTrace, UnwritableDirectoryFails) {
  Job job;
  job.ranks.push_back(Rank());
  std::vector<std::string> files;
  std::string err;
  EXPECT_FALSE(write_perfetto(job, dir_ + "/no/such/dir", PerfettoOptions(), &files, &err));
  EXPECT_NE(err.find("no/such"), std::string::npos) << err;
  EXPECT_TRUE(files.empty());
}

// The kernel's tracks (perfetto/kernel.h) on the kernel fixture: a node track
// with the thread's off-CPU slice, the CPU's IRQs, the network's events; the
// explained stall's instant carries its cause and the flow from the slice that
// caused it; no slices overlap on any track.
TEST(PerfettoKernel, NodeTracksAndFlowsFromCauseToStall) {
  char tmpl[] = "/tmp/fabtrace_perfetto_kernel.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const test::KernelFixture k = test::write_kernel_fixture(dir);
  Job job;
  std::string err;
  ASSERT_TRUE(load_job(dir, &job, &err)) << err;
  PerfettoOptions opt;
  std::vector<std::string> files;
  PerfettoStats st;
  ASSERT_TRUE(write_perfetto_stats(job, dir + "/out", opt, &files, &st, &err)) << err;
  ASSERT_EQ(files.size(), 1u);
  const Decoded d = decode_trace(files[0]);
  ASSERT_TRUE(d.ok) << d.problem;
  EXPECT_EQ(check_tracks(d), "");
  std::map<uint64_t, std::string> track_name;
  bool node = false;
  for (const Descriptor& t : d.descs) {
    track_name[t.uuid] = t.name;
    node = node || (t.process && t.name == "kernel (node01)");
  }
  EXPECT_TRUE(node);
  EXPECT_EQ(st.kernel_slices, 3u);  // the off-CPU interval and two IRQs
  // 6 retransmit records (7 segments) + 2 drops + 3 untraced retransmits, the slow op
  EXPECT_EQ(st.kernel_instants, 12u);
  uint64_t off_flow = 0, irq_slices = 0, two_segments = 0;
  for (const TraceEvent& e : d.events) {
    const std::string& tn = track_name[e.track];
    if (e.type == 3 && e.name.rfind("retransmit 2 segments 10.", 0) == 0) ++two_segments;
    if (e.type == 1 && tn.find("off CPU") != std::string::npos) {
      EXPECT_EQ(e.name, "preempted: stress-ng");
      EXPECT_EQ(e.args.at("ran_instead"), "stress-ng[4312]");
      ASSERT_EQ(e.flows.size(), 1u);
      off_flow = e.flows[0];
    }
    if (e.type == 1 && tn == "cpu1 IRQs") {
      ++irq_slices;
      EXPECT_EQ(e.name, "virtio0-input.0");
    }
  }
  EXPECT_EQ(irq_slices, 2u);
  EXPECT_EQ(two_segments, 1u);  // the fixture's one skb of two segments
  ASSERT_NE(off_flow, 0u);
  bool stall_has_cause = false;
  for (const TraceEvent& e : d.events)
    if (e.type == 3 && e.name.rfind("CQ#0 poll gap 50.2", 0) == 0) {
      EXPECT_EQ(e.args.at("why"), "preempted by stress-ng[4312] for 48.1 of 50.2 ms");
      ASSERT_EQ(e.flow_ends.size(), 1u);
      EXPECT_EQ(e.flow_ends[0], off_flow);
      stall_has_cause = true;
    }
  EXPECT_TRUE(stall_has_cause);
  std::system(("rm -rf '" + dir + "'").c_str());  // test-owned temporary directory
}

// The application's marks (oplog version 2): phases as slices and marks as
// instants on a "marks tid N" track of the rank; capture changes as instants
// on the rank's track; an end without a begin is left out.
TEST_F(PerfettoTrace, MarksAndPhasesOnTheRankTrack) {
  Job job;
  job.ranks.push_back(make_rank(ProcessReport()));
  Rank& r = job.ranks.back();
  r.report.host = "h";
  r.report.rank = "0";
  r.report.pid = 1;
  r.report.start_mono_ns = kMono0;
  r.report.start_wall_ns = kWall0;
  r.oplog_path = dir_ + "/m.oplog";
  {
    OplogFileWriter w;
    ASSERT_TRUE(w.open(r.oplog_path, OplogMeta{"h", "0", 1}));
    OplogCalib c;
    c.ns_per_tick = 1.0;
    c.pairs = 2;
    ASSERT_TRUE(w.write_calib(c));
    ASSERT_TRUE(w.write_mark_names({{3, "iteration 7"}, {4, "allreduce"}}));
    const auto m = [](uint64_t t, uint8_t kind, uint32_t name, uint32_t tid) {
      oplog::OpEntry e{};
      e.start_ticks = e.end_ticks = kMono0 + t;
      e.kind = kind;
      e.link_id = name;
      e.tid = tid;
      return e;
    };
    const std::vector<oplog::OpEntry> marks = {
        m(10 * kUs, oplog::kPhaseEnd, oplog::kNoMarkName, 5),  // no begin: left out
        m(20 * kUs, oplog::kMarkInstant, 3, 5),
        m(30 * kUs, oplog::kPhaseBegin, 4, 5),
        m(40 * kUs, oplog::kPhaseEnd, oplog::kNoMarkName, 5),
        m(35 * kUs, oplog::kMarkInstant, 3, 6),
        m(50 * kUs, oplog::kCaptureOff, oplog::kNoMarkName, 0)};
    ASSERT_TRUE(w.write_marks(marks.data(), marks.size()));
    ASSERT_TRUE(w.write_end(0, 0, 0));
  }
  const Written out = write_trace(job);
  ASSERT_TRUE(out.ok) << out.err;
  const PerfettoStats& st = out.st;
  const std::vector<std::string>& files = out.files;
  EXPECT_EQ(st.marks, 5u);
  const Decoded d = decode_trace(files[0]);
  ASSERT_TRUE(d.ok) << d.problem;
  EXPECT_EQ(check_tracks(d), "");
  std::map<uint64_t, std::string> track_name;
  uint64_t rank_track = 0;
  for (const Descriptor& t : d.descs) {
    track_name[t.uuid] = t.name;
    if (t.process) rank_track = t.uuid;
  }
  std::vector<std::string> seen;
  for (const TraceEvent& e : d.events)
    seen.push_back(std::to_string(e.type) + " " + track_name[e.track] + " " + e.name + " " +
                   std::to_string(e.ts - kWall0));
  EXPECT_EQ(seen, (std::vector<std::string>{"3 marks tid 5 iteration 7 20000",
                                            "1 marks tid 5 allreduce 30000", "2 marks tid 5  40000",
                                            "3 marks tid 6 iteration 7 35000",
                                            "3 rank 0 (h) timeline capture off 50000"}));
  EXPECT_NE(rank_track, 0u);
}

}  // namespace
}  // namespace fabtrace::report
