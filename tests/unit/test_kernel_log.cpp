// The kernel log (common/kernel_log.*) on the block framing (common/block_file.*):
// round trip of every record kind and block, truncation at every byte, single-bit
// corruption, malformed and unknown records, hostile files, and the writer's
// refusal to write over or through anything planted at its name.
#include "common/input_limits.h"
#include "common/kernel_log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fixtures/kernel_records.h"
#include "tests/unit/scratch_dir.h"

namespace fabtrace {
namespace {

using test::Bytes;
using test::patterned_record;
using test::read_file_bytes;
using test::ScratchDir;

// What a reader made of a file.
struct ReadResult {
  bool opened = false, walked = false;
  std::string error;
  std::vector<Bytes> records;
};

ReadResult read_log(const std::string& path, KernelLogReader* r) {
  ReadResult out;
  out.opened = r->open(path, &out.error);
  if (!out.opened) return out;
  out.walked = r->read_all(
      [&](const ft_hdr& h, const uint8_t* rec) { out.records.emplace_back(rec, rec + h.size); },
      &out.error);
  return out;
}

// Reads the whole log at `path` into r, expecting it to open and walk to its
// end, and returns the records the walk handed over, in file order.
std::vector<Bytes> walked_records(const std::string& path, KernelLogReader* r) {
  const ReadResult got = read_log(path, r);
  EXPECT_TRUE(got.opened && got.walked) << got.error;
  return got.records;
}

// One line, naming the file.
void expect_one_message(const std::string& error, const std::string& path) {
  EXPECT_EQ(error.rfind(path + ": ", 0), 0u) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

// A log with every kind of block: meta, events in three blocks (every kind, in
// varying order), tasks, symbols, two stats blocks and the end. `ends` gets the
// file offset where each block ends, `records` the records in file order, and
// `records_before[i]` how many records the blocks up to ends[i] hold.
struct Written {
  std::vector<uint64_t> ends;
  std::vector<size_t> records_before;
  std::vector<Bytes> records;
  std::vector<KernelTask> tasks;
  std::vector<KernelSymbol> symbols;
  KernelStats stats;
  uint64_t file_size = 0;
};

// Indexes of Written::ends.
enum : size_t { kMetaEnd, kEventsA, kTasksEnd, kEventsB, kSymbolsEnd, kStats1, kEventsC, kStats2 };

// The stats' whole-log counters that sample_stats sets to base + their number
// (each a value of its own), and that a read-back is checked against.
constexpr std::pair<uint64_t KernelStats::*, uint64_t> kNumberedCounts[] = {
    {&KernelStats::untraced_retrans, 1},   {&KernelStats::untraced_drops, 2},
    {&KernelStats::threads_full, 3},       {&KernelStats::recursion_misses, 4},
    {&KernelStats::in_without_out, 5},     {&KernelStats::in_unseen, 6},
    {&KernelStats::threads_over_share, 7},
};

KernelStats sample_stats(uint64_t base) {
  KernelStats s;
  for (uint16_t k = 1; k < FT_EV_KINDS; ++k) {
    s.emitted[k] = base + 100u * k;
    s.lost[k] = k % 3 ? base + k : 0;
    s.given_way[k] = kernel_log::is_raw(k) ? base + 200u * k : 0;
    s.evicted[k] = kernel_log::is_raw(k) ? base + 300u * k : 0;
  }
  s.over_size = base + 8;
  s.collector_cpu_ns = base + 9;
  s.collector_events = base + 10;
  s.collector_wall_ns = base + 11;
  s.collector_sched = "SCHED_BATCH, nice 19";
  for (const auto& c : kNumberedCounts) s.*c.first = base + c.second;
  // Each per-process count a value of its own.
  uint64_t v = base + 10;
#define FT_X(name, what) s.per_process[4242].name = v++;
  FT_KERNEL_PROCESS_COUNTS(FT_X)
#undef FT_X
  return s;
}

Written write_full_log(const std::string& path) {
  Written w;
  KernelLogWriter lw;
  EXPECT_TRUE(lw.create(path, test::sample_meta())) << lw.error();
  auto mark = [&] {
    w.ends.push_back(lw.bytes_written());
    w.records_before.push_back(w.records.size());
  };
  auto add = [&](const Bytes& rec) {
    EXPECT_TRUE(lw.append(rec.data(), rec.size())) << lw.error();
    w.records.push_back(rec);
  };
  mark();
  add(patterned_record(FT_EV_STALL, 1));
  add(patterned_record(FT_EV_OFFCPU, 2));
  add(patterned_record(FT_EV_POLL, 3));
  EXPECT_TRUE(lw.flush());
  mark();
  w.tasks = {{4100, 4100, "app", "0", "/usr/bin/app", true},
             {4100, 4107, "app-poll", "0", "/usr/bin/app", true},
             {4200, 4200, "fi_server", "", "/opt/x/fi_server", false}};
  EXPECT_TRUE(lw.write_tasks(w.tasks));
  mark();
  uint8_t seed = 10;
  for (uint16_t k = FT_EV_KINDS - 1; k >= 1; --k) add(patterned_record(k, seed++));
  EXPECT_TRUE(lw.flush());
  mark();
  w.symbols = {{0xffffffffc0a01230ULL, "error_irq_worker", "error"},
               {0xffffffffc0a04560ULL, "cass_pri_worker", "page-request"},
               {2, "NO_SOCKET", "drop_reason"}};
  EXPECT_TRUE(lw.write_symbols(w.symbols));
  mark();
  EXPECT_TRUE(lw.write_stats(sample_stats(7)));
  mark();
  for (uint16_t k : test::known_kinds()) add(patterned_record(k, seed++));
  EXPECT_TRUE(lw.flush());
  mark();
  w.stats = sample_stats(1000);
  EXPECT_TRUE(lw.write_stats(w.stats));
  mark();
  EXPECT_TRUE(lw.write_end(5000000000ULL));
  mark();
  lw.close();
  w.file_size = lw.bytes_written();
  return w;
}

// How many records the whole blocks within the first `bytes` bytes hold, and
// where the last of those blocks ends.
size_t records_within(const Written& w, uint64_t bytes, uint64_t* last_end) {
  size_t i = 0;
  while (i + 1 < w.ends.size() && w.ends[i + 1] <= bytes) ++i;
  *last_end = w.ends[i];
  return w.records_before[i];
}

// The block boundaries of a file, found by walking the framing by hand.
std::vector<uint64_t> block_ends(const std::string& bytes) {
  std::vector<uint64_t> ends;
  uint64_t off = sizeof(blockfile::FileHeader);
  while (off + sizeof(blockfile::BlockHeader) <= bytes.size()) {
    blockfile::BlockHeader h;
    std::memcpy(&h, bytes.data() + off, sizeof(h));
    off += sizeof(h) + h.payload_bytes;
    ends.push_back(off);
  }
  return ends;
}

// The bytes of a full log written in dir (write_full_log), whose blocks end
// where the writer said they do.
std::string written_full_log(ScratchDir* dir, Written* w) {
  const std::string path = dir->path("full.klog");
  *w = write_full_log(path);
  std::string full = read_file_bytes(path);
  EXPECT_EQ(block_ends(full), w->ends);
  return full;
}

TEST(KernelLog, RoundTripEveryKindByteExact) {
  ScratchDir dir;
  const std::string path = dir.path("a.klog");
  const Written w = write_full_log(path);
  ASSERT_EQ(w.file_size, read_file_bytes(path).size());

  KernelLogReader r;
  const ReadResult got = read_log(path, &r);
  ASSERT_TRUE(got.opened) << got.error;
  ASSERT_TRUE(got.walked) << got.error;
  EXPECT_EQ(got.records, w.records);
  std::set<uint16_t> kinds;
  for (const Bytes& b : got.records) {
    ft_hdr h;
    std::memcpy(&h, b.data(), sizeof(h));
    kinds.insert(h.kind);
  }
  EXPECT_EQ(kinds.size(), static_cast<size_t>(FT_EV_KINDS - 1));
  EXPECT_EQ(r.records_read(), w.records.size());
  EXPECT_EQ(r.bad_records(), 0u);
  EXPECT_EQ(r.unknown_records(), 0u);
  EXPECT_FALSE(r.truncated()) << r.truncation();

  const KernelLogMeta want = test::sample_meta();
  const KernelLogMeta& m = r.meta();
  EXPECT_EQ(m.host, want.host);
  EXPECT_EQ(m.kernel, want.kernel);
  EXPECT_EQ(m.boot_id, want.boot_id);
  EXPECT_EQ(m.command, want.command);
  EXPECT_EQ(m.pid, want.pid);
  EXPECT_EQ(m.mono_ns, want.mono_ns);
  EXPECT_EQ(m.real_ns, want.real_ns);
  EXPECT_EQ(m.record_version, static_cast<uint32_t>(FT_RECORD_VERSION));
  EXPECT_EQ(m.options, want.options);
  ASSERT_EQ(m.attach.size(), want.attach.size());
  for (size_t i = 0; i < want.attach.size(); ++i) {
    EXPECT_EQ(m.attach[i].program, want.attach[i].program);
    EXPECT_EQ(m.attach[i].point, want.attach[i].point);
    EXPECT_EQ(m.attach[i].state, want.attach[i].state);
    EXPECT_EQ(m.attach[i].detail, want.attach[i].detail);
  }

  ASSERT_EQ(r.tasks().size(), w.tasks.size());
  for (size_t i = 0; i < w.tasks.size(); ++i) {
    EXPECT_EQ(r.tasks()[i].pid, w.tasks[i].pid);
    EXPECT_EQ(r.tasks()[i].tid, w.tasks[i].tid);
    EXPECT_EQ(r.tasks()[i].comm, w.tasks[i].comm);
    EXPECT_EQ(r.tasks()[i].rank, w.tasks[i].rank);
    EXPECT_EQ(r.tasks()[i].exe, w.tasks[i].exe);
    EXPECT_EQ(r.tasks()[i].preload, w.tasks[i].preload);
  }
  ASSERT_EQ(r.symbols().size(), w.symbols.size());
  for (size_t i = 0; i < w.symbols.size(); ++i) {
    EXPECT_EQ(r.symbols()[i].addr, w.symbols[i].addr);
    EXPECT_EQ(r.symbols()[i].name, w.symbols[i].name);
    EXPECT_EQ(r.symbols()[i].cls, w.symbols[i].cls);
  }
  // The last stats block wins.
  ASSERT_TRUE(r.has_stats());
  const KernelStats& s = r.stats();
  for (uint16_t k = 1; k < FT_EV_KINDS; ++k) {
    EXPECT_EQ(s.emitted[k], w.stats.emitted[k]) << k;
    EXPECT_EQ(s.lost[k], w.stats.lost[k]) << k;
    EXPECT_EQ(s.given_way[k], w.stats.given_way[k]) << k;
    EXPECT_EQ(s.evicted[k], w.stats.evicted[k]) << k;
  }
  EXPECT_EQ(s.over_size, w.stats.over_size);
  EXPECT_EQ(s.collector_cpu_ns, w.stats.collector_cpu_ns);
  EXPECT_EQ(s.collector_events, w.stats.collector_events);
  EXPECT_EQ(s.collector_wall_ns, w.stats.collector_wall_ns);
  EXPECT_EQ(s.collector_sched, "SCHED_BATCH, nice 19");
  for (const auto& c : kNumberedCounts) EXPECT_EQ(s.*c.first, 1000 + c.second) << c.second;
  ASSERT_EQ(s.per_process.count(4242), 1u);
  uint64_t v = 1010;
#define FT_X(name, what) EXPECT_EQ(s.per_process.at(4242).name, v++) << #name;
  FT_KERNEL_PROCESS_COUNTS(FT_X)
#undef FT_X
  EXPECT_EQ(s.lost_total(), w.stats.lost_total());
  ASSERT_TRUE(r.has_end());
  EXPECT_EQ(r.end_records(), w.records.size());
  EXPECT_EQ(r.end_duration_ns(), 5000000000ULL);
}

TEST(KernelLog, RecordSizesAndNames) {
  EXPECT_EQ(kernel_log::record_size(FT_EV_OFFCPU), sizeof(ft_offcpu));
  EXPECT_EQ(kernel_log::record_size(FT_EV_SOFTIRQ), sizeof(ft_irq));
  EXPECT_EQ(kernel_log::record_size(FT_EV_DROP), sizeof(ft_net));
  EXPECT_EQ(kernel_log::record_size(FT_EV_OP_ERROR), sizeof(ft_op));
  EXPECT_EQ(kernel_log::record_size(FT_EV_EXIT), sizeof(ft_exit));
  EXPECT_EQ(kernel_log::record_size(0), 0u);
  EXPECT_EQ(kernel_log::record_size(FT_EV_KINDS), 0u);
  for (uint16_t k : test::known_kinds()) {
    EXPECT_EQ(kernel_log::record_size(k) % 8, 0u) << k;
    EXPECT_EQ(kernel_log::kind_name(k).rfind("kind", 0), std::string::npos) << k;
  }
  EXPECT_EQ(kernel_log::record_size(FT_EV_SUMMARY), sizeof(ft_summary));
  EXPECT_EQ(kernel_log::kind_name(FT_EV_SUMMARY), "summary");
  // What gives way to the log's bound, and what is always kept.
  for (uint16_t k : {FT_EV_OFFCPU, FT_EV_IRQ, FT_EV_SOFTIRQ, FT_EV_FAULTS, FT_EV_WORK, FT_EV_POLL})
    EXPECT_TRUE(kernel_log::is_raw(k)) << k;
  for (uint16_t k :
       {FT_EV_RETRANS, FT_EV_DROP, FT_EV_CXI_ERR, FT_EV_THREAD, FT_EV_STALL, FT_EV_SLOW_OP,
        FT_EV_OP_ERROR, FT_EV_EXIT, FT_EV_MARK, FT_EV_UPROBE_OPS, FT_EV_UPROBE_CQ, FT_EV_SUMMARY})
    EXPECT_FALSE(kernel_log::is_raw(k)) << k;
  EXPECT_TRUE(kernel_log::around_windows(FT_EV_OFFCPU));
  EXPECT_FALSE(kernel_log::around_windows(FT_EV_POLL)) << "--polls asks for every poll";
  EXPECT_EQ(kernel_log::kind_name(FT_EV_WORK), "cxi_work");
  EXPECT_EQ(kernel_log::kind_name(FT_EV_RETRANS), "retransmit");
  EXPECT_EQ(kernel_log::kind_name(0), "kind0");
  EXPECT_EQ(kernel_log::kind_name(99), "kind99");
  EXPECT_STREQ(kernel_log::off_kind_name(FT_OFF_STOPPED), "stopped");
  EXPECT_STREQ(kernel_log::off_kind_name(0), "other");
}

TEST(KernelLog, ManyRecordsAreCutIntoBlocks) {
  ScratchDir dir;
  const std::string path = dir.path("big.klog");
  KernelLogWriter w;
  ASSERT_TRUE(w.create(path, test::sample_meta()));
  const size_t n = kernel_log::kEventsBlockBytes / sizeof(ft_poll) * 2 + 17;
  for (size_t i = 0; i < n; ++i) {
    ft_poll p{};
    p.h = test::make_hdr(FT_EV_POLL, sizeof(p), 1000 + i, 0, 1, 2);
    p.cq = i;
    ASSERT_TRUE(w.append(&p, sizeof(p)));
  }
  ASSERT_TRUE(w.write_end(1));
  w.close();
  // Two full blocks went out without a flush, the rest with the end.
  const std::string bytes = read_file_bytes(path);
  EXPECT_EQ(block_ends(bytes).size(), 5u);  // meta, 2 + 1 events, end

  KernelLogReader r;
  uint64_t next = 0;
  bool in_order = true;
  std::string err;
  ASSERT_TRUE(r.open(path, &err)) << err;
  ASSERT_TRUE(r.read_all(
      [&](const ft_hdr& h, const uint8_t* rec) {
        ft_poll p;
        std::memcpy(&p, rec, sizeof(p));
        in_order = in_order && h.kind == FT_EV_POLL && p.cq == next && h.ts == 1000 + next;
        ++next;
      },
      &err));
  EXPECT_TRUE(in_order);
  EXPECT_EQ(next, n);
  EXPECT_EQ(r.end_records(), n);
  EXPECT_FALSE(r.truncated());
}

TEST(KernelLog, LongAndInvalidStringsInJsonBlocks) {
  ScratchDir dir;
  const std::string path = dir.path("s.klog");
  KernelLogMeta m = test::sample_meta();
  m.command = std::string(limits::kMaxStringBytes + 900, 'c');
  m.host = "node\xff\xfe";  // not UTF-8
  KernelLogWriter w;
  ASSERT_TRUE(w.create(path, m)) << w.error();
  ASSERT_TRUE(w.write_tasks({{1, 2, "bad\xc3", "r", "/x", false}}));
  w.close();

  KernelLogReader r;
  const ReadResult got = read_log(path, &r);
  ASSERT_TRUE(got.opened) << got.error;
  EXPECT_EQ(r.meta().command, std::string(limits::kMaxStringBytes, 'c'));
  EXPECT_EQ(r.meta().host.rfind("node", 0), 0u);
  EXPECT_NE(r.meta().host, "node");  // the invalid bytes became replacement characters
  ASSERT_EQ(r.tasks().size(), 1u);
  EXPECT_EQ(r.tasks()[0].comm.rfind("bad", 0), 0u);
  EXPECT_FALSE(r.has_end());
  EXPECT_FALSE(r.has_stats());
}

// A file cut at every byte: below the meta block it is refused; from there on it
// reads exactly the records of the whole blocks before the cut, and says it was
// truncated unless the cut falls on a block boundary.
TEST(KernelLog, CutAtEveryByte) {
  ScratchDir dir;
  Written w;
  const std::string full = written_full_log(&dir, &w);
  ASSERT_FALSE(HasFailure());
  const std::set<uint64_t> boundaries(w.ends.begin(), w.ends.end());

  // The file grows by a byte a step (appended: rewriting it would make some file
  // systems flush it at every close).
  const std::string cut_path = dir.write("cut.klog", "");
  const int fd = ::open(cut_path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  for (size_t cut = 0; cut < full.size(); ++cut) {
    if (cut > 0) {
      ASSERT_EQ(::write(fd, &full[cut - 1], 1), 1);
    }
    KernelLogReader r;
    const ReadResult got = read_log(cut_path, &r);
    if (cut < w.ends[kMetaEnd]) {
      ASSERT_FALSE(got.opened) << cut;
      expect_one_message(got.error, cut_path);
      continue;
    }
    ASSERT_TRUE(got.opened) << cut << ": " << got.error;
    ASSERT_TRUE(got.walked) << cut << ": " << got.error;
    uint64_t last_end = 0;
    const size_t want = records_within(w, cut, &last_end);
    ASSERT_EQ(got.records, std::vector<Bytes>(w.records.begin(), w.records.begin() + want)) << cut;
    EXPECT_EQ(r.records_read(), want) << cut;
    EXPECT_EQ(r.truncated(), boundaries.count(cut) == 0) << cut;
    if (r.truncated()) {
      EXPECT_NE(r.truncation().find("at byte " + std::to_string(last_end)), std::string::npos)
          << cut << ": " << r.truncation();
    }
    EXPECT_EQ(r.bad_records(), 0u) << cut;
    EXPECT_EQ(r.tasks().size(), cut >= w.ends[kTasksEnd] ? w.tasks.size() : 0u) << cut;
    EXPECT_EQ(r.symbols().size(), cut >= w.ends[kSymbolsEnd] ? w.symbols.size() : 0u) << cut;
    EXPECT_EQ(r.has_stats(), cut >= w.ends[kStats1]) << cut;
    if (r.has_stats()) {
      EXPECT_EQ(r.stats().in_unseen, cut >= w.ends[kStats2] ? 1006u : 13u) << cut;
    }
    EXPECT_FALSE(r.has_end()) << cut;
  }
  ::close(fd);
}

// One bit flipped in a block (header or payload) is caught there: the blocks
// before it read, nothing from it on. A flip in the file header or the meta
// block refuses the file.
TEST(KernelLog, SingleBitCorruptionStopsTheReader) {
  ScratchDir dir;
  Written w;
  const std::string full = written_full_log(&dir, &w);
  ASSERT_FALSE(HasFailure());

  // Every byte of the file header and of every block header, and every 13th
  // payload byte, each with one of its bits.
  std::vector<size_t> offsets;
  for (size_t i = 0; i < sizeof(blockfile::FileHeader); ++i) offsets.push_back(i);
  uint64_t start = sizeof(blockfile::FileHeader);
  for (uint64_t end : w.ends) {
    for (size_t i = 0; i < sizeof(blockfile::BlockHeader); ++i) offsets.push_back(start + i);
    for (uint64_t i = start + sizeof(blockfile::BlockHeader); i < end; i += 13)
      offsets.push_back(i);
    start = end;
  }
  // One copy, each byte flipped in place and put back after the read.
  const std::string bad_path = dir.write("bad.klog", full);
  const int fd = ::open(bad_path.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  for (size_t n = 0; n < offsets.size(); ++n) {
    const size_t at = offsets[n];
    const char flipped = static_cast<char>(full[at] ^ (1u << (n % 8)));
    ASSERT_EQ(::pwrite(fd, &flipped, 1, static_cast<off_t>(at)), 1);
    KernelLogReader r;
    const ReadResult got = read_log(bad_path, &r);
    ASSERT_EQ(::pwrite(fd, &full[at], 1, static_cast<off_t>(at)), 1);
    if (at < w.ends[kMetaEnd]) {
      EXPECT_FALSE(got.opened) << "byte " << at;
      if (!got.opened) expect_one_message(got.error, bad_path);
      continue;
    }
    ASSERT_TRUE(got.opened) << "byte " << at << ": " << got.error;
    ASSERT_TRUE(got.walked) << "byte " << at;
    // Everything up to the start of the block holding the flipped byte.
    uint64_t block_start = 0;
    const size_t want = records_within(w, at, &block_start);
    EXPECT_TRUE(r.truncated()) << "byte " << at;
    EXPECT_NE(r.truncation().find("at byte " + std::to_string(block_start)), std::string::npos)
        << "byte " << at << ": " << r.truncation();
    ASSERT_EQ(got.records, std::vector<Bytes>(w.records.begin(), w.records.begin() + want))
        << "byte " << at;
    EXPECT_EQ(r.bad_records(), 0u) << "byte " << at;
    EXPECT_FALSE(r.has_end()) << "byte " << at;
  }
  ::close(fd);
}

TEST(KernelLog, MalformedRecordsSkipTheRestOfTheirBlock) {
  ScratchDir dir;
  const std::string path = dir.path("m.klog");
  BlockFileWriter bw;
  ASSERT_TRUE(test::start_raw_log(&bw, path)) << bw.error();
  const Bytes a = patterned_record(FT_EV_IRQ, 1), c = patterned_record(FT_EV_WORK, 3),
              d = patterned_record(FT_EV_EXIT, 4);
  // A size that is not its kind's (a whole offcpu record claiming 8 bytes more).
  Bytes b = patterned_record(FT_EV_OFFCPU, 2);
  b.resize(b.size() + 8, 0);
  test::set_record_size(&b, static_cast<uint16_t>(b.size()));
  Bytes p = test::concat({a, b, c, d});
  ASSERT_TRUE(bw.write_block(kernel_log::kEvents, 4, p.data(), p.size()));
  // A record whose (right) size runs past its block.
  Bytes e = patterned_record(FT_EV_FAULTS, 5), f = patterned_record(FT_EV_STALL, 6);
  p = test::concat({e, f});
  p.resize(p.size() - 8);
  ASSERT_TRUE(bw.write_block(kernel_log::kEvents, 2, p.data(), p.size()));
  // A block ending in a fragment shorter than a record header.
  const Bytes g = patterned_record(FT_EV_POLL, 7);
  p = g;
  p.insert(p.end(), g.begin(), g.begin() + 16);
  ASSERT_TRUE(bw.write_block(kernel_log::kEvents, 2, p.data(), p.size()));
  // A size below a header, and a size that is not a multiple of 8.
  for (uint16_t bad_size : {uint16_t{8}, uint16_t{sizeof(ft_poll) - 4}}) {
    Bytes h = patterned_record(FT_EV_POLL, 8);
    test::set_record_size(&h, bad_size);
    ASSERT_TRUE(bw.write_block(kernel_log::kEvents, 1, h.data(), h.size()));
  }
  // Then a good block.
  const Bytes z = patterned_record(FT_EV_THREAD, 9);
  ASSERT_TRUE(bw.write_block(kernel_log::kEvents, 1, z.data(), z.size()));
  bw.close();

  KernelLogReader r;
  EXPECT_EQ(walked_records(path, &r), (std::vector<Bytes>{a, e, g, z}));
  // b, c, d; f; the fragment; the two bad sizes.
  EXPECT_EQ(r.bad_records(), 3u + 1u + 1u + 2u);
  EXPECT_EQ(r.records_read(), 4u);
  EXPECT_EQ(r.unknown_records(), 0u);
  EXPECT_FALSE(r.truncated());
}

TEST(KernelLog, UnknownKindsAndBlockTypesAreSkipped) {
  ScratchDir dir;
  const std::string path = dir.path("u.klog");
  BlockFileWriter bw;
  ASSERT_TRUE(test::start_raw_log(&bw, path));
  const Bytes a = patterned_record(FT_EV_CXI_ERR, 1), c = patterned_record(FT_EV_SLOW_OP, 2);
  Bytes unknown(40, 0x5a);  // a kind from a newer build, with a valid size
  const ft_hdr uh = test::make_hdr(FT_EV_KINDS + 3, 40, 1, 2, 3, 4);
  std::memcpy(unknown.data(), &uh, sizeof(uh));
  Bytes p = test::concat({a, unknown, c});
  ASSERT_TRUE(bw.write_block(kernel_log::kEvents, 3, p.data(), p.size()));
  const std::string other = "opaque payload of a newer block type";
  ASSERT_TRUE(bw.write_block(77, 5, other.data(), other.size()));
  const Bytes d = patterned_record(FT_EV_RETRANS, 3);
  ASSERT_TRUE(bw.write_block(kernel_log::kEvents, 1, d.data(), d.size()));
  bw.close();

  KernelLogReader r;
  EXPECT_EQ(walked_records(path, &r), (std::vector<Bytes>{a, c, d}));
  EXPECT_EQ(r.unknown_records(), 1u);
  EXPECT_EQ(r.bad_records(), 0u);
  EXPECT_FALSE(r.truncated());
  EXPECT_EQ(r.meta().host, "raw");
}

TEST(KernelLog, HostileFilesAreRefusedWithOneMessage) {
  ScratchDir dir;
  std::string err;
  {  // missing
    KernelLogReader r;
    const std::string p = dir.path("missing.klog");
    EXPECT_FALSE(r.open(p, &err));
    expect_one_message(err, p);
    EXPECT_NE(err.find("cannot open"), std::string::npos) << err;
  }
  {  // a FIFO: refused at once, not waited on
    KernelLogReader r;
    const std::string p = dir.path("fifo.klog");
    ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
    EXPECT_FALSE(r.open(p, &err));
    expect_one_message(err, p);
    EXPECT_NE(err.find("not a regular file"), std::string::npos) << err;
  }
  {  // a directory
    KernelLogReader r;
    EXPECT_FALSE(r.open(dir.path(), &err));
    expect_one_message(err, dir.path());
  }
  // Starts of a real log, edited.
  const std::string good_path = dir.path("good.klog");
  write_full_log(good_path);
  const std::string good = read_file_bytes(good_path);
  struct Case {
    const char* name;
    std::string bytes;
    const char* says;
  };
  std::string wrong_magic = good, newer = good, zero_version = good, bad_hdr = good;
  wrong_magic[2] = 'X';
  const uint32_t v2 = kernel_log::kVersion + 1, v0 = 0, hb = 1u << 30;
  std::memcpy(&newer[8], &v2, 4);
  std::memcpy(&zero_version[8], &v0, 4);
  std::memcpy(&bad_hdr[12], &hb, 4);
  const std::vector<Case> cases = {
      {"empty", "", "not a FTKLOG file"},
      {"short", good.substr(0, 10), "not a FTKLOG file"},
      {"oplog", std::string("FTOPLOG\0", 8) + good.substr(8), "not a FTKLOG file"},
      {"wrong_magic", wrong_magic, "not a FTKLOG file"},
      {"newer", newer, "unsupported version 2"},
      {"zero_version", zero_version, "unsupported version 0"},
      {"bad_header_bytes", bad_hdr, "bad file header"},
      {"header_only", good.substr(0, sizeof(blockfile::FileHeader)), "no kernel log header"},
  };
  for (const Case& c : cases) {
    KernelLogReader r;
    const std::string p = dir.write(std::string(c.name) + ".klog", c.bytes);
    EXPECT_FALSE(r.open(p, &err)) << c.name;
    expect_one_message(err, p);
    EXPECT_NE(err.find(c.says), std::string::npos) << c.name << ": " << err;
  }
}

// Files whose blocks are well-formed but whose first block is not a kernel
// log's meta of this record version.
TEST(KernelLog, MetaMustComeFirstWithThisRecordVersion) {
  ScratchDir dir;
  auto raw = [&](const char* name, uint16_t type, const std::string& payload) {
    const std::string p = dir.path(name);
    BlockFileWriter bw;
    EXPECT_TRUE(bw.create(p, kernel_log::kMagic, kernel_log::kVersion));
    EXPECT_TRUE(bw.write_block(type, 0, payload.data(), payload.size()));
    return p;
  };
  const std::string fmt = std::string("\"format\":\"") + kernel_log::kFormatName + "\"";
  struct Case {
    std::string path;
    const char* says;
  };
  const std::vector<Case> cases = {
      {raw("events_first", kernel_log::kEvents, "{" + fmt + ",\"record_version\":1}"),
       "no kernel log header"},
      {raw("other_format", kernel_log::kMeta, "{\"format\":\"x\",\"record_version\":1}"),
       "no kernel log header"},
      {raw("not_json", kernel_log::kMeta, "{" + fmt + ","), "no kernel log header"},
      {raw("array", kernel_log::kMeta, "[1,2]"), "no kernel log header"},
      // A log of the previous layout (FT_EV_UPROBE_OPS without ep and peer).
      {raw("rv2", kernel_log::kMeta, "{" + fmt + ",\"record_version\":2}"), "record version 2"},
      {raw("rv_missing", kernel_log::kMeta, "{" + fmt + "}"), "record version 0"},
      {raw("deep_array", kernel_log::kMeta, std::string(100000, '[')), "no kernel log header"},
  };
  for (const Case& c : cases) {
    KernelLogReader r;
    std::string err;
    EXPECT_FALSE(r.open(c.path, &err)) << c.path;
    expect_one_message(err, c.path);
    EXPECT_NE(err.find(c.says), std::string::npos) << c.path << ": " << err;
  }
}

TEST(KernelLog, DeeplyNestedJsonBlocksAreIgnored) {
  ScratchDir dir;
  const std::string path = dir.path("deep.klog");
  BlockFileWriter bw;
  ASSERT_TRUE(test::start_raw_log(&bw, path));
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "{\"a\":";
  const std::string arrays(100000, '[');
  ASSERT_TRUE(bw.write_block(kernel_log::kTasks, 0, arrays.data(), arrays.size()));
  ASSERT_TRUE(bw.write_block(kernel_log::kSymbols, 0, deep.data(), deep.size()));
  ASSERT_TRUE(bw.write_block(kernel_log::kStats, 0, deep.data(), deep.size()));
  ASSERT_TRUE(bw.write_block(kernel_log::kEnd, 0, arrays.data(), arrays.size()));
  const Bytes a = patterned_record(FT_EV_DROP, 1);
  ASSERT_TRUE(bw.write_block(kernel_log::kEvents, 1, a.data(), a.size()));
  // Nesting a log does use still reads.
  const std::string tasks =
      R"([{"pid":5,"tid":6,"comm":"x","rank":"1","exe":"/e","preload":true}])";
  ASSERT_TRUE(bw.write_block(kernel_log::kTasks, 0, tasks.data(), tasks.size()));
  bw.close();

  KernelLogReader r;
  EXPECT_EQ(walked_records(path, &r), (std::vector<Bytes>{a}));
  ASSERT_EQ(r.tasks().size(), 1u);
  EXPECT_EQ(r.tasks()[0].tid, 6);
  EXPECT_TRUE(r.tasks()[0].preload);
  EXPECT_TRUE(r.symbols().empty());
  EXPECT_FALSE(r.has_stats());
  EXPECT_FALSE(r.has_end());
  EXPECT_FALSE(r.truncated());
}

long resident_bytes() {
  long pages = 0, resident = 0;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * ::sysconf(_SC_PAGESIZE);
}

// A block header announcing 60 MiB (under the cap) in a file of a few bytes:
// the reader stops at it without allocating the payload.
TEST(KernelLog, AnnouncedPayloadLargerThanTheFileIsNotAllocated) {
  ScratchDir dir;
  constexpr uint32_t kClaim = 60u << 20;
  static_assert(kClaim < blockfile::kMaxPayloadBytes, "under the cap");
  auto giant = [&](uint16_t type) {
    blockfile::BlockHeader h{};
    h.magic = blockfile::kBlockMagic;
    h.type = type;
    h.payload_bytes = kClaim;
    return std::string(reinterpret_cast<const char*>(&h), sizeof(h)) + std::string(60, 'x');
  };
  // A 100-byte file: the file header, a meta block header claiming 60 MiB, 60 bytes.
  blockfile::FileHeader fh{};
  std::memcpy(fh.magic, kernel_log::kMagic, 8);
  fh.version = kernel_log::kVersion;
  fh.header_bytes = sizeof(fh);
  const std::string bare =
      std::string(reinterpret_cast<const char*>(&fh), sizeof(fh)) + giant(kernel_log::kMeta);
  ASSERT_EQ(bare.size(), 100u);
  const std::string bare_path = dir.write("bare.klog", bare);
  // A valid start, then an events block header claiming 60 MiB.
  const std::string after_path = dir.path("after.klog");
  {
    BlockFileWriter bw;
    ASSERT_TRUE(test::start_raw_log(&bw, after_path));
  }
  const std::string start = read_file_bytes(after_path);
  dir.write("after.klog", start + giant(kernel_log::kEvents));
  // And one over the cap, in a file that could hold it as far as its size goes.
  blockfile::BlockHeader over{};
  over.magic = blockfile::kBlockMagic;
  over.type = kernel_log::kEvents;
  over.payload_bytes = blockfile::kMaxPayloadBytes + 1;
  const std::string over_path = dir.write(
      "over.klog", start + std::string(reinterpret_cast<const char*>(&over), sizeof(over)));
  ASSERT_EQ(::truncate(over_path.c_str(), static_cast<off_t>(start.size() + sizeof(over) +
                                                             blockfile::kMaxPayloadBytes + 8)),
            0);

  const long before = resident_bytes();
  {
    KernelLogReader r;
    std::string err;
    EXPECT_FALSE(r.open(bare_path, &err));
    EXPECT_NE(err.find("no kernel log header"), std::string::npos) << err;
    EXPECT_TRUE(r.truncated());
    EXPECT_NE(r.truncation().find("incomplete block"), std::string::npos) << r.truncation();
    EXPECT_LT(resident_bytes() - before, 16L << 20);
  }
  {
    KernelLogReader r;
    const ReadResult got = read_log(after_path, &r);
    ASSERT_TRUE(got.opened && got.walked) << got.error;
    EXPECT_TRUE(got.records.empty());
    EXPECT_TRUE(r.truncated());
    EXPECT_EQ(r.truncation(), "incomplete block at byte " + std::to_string(start.size()));
    EXPECT_LT(resident_bytes() - before, 16L << 20);
  }
  {
    KernelLogReader r;
    const ReadResult got = read_log(over_path, &r);
    ASSERT_TRUE(got.opened && got.walked) << got.error;
    EXPECT_TRUE(r.truncated());
    EXPECT_EQ(r.truncation(), "oversized block at byte " + std::to_string(start.size()));
    EXPECT_LT(resident_bytes() - before, 16L << 20);
  }
}

TEST(KernelLog, WriterNeverWritesOverOrThroughAName) {
  ScratchDir dir;
  const std::string target = dir.write("target", "precious\n");
  const std::string existing = dir.write("existing.klog", "old content");
  dir.symlink(target, "link.klog");
  dir.symlink(dir.path("nowhere"), "dangling.klog");
  for (const char* name : {"existing.klog", "link.klog", "dangling.klog"}) {
    KernelLogWriter w;
    const std::string p = dir.path(name);
    EXPECT_FALSE(w.create(p, test::sample_meta())) << name;
    EXPECT_EQ(w.error().rfind(p + ": ", 0), 0u) << w.error();
    EXPECT_NE(w.error().find("already exists"), std::string::npos) << w.error();
    // Everything after a failed create fails too, and writes nothing.
    const Bytes rec = patterned_record(FT_EV_POLL, 1);
    w.append(rec.data(), rec.size());
    EXPECT_FALSE(w.flush()) << name;
    EXPECT_FALSE(w.write_tasks({{1, 1, "a", "", "", false}})) << name;
    EXPECT_FALSE(w.write_stats(KernelStats{})) << name;
    EXPECT_FALSE(w.write_end(1)) << name;
    w.close();
  }
  EXPECT_EQ(read_file_bytes(target), "precious\n");
  EXPECT_EQ(read_file_bytes(existing), "old content");
  struct stat st;
  EXPECT_NE(::lstat(dir.path("nowhere").c_str(), &st), 0);
  EXPECT_EQ(::lstat(dir.path("link.klog").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));

  // A fresh name works, with mode 0644.
  KernelLogWriter w;
  const std::string p = dir.path("new.klog");
  ASSERT_TRUE(w.create(p, test::sample_meta())) << w.error();
  w.close();
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

}  // namespace
}  // namespace fabtrace
