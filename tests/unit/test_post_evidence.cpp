// post_evidence: receives paired with the sends of their messages through
// both ranks' per-op timelines, on planted timelines with known answers: on
// one host and across hosts whose monotonic clocks differ (aligned by the
// wall anchors), and every case that must give no verdict.
#include "userspace/report/analysis/post_evidence.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "common/op_kinds.h"
#include "common/oplog_file.h"
#include "fixtures/synthetic_job.h"

namespace fabtrace::report {
namespace {

constexpr const char* kS = "fi_sockaddr_in://10.0.0.1:1";
constexpr const char* kR = "fi_sockaddr_in://10.0.0.2:2";
constexpr const char* kOther = "fi_sockaddr_in://10.0.0.3:3";
constexpr uint64_t kUs = 1000;

struct Planted {
  uint64_t start_ns, end_ns;  // after the rank's first activity
  OpKind kind;
  uint64_t bytes;
  uint32_t link;
};

class PostEvidenceTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::make_fixture_dir("evidence"); }
  void TearDown() override { test::remove_tree(dir_); }

  // A rank whose CLOCK_MONOTONIC read mono0 and the wall clock wall0 at its
  // first activity; its timeline (ticks are ns) holds `ops` on `links`.
  Rank rank(const std::string& host, const std::string& r, uint64_t mono0, uint64_t wall0,
            const std::vector<OplogLink>& links, const std::vector<Planted>& ops) {
    Rank k;
    k.report.host = host;
    k.report.rank = r;
    k.report.pid = 100 + static_cast<long>(std::stol(r));
    k.report.start_mono_ns = mono0;
    k.report.start_wall_ns = wall0;
    k.oplog_path = dir_ + "/r" + r + ".oplog";
    ::unlink(k.oplog_path.c_str());  // writers create new files only: a job built again replaces it
    OplogFileWriter w;
    EXPECT_TRUE(w.open(k.oplog_path, OplogMeta{host, r, k.pid()}));
    OplogCalib c;
    c.tsc = false;
    c.ns_per_tick = 1.0;
    c.tick0 = mono0;
    c.mono0_ns = mono0;
    c.real0_ns = wall0;
    c.pairs = 2;
    EXPECT_TRUE(w.write_calib(c));
    if (!links_last_) {
      EXPECT_TRUE(w.write_links(links));
    }
    std::vector<oplog::OpEntry> es;
    for (const Planted& p : ops) {
      oplog::OpEntry e{};
      e.start_ticks = mono0 + p.start_ns;
      e.end_ticks = mono0 + p.end_ns;
      e.bytes = p.bytes;
      e.link_id = p.link;
      e.kind = static_cast<uint8_t>(p.kind);
      es.push_back(e);
    }
    EXPECT_TRUE(w.write_ops(es.data(), es.size()));
    if (links_last_) {
      EXPECT_TRUE(w.write_links(links));
    }
    EXPECT_TRUE(w.write_end(es.size(), 0, 0));
    w.close();
    // The report rows the timeline's ops belong to.
    for (const OplogLink& l : links) {
      LinkReport lr;
      lr.local = l.local;
      lr.remote = l.remote;
      for (const Planted& p : ops) {
        if (p.link != l.id) continue;
        bool merged = false;
        for (OpRow& o : lr.rows) {
          if (o.op != op_name(p.kind) || o.bytes != p.bytes) continue;
          ++o.count;
          merged = true;
        }
        if (merged) continue;
        OpRow o;
        o.op = op_name(p.kind);
        o.bytes = p.bytes;
        o.count = 1;
        o.recv = op_is_recv(p.kind);
        lr.rows.push_back(o);
      }
      k.report.links.push_back(lr);
    }
    return k;
  }

  const LinkRow& row_of(const Job& job, const std::string& rank, const char* op, uint64_t bytes) {
    for (const LinkRow& l : job.links)
      if (l.rank() == rank && l.op() == op && l.row.bytes == bytes) return l;
    ADD_FAILURE() << "no row " << rank << " " << op << " " << bytes;
    static LinkRow none;
    return none;
  }

  Job job_of(std::vector<Rank> ranks) {
    Job job;
    job.ranks = std::move(ranks);
    build_job_tables(&job);
    match_receives_to_sends(&job);
    return job;
  }

  // Sender: 10 tagged sends of 1000 B (one every 100 us from 5 ms) then 10 of 2000 B.
  // Receiver: the 1000 B receives posted 20 us before their send, the
  // 2000 B ones 1 ms after it; each completes 5 us after the later of the two.
  static void plant(int64_t recv_offset_ns, std::vector<Planted>* sends,
                    std::vector<Planted>* recvs) {
    for (uint64_t k = 0; k < 20; ++k) {
      const bool late = k >= 10;
      const uint64_t issue = 5000 * kUs + k * 100 * kUs + (late ? 10000 * kUs : 0);
      const uint64_t bytes = late ? 2000 : 1000;
      sends->push_back({issue, issue + 3 * kUs, OpKind::kTsend, bytes, 0});
      const uint64_t post = late ? issue + 1000 * kUs : issue - 20 * kUs;
      const uint64_t done = (late ? post : issue) + 5 * kUs;
      recvs->push_back({static_cast<uint64_t>(static_cast<int64_t>(post) + recv_offset_ns),
                        static_cast<uint64_t>(static_cast<int64_t>(done) + recv_offset_ns),
                        OpKind::kTrecv, bytes, 0});
    }
  }

  std::string dir_;
  bool links_last_ = false;  // the link table after the ops, as a lazy writer may put it
};

// One host: both ranks read the same CLOCK_MONOTONIC; the receiver started
// 3 ms after the sender, so its times are relative to a later origin.
TEST_F(PostEvidenceTest, PrePostedAreNotLateLateOnesAre) {
  std::vector<Planted> sends, recvs;
  plant(-3000 * static_cast<int64_t>(kUs), &sends, &recvs);
  const uint64_t mono = 1000000000000ull, wall = 1700000000000000000ull;
  Job job =
      job_of({rank("h", "0", mono, wall, {{0, kS, kR}}, sends),
              rank("h", "1", mono + 3000 * kUs, wall + 3000 * kUs, {{0, kR, "(any)"}}, recvs)});
  const LinkRow& early = row_of(job, "1", "fi_trecv", 1000);
  EXPECT_EQ(early.posted().logged, 10u);
  EXPECT_EQ(early.posted().matched, 10u);
  EXPECT_EQ(early.posted().late, 0u);
  EXPECT_EQ(early.posted().unknown(), "");
  const LinkRow& late = row_of(job, "1", "fi_trecv", 2000);
  EXPECT_EQ(late.posted().matched, 10u);
  EXPECT_EQ(late.posted().late, 10u);
  EXPECT_DOUBLE_EQ(late.posted().late_median_ns, 1000.0 * kUs);
  EXPECT_EQ(late.posted().unknown(), "");
}

// The link table after the ops that use it: the preload writes a link's
// table lazily, and the tail of a chain stopped until its one logged send had
// its send's block first. Its sends are the timeline's all the same (they were
// left out, and the receiver's wait on it was lost, when the reader's table was
// only what it had read so far).
TEST_F(PostEvidenceTest, ALinkTableWrittenAfterItsOpsStillPairsThem) {
  links_last_ = true;
  std::vector<Planted> sends, recvs;
  plant(0, &sends, &recvs);
  const uint64_t mono = 1000000000000ull, wall = 1700000000000000000ull;
  Job job = job_of({rank("h", "0", mono, wall, {{0, kS, kR}}, sends),
                    rank("h", "1", mono, wall, {{0, kR, kS}}, recvs)});
  EXPECT_EQ(row_of(job, "1", "fi_trecv", 1000).posted().matched, 10u);
  EXPECT_EQ(row_of(job, "1", "fi_trecv", 2000).posted().matched, 10u);
  EXPECT_EQ(row_of(job, "1", "fi_trecv", 2000).posted().late, 10u);
  EXPECT_EQ(row_of(job, "1", "fi_trecv", 1000).posted().unknown(), "");
}

// Two hosts whose CLOCK_MONOTONICs are 5000 s apart: the wall anchors align them.
TEST_F(PostEvidenceTest, AcrossHostsByTheWallAnchors) {
  std::vector<Planted> sends, recvs;
  plant(0, &sends, &recvs);
  const uint64_t wall = 1700000000000000000ull;
  Job job = job_of({rank("a", "0", 1000000000000ull, wall, {{0, kS, kR}}, sends),
                    rank("b", "1", 6000000000000ull, wall, {{0, kR, kS}}, recvs)});
  EXPECT_EQ(row_of(job, "1", "fi_trecv", 1000).posted().late, 0u);
  EXPECT_EQ(row_of(job, "1", "fi_trecv", 1000).posted().matched, 10u);
  EXPECT_EQ(row_of(job, "1", "fi_trecv", 2000).posted().late, 10u);
}

// No verdict, and a reason, wherever the pairing is not certain.
TEST_F(PostEvidenceTest, NoVerdictWithoutCertainPairing) {
  const uint64_t mono = 1000000000000ull, wall = 1700000000000000000ull;
  std::vector<Planted> sends, recvs;
  plant(0, &sends, &recvs);
  {  // the sender's timeline lacks one send (an inject, a dropped record)
    std::vector<Planted> fewer(sends.begin() + 1, sends.end());
    Job job = job_of({rank("h", "0", mono, wall, {{0, kS, kR}}, fewer),
                      rank("h", "1", mono, wall, {{0, kR, "(any)"}}, recvs)});
    const LinkRow& r = row_of(job, "1", "fi_trecv", 1000);
    EXPECT_EQ(r.posted().matched, 0u);
    EXPECT_NE(r.posted().unknown().find("19 sends and 20 receives"), std::string::npos)
        << r.posted().unknown();
  }
  {  // sizes that do not pair up in order
    std::vector<Planted> swapped = sends;
    std::swap(swapped[9].start_ns, swapped[10].start_ns);
    Job job = job_of({rank("h", "0", mono, wall, {{0, kS, kR}}, swapped),
                      rank("h", "1", mono, wall, {{0, kR, "(any)"}}, recvs)});
    EXPECT_EQ(row_of(job, "1", "fi_trecv", 2000).posted().matched, 0u);
    EXPECT_NE(row_of(job, "1", "fi_trecv", 2000).posted().unknown().find("sizes"),
              std::string::npos);
  }
  {  // receives from any source, and two senders to this receiver
    Job job = job_of({rank("h", "0", mono, wall, {{0, kS, kR}}, sends),
                      rank("h", "2", mono, wall, {{0, kOther, kR}}, sends),
                      rank("h", "1", mono, wall, {{0, kR, "(any)"}}, recvs)});
    EXPECT_EQ(row_of(job, "1", "fi_trecv", 1000).posted().matched, 0u);
    EXPECT_NE(row_of(job, "1", "fi_trecv", 1000).posted().unknown().find("several senders"),
              std::string::npos);
  }
  {  // the sender has no timeline
    Rank sender = rank("h", "0", mono, wall, {{0, kS, kR}}, sends);
    sender.oplog_path.clear();
    Job job = job_of({sender, rank("h", "1", mono, wall, {{0, kR, "(any)"}}, recvs)});
    EXPECT_EQ(row_of(job, "1", "fi_trecv", 1000).posted().matched, 0u);
    EXPECT_NE(row_of(job, "1", "fi_trecv", 1000).posted().unknown().find("no sender"),
              std::string::npos);
  }
  {  // the receiver has none
    Rank receiver = rank("h", "1", mono, wall, {{0, kR, "(any)"}}, recvs);
    receiver.oplog_path.clear();
    Job job = job_of({rank("h", "0", mono, wall, {{0, kS, kR}}, sends), receiver});
    EXPECT_EQ(row_of(job, "1", "fi_trecv", 2000).posted().late, 0u);
    EXPECT_EQ(row_of(job, "1", "fi_trecv", 2000).posted().unknown(),
              "no per-op timeline of this rank");
  }
}

// A job where no rank has a timeline is matched in one pass: every receive
// row says so, as the whole matcher says it (rows with evidence of their own
// before, from an earlier matching, included).
TEST(PostEvidence, NoTimelinesGiveWhatTheMatcherGives) {
  const test::SyntheticJob sj = test::make_synthetic_job(test::reports_only(2, 3));
  Job job;
  for (const ProcessReport& r : sj.reports) job.ranks.push_back(make_rank(r));
  build_job_tables(&job);
  size_t recvs = 0;
  for (LinkRow& l : job.links)
    if (l.row.recv) {
      l.posted_mut().matched = 5;  // left by something before: reset by both
      ++recvs;
    }
  ASSERT_GT(recvs, 0u);
  Job whole = job;
  match_receives_to_sends(&job);
  ReceiveMatcher m(&whole, EvidenceOptions());
  m.finish();
  ASSERT_EQ(job.links.size(), whole.links.size());
  for (size_t i = 0; i < job.links.size(); ++i) {
    const PostEvidence &a = job.links[i].posted(), &b = whole.links[i].posted();
    EXPECT_EQ(a.unknown(), b.unknown()) << i;
    EXPECT_EQ(a.matched, b.matched) << i;
    EXPECT_EQ(a.logged, b.logged) << i;
    EXPECT_EQ(a.late, b.late) << i;
    if (job.links[i].row.recv) {
      EXPECT_EQ(a.unknown(), kPostedNoTimeline);
    }
  }
}

}  // namespace
}  // namespace fabtrace::report
