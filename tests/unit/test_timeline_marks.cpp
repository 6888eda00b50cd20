// The per-op timeline's marks and capture window, driven directly (no
// provider): what reaches the oplog file for ops inside, outside and across
// the window, for marks and phases, and for the capture toggle.
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/oplog_file.h"
#include "preload/inflight.h"
#include "preload/stats.h"
#include "preload/timeline.h"
#include "tests/unit/scratch_dir.h"

namespace fabtrace {
namespace {

struct Read {
  std::vector<oplog::OpEntry> ops, marks;
  std::map<uint32_t, std::string> names;
  OplogCaptureSpec capture;
  uint64_t outside = 0;
  uint32_t version = 0;
};

Read read_back(const std::string& path) {
  Read r;
  OplogReader rd;
  std::string err;
  EXPECT_TRUE(rd.open(path, &err)) << err;
  EXPECT_TRUE(rd.read_all(
      [&](const oplog::OpEntry* e, size_t n) { r.ops.insert(r.ops.end(), e, e + n); },
      [&](const oplog::OpEntry* e, size_t n) { r.marks.insert(r.marks.end(), e, e + n); }, &err))
      << err;
  EXPECT_FALSE(rd.truncated()) << rd.stop_reason();
  r.names = rd.mark_names();
  r.capture = rd.capture();
  r.outside = rd.end_outside_capture();
  r.version = rd.header().version;
  return r;
}

TimelineConfig config() {
  TimelineConfig c;
  c.on = true;
  c.min_bytes = 0;
  c.mb = 4;
  c.flush_ms = 5;
  return c;
}

void op(Timeline& t, Shard* s, uint64_t start, uint64_t end, uint64_t bytes) {
  OpRecord r;
  r.kind = OpKind::kTsend;
  r.tid = 7;
  r.start = start;
  t.append(s, nullptr, &r, end, bytes, false);
}

std::vector<uint64_t> sizes(const std::vector<oplog::OpEntry>& ops) {
  std::vector<uint64_t> v;
  for (const auto& e : ops) v.push_back(e.bytes);
  return v;
}

class TimelineMarks : public ::testing::Test {
 protected:
  void SetUp() override { clock_init(); }
  std::string path(const char* name) { return dir_.path() + "/" + name; }
  // Starts t on the file `name` with FABTRACE_OPS_WINDOW=capture.
  void start(Timeline& t, const char* name, const char* capture) {
    TimelineConfig c = config();
    std::string why;
    ASSERT_TRUE(parse_capture_spec(capture, &c.capture, &why)) << why;
    ASSERT_TRUE(t.start(c, path(name), OplogMeta{"h", "0", 1}));
  }
  test::ScratchDir dir_;
};

TEST_F(TimelineMarks, MarksPhasesAndNamesReachTheFile) {
  Timeline t;
  ASSERT_TRUE(t.start(config(), path("m.oplog"), OplogMeta{"h", "0", 1}));
  Shard* s = my_shard();
  const uint32_t a = t.mark_name_id("iteration 1");
  EXPECT_EQ(t.mark_name_id("iteration 1"), a);  // interned once
  const uint32_t b = t.mark_name_id("allreduce");
  EXPECT_NE(a, b);
  t.append_mark(s, oplog::kMarkInstant, a, 11, 0, 100);
  t.append_mark(s, oplog::kPhaseBegin, b, 11, 1, 110);
  op(t, s, 120, 130, 4096);
  t.append_mark(s, oplog::kPhaseEnd, oplog::kNoMarkName, 11, 1, 140);
  t.finish();
  const Read r = read_back(path("m.oplog"));
  EXPECT_EQ(r.version, oplog::kVersion);
  ASSERT_EQ(r.ops.size(), 1u);
  EXPECT_EQ(r.ops[0].flags, 0);
  ASSERT_EQ(r.marks.size(), 3u);
  EXPECT_EQ(r.marks[0].kind, oplog::kMarkInstant);
  EXPECT_EQ(r.names.at(r.marks[0].link_id), "iteration 1");
  EXPECT_EQ(r.marks[0].start_ticks, 100u);
  EXPECT_EQ(r.marks[0].tid, 11u);
  EXPECT_EQ(r.marks[1].kind, oplog::kPhaseBegin);
  EXPECT_EQ(r.names.at(r.marks[1].link_id), "allreduce");
  EXPECT_EQ(r.marks[2].kind, oplog::kPhaseEnd);
  EXPECT_EQ(r.marks[2].link_id, oplog::kNoMarkName);
  for (const auto& m : r.marks) EXPECT_EQ(m.flags, 0);  // the buffer's mark bit is not stored
  EXPECT_EQ(r.capture.spec, "");
}

TEST_F(TimelineMarks, LongNamesAreCutAndNullIsEmpty) {
  Timeline t;
  ASSERT_TRUE(t.start(config(), path("n.oplog"), OplogMeta{"h", "0", 1}));
  const std::string long_name(1000, 'x');
  const uint32_t id = t.mark_name_id(long_name.c_str());
  EXPECT_EQ(t.mark_name_id(std::string(oplog::kMaxMarkNameBytes, 'x').c_str()), id);
  t.append_mark(my_shard(), oplog::kMarkInstant, id, 1, 0, 5);
  t.append_mark(my_shard(), oplog::kMarkInstant, t.mark_name_id(nullptr), 1, 0, 6);
  t.finish();
  const Read r = read_back(path("n.oplog"));
  ASSERT_EQ(r.marks.size(), 2u);
  EXPECT_EQ(r.names.at(r.marks[0].link_id).size(), oplog::kMaxMarkNameBytes);
  EXPECT_EQ(r.names.at(r.marks[1].link_id), "");
}

// FABTRACE_OPS_WINDOW=mark:NAME: ops overlapping [the mark, the next mark]
// are kept, those in flight at an edge whole; the rest are counted outside.
TEST_F(TimelineMarks, MarkWindowKeepsOpsBetweenTheMarkAndTheNext) {
  Timeline t;
  start(t, "w.oplog", "mark:iteration 2");
  Shard* s = my_shard();
  EXPECT_FALSE(t.capturing());
  op(t, s, 10, 20, 1);  // before: left out
  t.append_mark(s, oplog::kMarkInstant, t.mark_name_id("iteration 1"), 1, 0, 30);
  op(t, s, 35, 45, 2);  // after another mark: left out
  t.append_mark(s, oplog::kMarkInstant, t.mark_name_id("iteration 2"), 1, 0, 50);
  EXPECT_TRUE(t.capturing());
  op(t, s, 48, 55, 3);  // in flight at the opening edge: kept whole
  op(t, s, 60, 70, 4);  // inside
  op(t, s, 75, 95, 5);  // in flight at the closing edge: kept whole
  t.append_mark(s, oplog::kMarkInstant, t.mark_name_id("iteration 3"), 1, 0, 90);
  EXPECT_FALSE(t.capturing());
  op(t, s, 92, 99, 6);  // after: left out
  t.append_mark(s, oplog::kMarkInstant, t.mark_name_id("iteration 2"), 1, 0, 100);  // once only
  op(t, s, 101, 102, 7);
  t.finish();
  const Read r = read_back(path("w.oplog"));
  EXPECT_EQ(sizes(r.ops), (std::vector<uint64_t>{3, 4, 5}));
  EXPECT_EQ(r.outside, 4u);
  EXPECT_EQ(r.capture.spec, "mark:iteration 2");
  // Four marks, and the capture going on at 50 and off at 90.
  std::vector<std::pair<int, uint64_t>> capture;
  size_t marks = 0;
  for (const auto& m : r.marks) {
    if (m.kind == oplog::kCaptureOn || m.kind == oplog::kCaptureOff)
      capture.emplace_back(m.kind, m.start_ticks);
    else
      ++marks;
  }
  EXPECT_EQ(marks, 4u);
  EXPECT_EQ(capture, (std::vector<std::pair<int, uint64_t>>{{oplog::kCaptureOn, 50},
                                                            {oplog::kCaptureOff, 90}}));
}

// A phase as the window: from its begin to the end that closes it (nested
// phases inside do not close it).
TEST_F(TimelineMarks, PhaseWindowEndsWithItsOwnEnd) {
  Timeline t;
  start(t, "p.oplog", "mark:step");
  Shard* s = my_shard();
  const uint32_t step = t.mark_name_id("step"), inner = t.mark_name_id("inner");
  t.append_mark(s, oplog::kPhaseBegin, step, 9, 1, 10);
  op(t, s, 11, 12, 1);
  t.append_mark(s, oplog::kPhaseBegin, inner, 9, 2, 13);
  t.append_mark(s, oplog::kMarkInstant, inner, 9, 2, 14);  // an instant does not close a phase
  op(t, s, 15, 16, 2);
  t.append_mark(s, oplog::kPhaseEnd, oplog::kNoMarkName, 9, 2, 17);
  op(t, s, 18, 19, 3);
  t.append_mark(s, oplog::kPhaseEnd, oplog::kNoMarkName, 8, 1, 20);  // another thread's end
  op(t, s, 21, 22, 4);
  t.append_mark(s, oplog::kPhaseEnd, oplog::kNoMarkName, 9, 1, 23);
  op(t, s, 24, 25, 5);
  t.finish();
  const Read r = read_back(path("p.oplog"));
  EXPECT_EQ(sizes(r.ops), (std::vector<uint64_t>{1, 2, 3, 4}));
}

// The toggle (what the signal handler calls): off, on, off; every change recorded.
TEST_F(TimelineMarks, ToggleAndTimeWindow) {
  Timeline t;
  start(t, "t.oplog", "");
  Shard* s = my_shard();
  EXPECT_TRUE(t.capturing());
  op(t, s, 10, 20, 1);
  t.toggle_capture(30);
  op(t, s, 25, 35, 2);  // in flight when it went off: kept
  op(t, s, 40, 50, 3);
  t.toggle_capture(60);
  op(t, s, 55, 65, 4);  // in flight when it went on: kept
  t.toggle_capture(70);
  op(t, s, 80, 90, 5);
  t.finish();
  const Read r = read_back(path("t.oplog"));
  EXPECT_EQ(sizes(r.ops), (std::vector<uint64_t>{1, 2, 4}));
  EXPECT_EQ(r.outside, 2u);
  ASSERT_EQ(r.marks.size(), 3u);
  EXPECT_EQ(r.marks[0].kind, oplog::kCaptureOff);
  EXPECT_EQ(r.marks[1].kind, oplog::kCaptureOn);
  EXPECT_EQ(r.marks[2].kind, oplog::kCaptureOff);
  EXPECT_EQ(r.marks[1].start_ticks, 60u);

  // START:DURATION in seconds after the start, in ticks of the calibration.
  Timeline w;
  start(w, "time.oplog", "3600:1");
  const uint64_t now = now_ticks();
  op(w, s, now, now + 10, 1);  // an hour too early
  w.finish();
  const Read rw = read_back(path("time.oplog"));
  EXPECT_TRUE(rw.ops.empty());
  EXPECT_EQ(rw.outside, 1u);
  EXPECT_EQ(rw.capture.spec, "3600:1");
  ASSERT_EQ(rw.marks.size(), 2u);
  const Calibration cal = clock_calibration();
  const double on_s = static_cast<double>(rw.marks[0].start_ticks - now) * cal.ns_per_tick / 1e9;
  EXPECT_NEAR(on_s, 3600.0, 1.0);
  const double len_s = static_cast<double>(rw.marks[1].start_ticks - rw.marks[0].start_ticks) *
                       cal.ns_per_tick / 1e9;
  EXPECT_NEAR(len_s, 1.0, 0.01);
}

// A version 1 file (no mark blocks, version 1 in its header) still reads.
TEST_F(TimelineMarks, VersionOneFilesStillRead) {
  const std::string p = path("v1.oplog");
  {
    OplogFileWriter w;
    ASSERT_TRUE(w.open(p, OplogMeta{"h", "0", 1}));
    oplog::OpEntry e{};
    e.start_ticks = 1;
    e.end_ticks = 2;
    e.bytes = 3;
    ASSERT_TRUE(w.write_ops(&e, 1));
    ASSERT_TRUE(w.write_end(1, 0, 0));
  }
  std::string bytes;
  {
    FILE* f = std::fopen(p.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    const uint32_t v1 = 1;
    std::fseek(f, 8, SEEK_SET);
    std::fwrite(&v1, 4, 1, f);
    std::fclose(f);
  }
  const Read r = read_back(p);
  EXPECT_EQ(r.version, 1u);
  ASSERT_EQ(r.ops.size(), 1u);
  EXPECT_EQ(r.ops[0].bytes, 3u);
  EXPECT_TRUE(r.marks.empty());
}

// Threads interning overlapping names and marking while another toggles the
// capture and the writer runs: every mark's name reads back as written, each
// name once in the dictionary, every toggle recorded.
TEST_F(TimelineMarks, ConcurrentMarksNamesAndToggles) {
  Timeline t;
  start(t, "c.oplog", "");
  constexpr int kThreads = 4, kMarks = 3000, kToggles = 100;
  std::vector<std::thread> th;
  for (int k = 0; k < kThreads; ++k)
    th.emplace_back([&t, k] {
      Shard* s = my_shard();
      for (int i = 0; i < kMarks; ++i) {
        const std::string name = "phase " + std::to_string((i * 7 + k) % 500);
        t.append_mark(s, oplog::kMarkInstant, t.mark_name_id(name.c_str()),
                      static_cast<uint32_t>(100 + k), 0, static_cast<uint64_t>(i));
        OpRecord r;
        r.kind = OpKind::kTsend;
        r.start = static_cast<uint64_t>(i);
        t.append(s, nullptr, &r, r.start + 1, static_cast<uint64_t>(i), false);
      }
    });
  th.emplace_back([&t] {
    for (int i = 0; i < kToggles; ++i) t.toggle_capture(now_ticks());
  });
  for (auto& x : th) x.join();
  t.finish();
  const Read r = read_back(path("c.oplog"));
  size_t marks = 0, toggles = 0;
  for (const auto& m : r.marks) {
    if (m.kind == oplog::kCaptureOn || m.kind == oplog::kCaptureOff) {
      ++toggles;
      continue;
    }
    ++marks;
    const int k = static_cast<int>(m.tid) - 100;
    const int i = static_cast<int>(m.start_ticks);
    EXPECT_EQ(r.names.at(m.link_id), "phase " + std::to_string((i * 7 + k) % 500));
  }
  EXPECT_EQ(marks, static_cast<size_t>(kThreads * kMarks));
  EXPECT_EQ(toggles, static_cast<size_t>(kToggles));
  EXPECT_EQ(r.names.size(), 500u);
}

}  // namespace
}  // namespace fabtrace
