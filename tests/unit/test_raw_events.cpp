// The kernel log's bound (`fabtrace record --max-size`, `--raw`): which raw
// events the windows around stalls and slow ops keep (raw_windows.h), the
// per-thread sums that every raw event goes into (raw_summaries.h), the
// writer's compaction that drops the oldest raw blocks and nothing else
// (KernelLogWriter::copy_compacted), the sizes the flag takes, and the
// report's loads taken from the sums, not from what raw records are left.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "common/decimal.h"
#include "common/kernel_log.h"
#include "fixtures/kernel_records.h"
#include "tests/unit/scratch_dir.h"
#include "userspace/record/raw_summaries.h"
#include "userspace/record/raw_windows.h"
#include "userspace/report/analysis/kernel_join.h"

namespace fabtrace {
namespace {

using test::Bytes;
using test::bytes_of;
using test::make_hdr;
using test::ScratchDir;

constexpr uint64_t kMs = 1000000;

ft_offcpu offcpu(uint32_t pid, uint32_t tid, uint64_t start, uint64_t end, uint8_t kind = 2,
                 int32_t syscall = 202) {
  ft_offcpu o{};
  o.h = make_hdr(FT_EV_OFFCPU, sizeof(o), end, 0, pid, tid);
  o.start = start;
  o.off_kind = kind;
  o.syscall = syscall;
  return o;
}

ft_irq irq(uint16_t kind, uint32_t pid, uint32_t cpu, uint64_t start, uint64_t end,
           const char* name) {
  ft_irq q{};
  q.h = make_hdr(kind, sizeof(q), end, cpu, pid, pid);
  q.start = start;
  q.irq = 11;
  test::set_str(q.name, name);
  return q;
}

ft_stall stall(uint32_t pid, uint64_t start, uint64_t end) {
  ft_stall s{};
  s.h = make_hdr(FT_EV_STALL, sizeof(s), end, 0, pid, pid);
  s.w.start = start;
  s.w.end = end;
  s.w.on_cpu_ns = end - start;
  return s;
}

// The events a RawWindows writes and gives way, by their end time.
struct Judged {
  std::vector<uint64_t> written, given;
};

void judge(RawWindows* w, uint64_t now, Judged* j) {
  w->release(
      now, [j](const void* d, size_t) { j->written.push_back(static_cast<const ft_hdr*>(d)->ts); },
      [j](const ft_hdr& h) { j->given.push_back(h.ts); });
}

TEST(RawWindows, KeepsTheEventsAroundAWindowOfTheirProcessOnly) {
  RawWindows::Options o;
  o.hold_ns = 2000 * kMs;
  o.margin_ns = 10 * kMs;
  RawWindows w(o);
  const uint64_t t = 100000 * kMs;
  // Process 7's stall over [t, t + 50 ms]; events of 7 and of 8 before,
  // inside, at the margins and past them.
  for (const auto& e : {offcpu(7, 70, t - 30 * kMs, t - 20 * kMs),   // before the margin
                        offcpu(7, 70, t - 15 * kMs, t - 5 * kMs),    // inside the margin
                        offcpu(7, 71, t + 10 * kMs, t + 20 * kMs),   // inside (another thread)
                        offcpu(8, 80, t + 10 * kMs, t + 20 * kMs),   // another process
                        offcpu(7, 70, t - 100 * kMs, t + 1 * kMs)})  // long, overlapping
    w.hold(&e, sizeof(e), t);
  w.keep(7, t, t + 50 * kMs);  // the stall arrives at its end
  // After it: within the margin, and past it.
  for (const auto& e :
       {offcpu(7, 70, t + 55 * kMs, t + 58 * kMs), offcpu(7, 70, t + 70 * kMs, t + 80 * kMs)})
    w.hold(&e, sizeof(e), t + 100 * kMs);
  Judged j;
  judge(&w, t + 1000 * kMs, &j);
  EXPECT_TRUE(j.written.empty() && j.given.empty()) << "judged before their hold";
  judge(&w, UINT64_MAX, &j);
  EXPECT_EQ(j.written,
            (std::vector<uint64_t>{t - 5 * kMs, t + 20 * kMs, t + 1 * kMs, t + 58 * kMs}));
  EXPECT_EQ(j.given, (std::vector<uint64_t>{t - 20 * kMs, t + 20 * kMs, t + 80 * kMs}));
  EXPECT_EQ(w.held_bytes(), 0u);
}

TEST(RawWindows, HoldsEachEventForItsTimeAndNoLonger) {
  RawWindows::Options o;
  o.hold_ns = 2000 * kMs;
  RawWindows w(o);
  const uint64_t t = 100000 * kMs;
  const auto a = offcpu(7, 70, t - 2 * kMs, t - kMs);
  w.hold(&a, sizeof(a), t);
  Judged j;
  judge(&w, t + 1999 * kMs, &j);
  EXPECT_TRUE(j.given.empty());
  judge(&w, t + 2000 * kMs, &j);
  EXPECT_EQ(j.given.size(), 1u);
  // A window that comes later than the hold finds its events gone: given way.
  const auto b = offcpu(7, 70, t + 10 * kMs, t + 11 * kMs);
  w.hold(&b, sizeof(b), t + 2001 * kMs);
  judge(&w, t + 4001 * kMs, &j);
  w.keep(7, t, t + 20 * kMs);
  EXPECT_EQ(j.given.size(), 2u);
  EXPECT_TRUE(j.written.empty());
}

TEST(RawWindows, PastItsMemoryTheOldestAreJudgedEarly) {
  RawWindows::Options o;
  o.max_bytes = 1u << 20;
  RawWindows w(o);
  const uint64_t t = 100000 * kMs;
  w.keep(7, t, t + kMs);
  size_t n = 0;
  for (uint64_t i = 0; i < 20000; ++i, ++n) {
    const auto e = offcpu(7, 70, t, t + kMs / 2);
    w.hold(&e, sizeof(e), t + 2 * kMs);
  }
  Judged j;
  judge(&w, t + 3 * kMs, &j);  // none is due by time
  EXPECT_LE(w.held_bytes(), o.max_bytes);
  EXPECT_EQ(j.written.size() * sizeof(ft_offcpu) + w.held_bytes(), n * sizeof(ft_offcpu));
  EXPECT_TRUE(j.given.empty()) << "judged against the window known then";
}

// Softirqs shorter than min_softirq_ns are not held (the collector counts them,
// and every one is in the sums); longer ones, hard IRQs of any length and other
// kinds are, and are judged as before. 0 holds every softirq.
TEST(RawWindows, ShortSoftirqsAreNotHeld) {
  const uint64_t t = 100000 * kMs;
  const uint64_t us = 1000;
  for (const uint64_t min_ns : {uint64_t{10} * us, uint64_t{0}}) {
    RawWindows::Options o;
    o.min_softirq_ns = min_ns;
    RawWindows w(o);
    w.keep(7, t, t + kMs);
    const auto short_soft = irq(FT_EV_SOFTIRQ, 7, 0, t + 10 * us, t + 12 * us, "");
    const auto edge_soft = irq(FT_EV_SOFTIRQ, 7, 0, t + 20 * us, t + 30 * us, "");
    const auto short_hard = irq(FT_EV_IRQ, 7, 0, t + 40 * us, t + 41 * us, "eth0");
    const auto off = offcpu(7, 7, t + 50 * us, t + 51 * us);
    EXPECT_EQ(w.hold(&short_soft, sizeof(short_soft), t), min_ns == 0);
    EXPECT_TRUE(w.hold(&edge_soft, sizeof(edge_soft), t)) << "10 us is not shorter than 10 us";
    EXPECT_TRUE(w.hold(&short_hard, sizeof(short_hard), t));
    EXPECT_TRUE(w.hold(&off, sizeof(off), t));
    Judged j;
    judge(&w, UINT64_MAX, &j);
    std::vector<uint64_t> written = {t + 30 * us, t + 41 * us, t + 51 * us};
    if (min_ns == 0) written.insert(written.begin(), t + 12 * us);
    EXPECT_EQ(j.written, written);
    EXPECT_TRUE(j.given.empty());
  }
}

TEST(RawWindows, EventsOfNoProcessGoWithAnyWindowAndWindowsAreForgotten) {
  RawWindows::Options o;
  o.forget_ns = 60000 * kMs;
  RawWindows w(o);
  const uint64_t t = 100000 * kMs;
  w.keep(7, t, t + kMs);
  EXPECT_TRUE(w.inside(0, t, t + kMs));  // a cxi work item (pid 0)
  EXPECT_TRUE(w.inside(7, t + kMs / 2, t + kMs / 2));
  EXPECT_FALSE(w.inside(8, t, t + kMs));
  // Windows merge: two overlapping ones are one interval.
  w.keep(7, t + kMs / 2, t + 2 * kMs);
  EXPECT_TRUE(w.inside(7, t + 2 * kMs, t + 2 * kMs));
  Judged j;
  judge(&w, t + 2 * kMs + o.forget_ns + 100 * kMs, &j);  // forget() runs
  EXPECT_FALSE(w.inside(7, t, t + 2 * kMs));
  EXPECT_FALSE(w.inside(0, t, t + 2 * kMs));
  EXPECT_EQ(w.windows(), 0u);
}

TEST(RawSummaries, EveryEventIsSummedPerThreadAndCauseAndDrainedAsDeltas) {
  RawSummaries s;
  const uint64_t t = 100000 * kMs;
  const auto a = offcpu(7, 70, t, t + 3 * kMs, FT_OFF_SLEEP, 202);
  const auto b = offcpu(7, 70, t + 5 * kMs, t + 6 * kMs, FT_OFF_SLEEP, 202);
  const auto c = offcpu(7, 71, t, t + 2 * kMs, FT_OFF_PREEMPTED, -1);
  const auto q1 = irq(FT_EV_IRQ, 7, 1, t, t + 10000, "virtio0-input.0");
  auto q2 = irq(FT_EV_IRQ, 7, 1, t + kMs, t + kMs + 30000, "virtio0-input.0");
  q2.name[sizeof(q2.name) - 1] = 'x';  // a stale byte after the name's end: the same key
  q2.name[sizeof(q2.name) - 2] = 0;
  ft_faults f{};
  f.h = make_hdr(FT_EV_FAULTS, sizeof(f), t, 0, 7, 70);
  f.count = 4096;
  for (const Bytes& r : {bytes_of(a), bytes_of(b), bytes_of(c), bytes_of(q1), bytes_of(q2),
                         bytes_of(f), bytes_of(f)}) {
    ft_hdr h;
    std::memcpy(&h, r.data(), sizeof(h));
    s.add(h, r.data());
  }
  std::vector<ft_summary> out;
  s.drain(t + kMs, [&](const ft_summary& r) { out.push_back(r); });
  ASSERT_EQ(out.size(), 4u);
  std::map<std::pair<uint32_t, uint16_t>, ft_summary> by;
  for (const ft_summary& r : out) {
    EXPECT_EQ(r.h.kind, FT_EV_SUMMARY);
    EXPECT_EQ(r.h.size, sizeof(ft_summary));
    EXPECT_EQ(r.h.ts, t + kMs);
    by[{r.h.tid, r.of}] = r;
  }
  const ft_summary& sl = by.at({70, FT_EV_OFFCPU});
  EXPECT_EQ(sl.count, 2u);
  EXPECT_EQ(sl.ns, 4 * kMs);
  EXPECT_EQ(sl.code, 202);
  EXPECT_EQ(sl.off_kind, FT_OFF_SLEEP);
  EXPECT_EQ(by.at({71, FT_EV_OFFCPU}).ns, 2 * kMs);
  const ft_summary& ir = by.at({7, FT_EV_IRQ});
  EXPECT_EQ(ir.count, 2u);
  EXPECT_EQ(ir.ns, 40000u);
  EXPECT_EQ(ir.h.cpu, 1u);
  EXPECT_STREQ(ir.name, "virtio0-input.0");
  EXPECT_EQ(by.at({70, FT_EV_FAULTS}).faults, 8192u);
  // Drained: the next drain has only what came since.
  s.add(a.h, reinterpret_cast<const uint8_t*>(&a));
  out.clear();
  s.drain(t + 2 * kMs, [&](const ft_summary& r) { out.push_back(r); });
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].count, 1u);
  EXPECT_EQ(out[0].ns, 3 * kMs);
}

// The short softirqs the kernel summed (bpf/irq.bpf.c) join the sums of the
// softirqs it sent, under one key: thread, CPU and vector.
TEST(RawSummaries, SoftirqsSummedInTheKernelJoinTheSentOnesKey) {
  RawSummaries s;
  const uint64_t t = 100000 * kMs;
  const auto sent = irq(FT_EV_SOFTIRQ, 7, 1, t, t + 15000, "");
  s.add(sent.h, reinterpret_cast<const uint8_t*>(&sent));
  s.add_softirqs(7, 7, 1, sent.irq, 1000, 2000000);
  s.add_softirqs(7, 7, 0, sent.irq, 5, 9000);  // another CPU: another key
  std::vector<ft_summary> out;
  s.drain(t + kMs, [&](const ft_summary& r) { out.push_back(r); });
  ASSERT_EQ(out.size(), 2u);
  std::map<uint32_t, ft_summary> by_cpu;
  for (const ft_summary& r : out) by_cpu[r.h.cpu] = r;
  EXPECT_EQ(by_cpu.at(1).of, FT_EV_SOFTIRQ);
  EXPECT_EQ(by_cpu.at(1).code, static_cast<int32_t>(sent.irq));
  EXPECT_EQ(by_cpu.at(1).count, 1001u);
  EXPECT_EQ(by_cpu.at(1).ns, 2015000u);
  EXPECT_EQ(by_cpu.at(0).count, 5u);
  EXPECT_EQ(by_cpu.at(0).ns, 9000u);
}

TEST(RawSummaries, TheCollectorsOwnPreemptionsAreCounted) {
  RawSummaries s;
  s.set_self({555, 556});
  const uint64_t t = 100000 * kMs;
  auto took = offcpu(7, 70, t, t + kMs, FT_OFF_PREEMPTED, -1);
  took.out_pid = 556;  // it took the CPU
  auto held = offcpu(7, 70, t + 2 * kMs, t + 3 * kMs, FT_OFF_SLEEP, 202);
  held.ran_pid = 555;  // it held the CPU longest while the thread waited
  held.ran_ns = 400000;
  auto other = offcpu(7, 70, t + 4 * kMs, t + 5 * kMs, FT_OFF_PREEMPTED, -1);
  other.out_pid = 9999;
  auto slept = offcpu(7, 70, t + 6 * kMs, t + 7 * kMs, FT_OFF_SLEEP, 202);
  slept.out_pid = 555;  // asleep: the collector ran next, it took nothing
  for (const auto& e : {took, held, other, slept}) s.add(e.h, reinterpret_cast<const uint8_t*>(&e));
  EXPECT_EQ(s.self_count(), 2u);
  EXPECT_EQ(s.self_ns(), 400000u);
  uint64_t count = 0, ns = 0;
  s.drain(t, [&](const ft_summary& r) {
    count += r.self_count;
    ns += r.self_ns;
  });
  EXPECT_EQ(count, 2u);
  EXPECT_EQ(ns, 400000u);
}

TEST(RawSummaries, PastItsKeysNewOnesAreSummedUnderTheirKind) {
  RawSummaries s(4);
  const uint64_t t = 100000 * kMs;
  for (uint32_t tid = 1; tid <= 10; ++tid) {
    const auto e = offcpu(7, tid, t, t + kMs);
    s.add(e.h, reinterpret_cast<const uint8_t*>(&e));
  }
  EXPECT_EQ(s.folded(), 6u);
  uint64_t count = 0, ns = 0;
  size_t rows = 0;
  s.drain(t, [&](const ft_summary& r) {
    count += r.count;
    ns += r.ns;
    ++rows;
  });
  EXPECT_EQ(rows, 5u);
  EXPECT_EQ(count, 10u) << "every event summed";
  EXPECT_EQ(ns, 10 * kMs);
}

// A log written through the writer: kept records, raw records in blocks of
// their own, one compaction.
TEST(KernelLogCompaction, DropsTheOldestRawBlocksOnlyAndCountsThem) {
  ScratchDir dir;
  const std::string path = dir.path("k.klog");
  KernelLogWriter w;
  ASSERT_TRUE(w.create(path, test::sample_meta())) << w.error();
  const uint64_t t = 100000 * kMs;
  std::vector<Bytes> kept;
  size_t raw_written = 0;
  // Ten rounds: a stall (kept), 1000 raw off-CPU intervals and 500 IRQs (raw),
  // flushed as the collector does.
  for (uint64_t r = 0; r < 10; ++r) {
    const auto s = stall(7, t + r * 1000 * kMs, t + r * 1000 * kMs + 5 * kMs);
    ASSERT_TRUE(w.append(&s, sizeof(s)));
    kept.push_back(bytes_of(s));
    for (uint64_t i = 0; i < 1000; ++i) {
      const auto o = offcpu(7, 70, t + r * 1000 * kMs + i, t + r * 1000 * kMs + i + 1);
      ASSERT_TRUE(w.append_raw(&o, sizeof(o)));
      if (i % 2 == 0) {
        const auto q =
            irq(FT_EV_IRQ, 7, 0, t + r * 1000 * kMs + i, t + r * 1000 * kMs + i + 1, "eth0");
        ASSERT_TRUE(w.append_raw(&q, sizeof(q)));
        ++raw_written;
      }
      ++raw_written;
    }
    ASSERT_TRUE(w.flush());
  }
  ASSERT_TRUE(w.write_tasks({{7, 70, "app", "0", "/bin/app", true}}));
  const uint64_t before = w.bytes_written();
  const uint64_t raw_before = w.raw_bytes();
  EXPECT_EQ(w.records(), kept.size() + raw_written);
  // Room for about half of the raw blocks.
  const uint64_t target = before - raw_before / 2;
  const std::string tmp = dir.path("k.klog.compact");
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  ASSERT_GE(fd, 0);
  KernelLogWriter::Compaction c;
  std::string err;
  ASSERT_TRUE(w.copy_compacted(fd, target, &c, &err)) << err;
  ASSERT_EQ(::rename(tmp.c_str(), path.c_str()), 0);
  w.adopt(fd, c);
  EXPECT_LE(w.bytes_written(), target);
  EXPECT_EQ(w.bytes_written(), c.bytes);
  EXPECT_EQ(c.blocks_dropped, 5u);
  EXPECT_EQ(c.evicted[FT_EV_OFFCPU], 5000u);
  EXPECT_EQ(c.evicted[FT_EV_IRQ], 2500u);
  EXPECT_EQ(w.records(), kept.size() + raw_written - 7500);
  // The writer goes on in the new file.
  const auto late = stall(7, t + 20000 * kMs, t + 20001 * kMs);
  ASSERT_TRUE(w.append(&late, sizeof(late)));
  kept.push_back(bytes_of(late));
  ASSERT_TRUE(w.write_end(1));
  ASSERT_TRUE(w.close()) << w.error();

  KernelLogReader r;
  ASSERT_TRUE(r.open(path, &err)) << err;
  std::vector<Bytes> stalls;
  std::vector<uint64_t> raw_ts;
  ASSERT_TRUE(r.read_all(
      [&](const ft_hdr& h, const uint8_t* rec) {
        if (h.kind == FT_EV_STALL)
          stalls.emplace_back(rec, rec + h.size);
        else
          raw_ts.push_back(h.ts);
      },
      &err));
  EXPECT_FALSE(r.truncated()) << r.truncation();
  EXPECT_EQ(r.bad_records(), 0u);
  EXPECT_EQ(stalls, kept) << "every kept record, in order";
  ASSERT_EQ(raw_ts.size(), raw_written - 7500);
  // The newest half: rounds 5 to 9.
  EXPECT_EQ(*std::min_element(raw_ts.begin(), raw_ts.end()), t + 5000 * kMs + 1);
  EXPECT_EQ(r.tasks().size(), 1u);
  EXPECT_TRUE(r.has_end());
  EXPECT_EQ(r.end_records(), r.records_read());
}

TEST(KernelLogCompaction, WithoutRawBlocksNothingGoes) {
  ScratchDir dir;
  KernelLogWriter w;
  ASSERT_TRUE(w.create(dir.path("k.klog"), test::sample_meta()));
  const auto s = stall(7, 1000, 2000);
  ASSERT_TRUE(w.append(&s, sizeof(s)));
  const int fd = ::open(dir.path("c").c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  KernelLogWriter::Compaction c;
  std::string err;
  ASSERT_TRUE(w.copy_compacted(fd, 0, &c, &err)) << err;
  EXPECT_EQ(c.blocks_dropped, 0u);
  EXPECT_EQ(c.bytes, w.bytes_written());
  ::close(fd);
}

TEST(ByteSize, TheFlagsSizesAndTheirText) {
  uint64_t v = 0;
  EXPECT_TRUE(parse_byte_size("4096", &v) && v == 4096u);
  EXPECT_TRUE(parse_byte_size("512M", &v) && v == 512ULL << 20);
  EXPECT_TRUE(parse_byte_size("1GiB", &v) && v == 1ULL << 30);
  EXPECT_TRUE(parse_byte_size("2GB", &v) && v == 2ULL << 30);
  EXPECT_TRUE(parse_byte_size("1T", &v) && v == 1ULL << 40);
  for (const char* bad : {"", "G", "1.5G", "-1G", "1 G", "1g", "1Gi", "99999999999T", "0x10"})
    EXPECT_FALSE(parse_byte_size(bad, &v)) << bad;
  EXPECT_EQ(byte_size_text(1ULL << 30), "1 GiB");
  EXPECT_EQ(byte_size_text(3ULL << 29), "1.5 GiB");
  EXPECT_EQ(byte_size_text(4097), "4.0 KiB");
  EXPECT_EQ(byte_size_text(100), "100 B");
}

// The report's loads of a log with sums come from the sums: a raw record left
// in the log is not counted twice, and the ones given way count.
TEST(KernelJoinSummaries, LoadsComeFromTheSumsNotFromTheRawRecordsLeft) {
  ScratchDir dir;
  const std::string path = dir.path("fabtrace_kernel.h.p1.klog");
  KernelLogMeta m = test::sample_meta();
  m.options[kernel_log::kSummaryOption] = "1";
  KernelLogWriter w;
  ASSERT_TRUE(w.create(path, m));
  const uint64_t t = 100000 * kMs;
  // Three IRQs on CPU 1, one left in the log; one off-CPU interval left of two.
  const auto q = irq(FT_EV_IRQ, 7, 1, t, t + 1000, "eth0");
  ASSERT_TRUE(w.append_raw(&q, sizeof(q)));
  const auto o = offcpu(7, 70, t, t + kMs, FT_OFF_SLEEP, 202);
  ASSERT_TRUE(w.append_raw(&o, sizeof(o)));
  RawSummaries s;
  s.set_self({555});
  for (int i = 0; i < 3; ++i) s.add(q.h, reinterpret_cast<const uint8_t*>(&q));
  auto o2 = o;
  o2.ran_pid = 555;
  o2.ran_ns = 300;
  s.add(o.h, reinterpret_cast<const uint8_t*>(&o));
  s.add(o2.h, reinterpret_cast<const uint8_t*>(&o2));
  s.drain(t + 2 * kMs, [&](const ft_summary& r) { ASSERT_TRUE(w.append(&r, sizeof(r))); });
  KernelStats st;
  st.given_way[FT_EV_IRQ] = 2;
  st.given_way[FT_EV_OFFCPU] = 1;
  st.collector_cpu_ns = 5 * kMs;
  st.collector_wall_ns = 1000 * kMs;
  st.collector_events = 6;
  st.collector_sched = "SCHED_BATCH, nice 19";
  ASSERT_TRUE(w.write_stats(st));
  ASSERT_TRUE(w.write_end(1));
  ASSERT_TRUE(w.close());
  report::KernelNode n;
  std::string why;
  ASSERT_TRUE(report::load_kernel_node(path, &n, &why)) << why;
  EXPECT_TRUE(n.summed);
  ASSERT_EQ(n.irq_per_cpu.count(1u), 1u);
  EXPECT_EQ(n.irq_per_cpu.at(1u).count, 3u);
  EXPECT_EQ(n.irq_per_cpu.at(1u).ns, 3000u);
  EXPECT_EQ(n.irq_by_name.at("eth0").count, 3u);
  uint64_t off = 0;
  for (const auto& kv : n.offcpu_by_cause) off += kv.second.count;
  EXPECT_EQ(off, 2u);
  EXPECT_EQ(n.collector_took, 1u);
  EXPECT_EQ(n.collector_held_ns, 300u);
  EXPECT_EQ(n.stats.given_way[FT_EV_IRQ], 2u);
  EXPECT_EQ(n.stats.collector_cpu_ns, 5 * kMs);
  EXPECT_EQ(n.stats.collector_sched, "SCHED_BATCH, nice 19");
}

}  // namespace
}  // namespace fabtrace
