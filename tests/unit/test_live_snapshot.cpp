// The live snapshot's parts (common/live_format.h): the seqlock between its
// writer thread and a reader (under ThreadSanitizer in the TSan build), the
// reader's checks on files planted in a scratch directory (stale, another
// user's, lying about who wrote them, cut short, not files at all), the
// stalls file's round trip, and the metrics text's form.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/live_format.h"
#include "common/live_read.h"
#include "common/live_seqlock.h"
#include "common/live_stalls.h"
#include "common/op_kinds.h"
#include "tests/unit/scratch_dir.h"
#include "userspace/live/live_view.h"
#include "userspace/live/metrics_text.h"

namespace fabtrace {
namespace {

using live::Layout;

// ---------------------------------------------------------------------------
// The seqlock: a writer thread publishes bodies whose every word is the
// generation number; readers, in memory and through pread(2) as `fabtrace top`
// reads, must only ever get bodies whose words all agree.

TEST(LiveSeqlock, AConcurrentReaderNeverSeesATornBody) {
  constexpr size_t kWords = 4096;  // 32 KiB: a copy takes long enough to be overlapped
  const int fd = ::memfd_create("live-seqlock", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  const size_t size = 64 + kWords * 8;
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(size)), 0);
  void* m = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(m, MAP_FAILED);
  uint64_t* seq = static_cast<uint64_t*>(m);
  uint64_t* body = seq + 8;

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> written{0};
  std::thread writer([&] {
    std::vector<uint64_t> src(kWords);
    for (uint64_t g = 1; !stop.load(std::memory_order_relaxed); ++g) {
      std::fill(src.begin(), src.end(), g);
      live::write_seqlocked(seq, body, src.data(), kWords);
      written.store(g, std::memory_order_relaxed);
      // A pause now and then (the publisher writes once a second): a reader
      // slowed by a sanitizer could otherwise overlap every write.
      if (g % 16 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  const auto check = [&](const std::vector<uint64_t>& got, uint64_t* last, const char* how) {
    for (size_t i = 1; i < kWords; ++i)
      if (got[i] != got[0]) {
        ADD_FAILURE() << how << ": torn body: word 0 is generation " << got[0] << ", word " << i
                      << " is " << got[i];
        return false;
      }
    EXPECT_GE(got[0], *last) << how << ": a generation older than one already read";
    *last = got[0];
    return true;
  };
  std::atomic<uint64_t> reads_mem{0}, reads_fd{0};  // the main thread reads them
  uint64_t last_mem = 0, last_fd = 0;
  std::thread reader([&] {
    std::vector<uint64_t> got(kWords);
    while (!stop.load(std::memory_order_relaxed)) {
      if (live::read_seqlocked(seq, body, got.data(), kWords, 1000) &&
          check(got, &last_mem, "in memory"))
        ++reads_mem;
      if (live::read_seqlocked_fd(fd, 0, 64, got.data(), kWords, 1000) &&
          check(got, &last_fd, "pread"))
        ++reads_fd;
    }
  });
  // Until both readers got a few hundred whole bodies while the writer kept
  // writing (bounded: a loaded machine still gets there in seconds).
  for (int i = 0; i < 400 && (reads_mem < 200 || reads_fd < 200 || written.load() < 1000); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  stop.store(true);
  writer.join();
  reader.join();
  EXPECT_GT(written.load(), 0u);
  EXPECT_GT(reads_mem, 0u);
  EXPECT_GT(reads_fd, 0u);
  ::munmap(m, size);
  ::close(fd);
}

TEST(LiveSeqlock, NothingPublishedOrAWriteInProgressIsNoSnapshot) {
  uint64_t seq = 0, body[4] = {1, 2, 3, 4}, out[4];
  EXPECT_EQ(live::read_seqlocked(&seq, body, out, 4, 5), 0u);  // never published
  seq = 7;                                                     // a writer inside its copy
  EXPECT_EQ(live::read_seqlocked(&seq, body, out, 4, 5), 0u);
  seq = 8;
  EXPECT_EQ(live::read_seqlocked(&seq, body, out, 4, 5), 8u);
  EXPECT_EQ(out[3], 4u);
}

// ---------------------------------------------------------------------------
// Names and the process start time.

TEST(LiveFormat, FileNamesRoundTripAndNothingElseParses) {
  uid_t u = 0;
  pid_t p = 0;
  EXPECT_EQ(live::file_name(1000, 4242), "fabtrace-live.u1000.p4242");
  ASSERT_TRUE(live::parse_file_name("fabtrace-live.u1000.p4242", &u, &p));
  EXPECT_EQ(u, 1000u);
  EXPECT_EQ(p, 4242);
  for (const char* bad :
       {"fabtrace-live.u1000.p", "fabtrace-live.u.p1", "fabtrace-live.u01.p1",
        "fabtrace-live.u1.p0", "fabtrace-live.u1.p1x", "fabtrace-live.u1.p99999999999",
        "fabtrace-live.u-1.p2", "other.u1.p2", "fabtrace-live.u1.p2/../x"})
    EXPECT_FALSE(live::parse_file_name(bad, &u, &p)) << bad;
}

TEST(LiveFormat, StartTimeIsTheKernelsAndZeroForAGoneProcess) {
  const uint64_t mine = live::process_start_time(::getpid());
  EXPECT_GT(mine, 0u);
  EXPECT_EQ(live::process_start_time(::getpid()), mine);
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  EXPECT_EQ(live::process_start_time(child), 0u);
}

// ---------------------------------------------------------------------------
// The reader against files planted as a writer would make them, and worse.

// A snapshot file for `pid` as the preload writes it: head, one link row, one
// CQ row; the descriptor (holding the file's lock when `lock`) is returned.
int plant(const std::string& dir, uid_t uid, pid_t pid, uint64_t start_time, bool lock,
          uint64_t ops = 1234) {
  const std::string name = live::file_name(uid, pid);
  const int fd = ::open((dir + "/" + name).c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
  if (fd < 0) return -1;
  Layout lay;
  lay.link_cap = 4;
  lay.cq_cap = 2;
  std::vector<char> file(lay.file_size(), 0);
  live::Head* h = reinterpret_cast<live::Head*>(file.data());
  h->c[live::kh_magic] = live::kMagic;
  h->c[live::kh_version] = live::kVersion;
  h->c[live::kh_link_cap] = lay.link_cap;
  h->c[live::kh_cq_cap] = lay.cq_cap;
  h->c[live::kh_pid] = static_cast<uint64_t>(pid);
  h->c[live::kh_uid] = uid;
  h->c[live::kh_start_time] = start_time;
  h->c[live::kh_interval_ns] = 1000000000;
  h->rank.set("3");
  h->host.set("node7");
  h->comm.set("app");
  uint64_t* seq = reinterpret_cast<uint64_t*>(file.data() + Layout::kSeqOffset);
  *seq = 2;
  uint64_t* body = reinterpret_cast<uint64_t*>(file.data() + Layout::kBodyOffset);
  body[live::kp_links] = 1;
  body[live::kp_cqs] = 1;
  body[live::kp_ops] = ops;
  body[live::kp_interval_real_ns] = 1000000000;
  live::LinkRow* l = reinterpret_cast<live::LinkRow*>(body + Layout::kLinksWord);
  l->c[live::kl_op] = static_cast<uint64_t>(OpKind::kSend);
  l->c[live::kl_ops] = ops;
  l->c[live::kl_ops_iv] = 100;
  l->c[live::kl_bytes_iv] = 4096 * 100;
  l->c[live::kl_p99_iv_ns] = 12000;
  l->local.set("10.0.0.1:1");
  l->remote.set("10.0.0.2:2");
  live::CqRow* q = reinterpret_cast<live::CqRow*>(body + lay.cqs_word());
  q->c[live::kq_id] = 0;
  q->c[live::kq_max_gap_iv_ns] = 5000;
  if (::write(fd, file.data(), file.size()) != static_cast<ssize_t>(file.size())) return -1;
  if (::fchown(fd, uid, static_cast<gid_t>(-1)) != 0) return -1;
  if (lock) {
    struct flock fl = {};
    fl.l_type = F_RDLCK;
    fl.l_whence = SEEK_SET;
    if (::fcntl(fd, F_OFD_SETLK, &fl) != 0) return -1;
  }
  return fd;
}

live::ReadOptions options(const test::ScratchDir& d) {
  live::ReadOptions o;
  o.dir = d.path();
  o.caller = ::geteuid();
  return o;
}

// A view of the files in d, with no record session.
live::GatherOptions no_session(const test::ScratchDir& d) {
  live::GatherOptions o;
  o.read = options(d);
  o.run_dir = d.path("no-session");
  return o;
}

TEST(LiveRead, ALiveProcessesFileIsReadWhole) {
  test::ScratchDir d;
  const int fd =
      plant(d.path(), ::geteuid(), ::getpid(), live::process_start_time(::getpid()), true);
  ASSERT_GE(fd, 0);
  std::vector<live::Snapshot> s;
  std::vector<live::Skipped> skipped;
  std::string err;
  ASSERT_TRUE(live::read_snapshots(options(d), &s, &skipped, &err)) << err;
  ASSERT_EQ(s.size(), 1u) << (skipped.empty() ? "" : skipped[0].why);
  EXPECT_EQ(s[0].rank, "3");
  EXPECT_EQ(s[0].host, "node7");
  EXPECT_EQ(s[0].proc[live::kp_ops], 1234u);
  ASSERT_EQ(s[0].links.size(), 1u);
  EXPECT_EQ(s[0].links[0].local, "10.0.0.1:1");
  EXPECT_EQ(s[0].links[0].c[live::kl_ops_iv], 100u);
  ASSERT_EQ(s[0].cqs.size(), 1u);
  ::close(fd);
}

TEST(LiveRead, StaleFilesAreRecognisedAndSkipped) {
  test::ScratchDir d;
  // A dead process's file (a pid that was just reaped), its lock gone with it.
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  const uint64_t start = live::process_start_time(child);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  const int dead = plant(d.path(), ::geteuid(), child, start ? start : 1, false);
  ASSERT_GE(dead, 0);
  ::close(dead);
  // A file naming this live process with another start time (pid reuse).
  test::ScratchDir d2;
  const int reused = plant(d2.path(), ::geteuid(), ::getpid(), 1, true);
  ASSERT_GE(reused, 0);
  // This process, right start time, but nobody holds the lock (an exec'd
  // program, or the writer killed while a child kept running).
  test::ScratchDir d3;
  const int unlocked =
      plant(d3.path(), ::geteuid(), ::getpid(), live::process_start_time(::getpid()), false);
  ASSERT_GE(unlocked, 0);
  for (const test::ScratchDir* dir : {&d, &d2, &d3}) {
    std::vector<live::Snapshot> s;
    std::vector<live::Skipped> skipped;
    std::string err;
    ASSERT_TRUE(live::read_snapshots(options(*dir), &s, &skipped, &err));
    EXPECT_TRUE(s.empty());
    ASSERT_EQ(skipped.size(), 1u);
    EXPECT_TRUE(skipped[0].stale) << skipped[0].why;
  }
  ::close(reused);
  ::close(unlocked);
}

TEST(LiveRead, HostileFilesAreSkippedWithAReason) {
  test::ScratchDir d;
  const uid_t me = ::geteuid();
  const std::string mine = live::file_name(me, ::getpid());
  // A link at the name, to a real snapshot elsewhere: never followed.
  test::ScratchDir elsewhere;
  const int real =
      plant(elsewhere.path(), me, ::getpid(), live::process_start_time(::getpid()), true);
  ASSERT_GE(real, 0);
  d.symlink(elsewhere.path(mine), mine);
  // A FIFO at another name of this user's: must not hang the reader.
  ASSERT_EQ(::mkfifo(d.path(live::file_name(me, 1)).c_str(), 0600), 0);
  // Garbage, and a file cut short after its magic.
  d.write(live::file_name(me, 2), "not a snapshot at all");
  d.write(live::file_name(me, 3), std::string(reinterpret_cast<const char*>(&live::kMagic), 8));
  std::vector<live::Snapshot> s;
  std::vector<live::Skipped> skipped;
  std::string err;
  ASSERT_TRUE(live::read_snapshots(options(d), &s, &skipped, &err));
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(skipped.size(), 4u);
  for (const live::Skipped& k : skipped) {
    EXPECT_FALSE(k.stale) << k.name;
    EXPECT_FALSE(k.why.empty()) << k.name;
  }
  ::close(real);
}

TEST(LiveRead, AnotherUsersFileIsNeverReadAndTheOwnerDecides) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (files of another user)";
  test::ScratchDir d;
  const uint64_t start = live::process_start_time(::getpid());
  // This root process's file, but owned by uid 65534 (a user planting a file
  // that claims to be root's process): the owner is not the process's.
  const int fd = plant(d.path(), 65534, ::getpid(), start, true);
  ASSERT_GE(fd, 0);
  live::ReadOptions o = options(d);
  std::vector<live::Snapshot> s;
  std::vector<live::Skipped> skipped;
  std::string err;
  ASSERT_TRUE(live::read_snapshots(o, &s, &skipped, &err));
  EXPECT_TRUE(s.empty());
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].why.find("another user"), std::string::npos) << skipped[0].why;
  // As that user: the file is theirs, the process is not.
  o.caller = 65534;
  skipped.clear();
  ASSERT_TRUE(live::read_snapshots(o, &s, &skipped, &err));
  EXPECT_TRUE(s.empty());
  // As another user: not even opened.
  o.caller = 65533;
  skipped.clear();
  ASSERT_TRUE(live::read_snapshots(o, &s, &skipped, &err));
  EXPECT_TRUE(s.empty());
  EXPECT_TRUE(skipped.empty());
  ::close(fd);
}

// ---------------------------------------------------------------------------
// The view, the stalls file and the metrics text.

TEST(LiveView, RatesComeFromTheIntervalAndFiltersSelect) {
  test::ScratchDir d;
  const int fd =
      plant(d.path(), ::geteuid(), ::getpid(), live::process_start_time(::getpid()), true);
  ASSERT_GE(fd, 0);
  // A snapshot published now, so that it is not late.
  Layout lay;
  lay.link_cap = 4;
  lay.cq_cap = 2;
  const uint64_t now = mono_ns();
  ASSERT_EQ(::pwrite(fd, &now, 8, Layout::kBodyOffset + 8 * live::kp_published_mono_ns), 8);
  live::NodeView v;
  std::string err;
  live::GatherOptions o = no_session(d);
  ASSERT_TRUE(live::gather(o, &v, &err)) << err;
  ASSERT_EQ(v.procs.size(), 1u);
  EXPECT_FALSE(v.procs[0].late);
  EXPECT_DOUBLE_EQ(v.procs[0].ops_s, 100.0);
  EXPECT_DOUBLE_EQ(v.procs[0].mb_s, 0.4096);
  EXPECT_EQ(v.procs[0].slowest_p99_ns, 12000u);
  EXPECT_FALSE(v.session);
  o.filter.op = "recv";
  ASSERT_TRUE(live::gather(o, &v, &err));
  ASSERT_EQ(v.procs.size(), 1u);
  EXPECT_TRUE(v.procs[0].links.empty());
  EXPECT_EQ(v.procs[0].ops_s, 0.0);
  o.filter = live::Filter();
  o.filter.rank = "4";
  ASSERT_TRUE(live::gather(o, &v, &err));
  EXPECT_TRUE(v.procs.empty());
  ::close(fd);
}

TEST(LiveStalls, TheFileRoundTripsAndRejectsWhatIsNotOne) {
  live::StallsDoc d;
  d.session_pid = 77;
  live::StallEvent e;
  e.pid = 12;
  e.tid = 13;
  e.rank = "1";
  e.cq = 2;
  e.dur_ns = 1000000000;
  e.cause = "stopped";
  e.why = "stopped (SIGSTOP or a debugger) for 1000.0 of 1000.2 ms";
  d.recent.push_back(e);
  d.counts.push_back({12, "1", "stopped", 1, 0});
  live::StallsDoc back;
  std::string why;
  ASSERT_TRUE(live::stalls_from_json(live::stalls_to_json(d), &back, &why)) << why;
  ASSERT_EQ(back.recent.size(), 1u);
  EXPECT_EQ(back.recent[0].why, e.why);
  EXPECT_EQ(back.recent[0].cq, 2u);
  EXPECT_EQ(back.counts[0].stalls, 1u);
  for (const char* bad : {"", "{}", "[1,2]", "{\"format\":\"fabtrace-live-stalls\",\"version\":2}",
                          "{\"format\":\"fabtrace-live-stalls\",\"version\":1}"})
    EXPECT_FALSE(live::stalls_from_json(bad, &back, &why)) << bad;
  uid_t u = 0;
  EXPECT_TRUE(live::parse_stalls_file_name("stalls.u1000", &u));
  EXPECT_EQ(u, 1000u);
  EXPECT_FALSE(live::parse_stalls_file_name("stalls.u", &u));
  EXPECT_FALSE(live::parse_stalls_file_name("stalls.u01", &u));
  EXPECT_FALSE(live::parse_stalls_file_name("stalls.u1.tmp", &u));
}

// A long stall among a flood of short ones stays in the list for
// kLongestKeptMs, and the newest are always there.
TEST(LiveStalls, ALongStallOutlivesAFloodOfShortOnesForItsTime) {
  std::vector<live::StallEvent> recent;
  live::StallEvent e;
  e.pid = 5;
  e.end_mono_ns = 1000000000;
  e.dur_ns = 1000000000;  // the stop
  live::add_recent(&recent, e);
  const auto has_stop = [&] {
    for (const live::StallEvent& x : recent)
      if (x.dur_ns == 1000000000) return true;
    return false;
  };
  uint64_t t = e.end_mono_ns;
  for (int i = 0; i < 2000; ++i) {  // 10 s of 8 ms preemptions every 5 ms
    live::StallEvent s = e;
    t += 5000000;
    s.end_mono_ns = t;
    s.dur_ns = 8000000 + static_cast<uint64_t>(i % 7);
    live::add_recent(&recent, s);
    ASSERT_LE(recent.size(), live::kRecentStalls);
    ASSERT_EQ(recent.back().end_mono_ns, t);
    ASSERT_TRUE(has_stop()) << i;
  }
  // The newest kNewestKept are the last ones added, in order.
  for (size_t k = 0; k < live::kNewestKept; ++k)
    EXPECT_EQ(recent[recent.size() - 1 - k].end_mono_ns, t - k * 5000000);
  // Past kLongestKeptMs the stop gives way like any other.
  for (int i = 0; i < 6000 && has_stop(); ++i) {
    live::StallEvent s = e;
    t += 5000000;
    s.end_mono_ns = t;
    s.dur_ns = 8000000;
    live::add_recent(&recent, s);
  }
  EXPECT_FALSE(has_stop());
  EXPECT_GT(t - e.end_mono_ns, live::kLongestKeptMs * 1000000ULL);
}

TEST(LiveMetrics, LabelValuesAreEscapedAndPrintable) {
  EXPECT_EQ(live::metric_label_value("a\"b\\c"), "a\\\"b\\\\c");
  EXPECT_EQ(live::metric_label_value("x\ny\xff"), "x?y?");
}

TEST(LiveMetrics, EveryFamilyHasItsHelpAndTypeOnce) {
  test::ScratchDir d;
  const int fd =
      plant(d.path(), ::geteuid(), ::getpid(), live::process_start_time(::getpid()), true);
  ASSERT_GE(fd, 0);
  live::NodeView v;
  std::string err;
  ASSERT_TRUE(live::gather(no_session(d), &v, &err)) << err;
  const std::string t = live::metrics_text(v, 16);
  EXPECT_NE(t.find("# TYPE fabtrace_ops_total counter\n"), std::string::npos);
  EXPECT_NE(t.find("fabtrace_ops_total{jobid=\"\",rank=\"3\",pid=\"" + std::to_string(::getpid()) +
                   "\",local=\"10.0.0.1:1\",remote=\"10.0.0.2:2\",op=\"fi_send\"} 1234\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("fabtrace_op_latency_seconds_count{"), std::string::npos);
  EXPECT_EQ(t.find("fabtrace_stalls_total"), std::string::npos) << "no session, no stall series";
  ::close(fd);
}

}  // namespace
}  // namespace fabtrace
