#include "common/oplog_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/input_limits.h"
#include "common/op_kinds.h"
#include "tests/unit/scratch_dir.h"
#include "userspace/cli/cli.h"
#include "userspace/commands.h"

namespace fabtrace {
namespace {

using oplog::OpEntry;

// `fabtrace export ARGS...` on the command's own parser (userspace/cli/cli.h).
int export_command(const std::vector<std::string>& args) {
  cli::Cli c;
  add_export_command(c, c.app());
  std::vector<std::string> all = {"export"};
  all.insert(all.end(), args.begin(), args.end());
  return c.run(all);
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
}

OpEntry make_op(uint64_t i) {
  OpEntry e{};
  e.start_ticks = 1000000 + i * 7;
  e.end_ticks = e.start_ticks + 100 + (i % 13);
  e.bytes = i * 3;
  e.link_id = static_cast<uint32_t>(i % 5);
  e.tid = static_cast<uint32_t>(4000 + i % 3);
  e.kind = static_cast<uint8_t>(i % kOpKindCount);
  e.error = static_cast<uint8_t>(i % 11 == 0);
  return e;
}

bool same(const OpEntry& a, const OpEntry& b) { return std::memcmp(&a, &b, sizeof(a)) == 0; }

OplogCalib calib(double slope, uint64_t tick0, uint64_t mono0, uint64_t real0, double res,
                 uint64_t pairs, bool tsc = true) {
  // Every field, in Calibration's order.
  return OplogCalib{tsc, slope, tick0, mono0, real0, res, pairs};
}

OplogMeta meta() {
  OplogMeta m;
  m.host = "node\"7";
  m.rank = "3";
  m.pid = 4242;
  return m;
}

class OplogFileTest : public ::testing::Test {
 protected:
  std::string path(const std::string& name) { return scratch_.path(name); }

  struct ReadBack {
    bool ok = false;
    std::vector<OpEntry> ops;
    size_t blocks = 0;
    std::string error;
  };
  static ReadBack read_back(OplogReader& r) {
    ReadBack b;
    b.ok = r.read_all(
        [&](const OpEntry* e, size_t n) {
          ++b.blocks;
          b.ops.insert(b.ops.end(), e, e + n);
        },
        &b.error);
    return b;
  }

  test::ScratchDir scratch_;  // the test's own directory, removed with all in it
  const std::string dir_ = scratch_.path();
};

TEST_F(OplogFileTest, RoundTripMetaCalibLinksAndManyOps) {
  const std::string p = path("rt.oplog");
  const size_t n1 = 2 * oplog::kMaxOpsPerBlock + 123;  // three blocks
  const size_t n2 = 1000;
  std::vector<OpEntry> ops;
  for (size_t i = 0; i < n1 + n2; ++i) ops.push_back(make_op(i));

  const OplogCalib c1 = calib(0.4, 111, 222, 333, 1.5, 10);
  const OplogCalib c2 = calib(0.41666666666666669, 18446744073709551000ull, 123456789012345ull,
                              1700000000123456789ull, 3.25, 4567);
  OplogFileWriter w;
  ASSERT_TRUE(w.open(p, meta()));
  ASSERT_TRUE(w.write_calib(c1));
  ASSERT_TRUE(w.write_links({{0, "0x01", "0x02"}, {1, "cxi0", "cxi1"}, {2, "a,b", "c\"d"}}));
  ASSERT_TRUE(w.write_ops(ops.data(), n1));
  ASSERT_TRUE(w.write_calib(c2));
  ASSERT_TRUE(w.write_links({{3, "", "remote3"}, {1, "cxi0-new", "cxi1-new"}}));
  ASSERT_TRUE(w.write_ops(ops.data() + n1, n2));
  ASSERT_TRUE(w.write_ops(ops.data(), 0));  // nothing
  ASSERT_TRUE(w.write_end(n1 + n2, 7, 9));
  const uint64_t written = w.bytes_written();
  w.close();
  EXPECT_EQ(written, read_bytes(p).size());

  OplogReader r;
  std::string err;
  ASSERT_TRUE(r.open(p, &err)) << err;
  EXPECT_EQ(r.header().meta.host, "node\"7");
  EXPECT_EQ(r.header().meta.rank, "3");
  EXPECT_EQ(r.header().meta.pid, 4242);
  ASSERT_EQ(r.header().op_names.size(), static_cast<size_t>(kOpKindCount));
  for (int k = 0; k < kOpKindCount; ++k)
    EXPECT_EQ(r.header().op_names[k], op_name(static_cast<OpKind>(k)));

  const ReadBack b = read_back(r);
  ASSERT_TRUE(b.ok) << b.error;
  EXPECT_FALSE(r.truncated());
  EXPECT_EQ(b.blocks, 4u);
  ASSERT_EQ(b.ops.size(), ops.size());
  for (size_t i = 0; i < ops.size(); ++i) ASSERT_TRUE(same(b.ops[i], ops[i])) << i;
  EXPECT_EQ(r.ops_read(), ops.size());

  ASSERT_TRUE(r.has_calib());
  EXPECT_TRUE(r.calib().tsc);
  EXPECT_EQ(r.calib().ns_per_tick, c2.ns_per_tick);  // exact: shortest round-trip text
  EXPECT_EQ(r.calib().tick0, c2.tick0);
  EXPECT_EQ(r.calib().mono0_ns, c2.mono0_ns);
  EXPECT_EQ(r.calib().real0_ns, c2.real0_ns);
  EXPECT_EQ(r.calib().residual_ns, 3.25);
  EXPECT_EQ(r.calib().pairs, 4567u);

  ASSERT_EQ(r.links().size(), 4u);
  EXPECT_EQ(r.links().at(0).local, "0x01");
  EXPECT_EQ(r.links().at(0).remote, "0x02");
  EXPECT_EQ(r.links().at(1).local, "cxi0-new");
  EXPECT_EQ(r.links().at(2).local, "a,b");
  EXPECT_EQ(r.links().at(2).remote, "c\"d");
  EXPECT_EQ(r.links().at(3).local, "");
  EXPECT_EQ(r.links().at(3).remote, "remote3");

  EXPECT_TRUE(r.has_end());
  EXPECT_EQ(r.end_ops(), n1 + n2);
  EXPECT_EQ(r.end_dropped(), 7u);
  EXPECT_EQ(r.end_filtered(), 9u);

  // The header-only pass sees the same, without the ops.
  OplogReader s;
  ASSERT_TRUE(s.open(p, &err)) << err;
  ASSERT_TRUE(s.scan(&err)) << err;
  EXPECT_FALSE(s.truncated());
  EXPECT_EQ(s.ops_read(), ops.size());
  EXPECT_EQ(s.calib().tick0, c2.tick0);
  EXPECT_EQ(s.links().size(), 4u);
  EXPECT_TRUE(s.has_end());

  // read_all can run again and starts over.
  const ReadBack again = read_back(s);
  ASSERT_TRUE(again.ok);
  EXPECT_EQ(again.ops.size(), ops.size());
  EXPECT_EQ(s.links().size(), 4u);
}

TEST_F(OplogFileTest, ClockGettimeCalibAndEmptyFile) {
  const std::string p = path("empty.oplog");
  OplogFileWriter w;
  ASSERT_TRUE(w.open(p, OplogMeta{"h", "", -1}));
  w.close();
  OplogReader r;
  std::string err;
  ASSERT_TRUE(r.open(p, &err)) << err;
  EXPECT_EQ(r.header().meta.pid, -1);
  const ReadBack b = read_back(r);
  ASSERT_TRUE(b.ok);
  EXPECT_TRUE(b.ops.empty());
  EXPECT_FALSE(r.truncated());
  EXPECT_FALSE(r.has_calib());
  EXPECT_FALSE(r.has_end());

  ::unlink(p.c_str());  // the writer creates a new file, never over an existing one
  ASSERT_TRUE(w.open(p, meta()));
  ASSERT_TRUE(w.write_calib(calib(1.0, 0, 0, 5, 0, 0, /*tsc=*/false)));
  w.close();
  ASSERT_TRUE(r.open(p, &err)) << err;
  ASSERT_TRUE(read_back(r).ok);
  ASSERT_TRUE(r.has_calib());
  EXPECT_FALSE(r.calib().tsc);
  EXPECT_EQ(r.calib().ns_per_tick, 1.0);
  EXPECT_EQ(r.calib().real0_ns, 5u);
}

TEST_F(OplogFileTest, LargeLinkListSplitsIntoBlocks) {
  const std::string p = path("links.oplog");
  std::vector<OplogLink> links;
  for (uint32_t i = 0; i < oplog::kMaxLinksPerBlock * 2 + 5; ++i)
    links.push_back({i, "l" + std::to_string(i), "r" + std::to_string(i)});
  links.push_back({99999, std::string(70000, 'x'), "long"});  // clipped to kMaxStringBytes
  OplogFileWriter w;
  ASSERT_TRUE(w.open(p, meta()));
  ASSERT_TRUE(w.write_links(links));
  w.close();
  OplogReader r;
  std::string err;
  ASSERT_TRUE(r.open(p, &err));
  ASSERT_TRUE(r.scan(&err));
  EXPECT_FALSE(r.truncated());
  ASSERT_EQ(r.links().size(), links.size());
  EXPECT_EQ(r.links().at(4100).remote, "r4100");
  EXPECT_EQ(r.links().at(99999).local, std::string(limits::kMaxStringBytes, 'x'));
  EXPECT_EQ(r.links().at(99999).remote, "long");
}

// Writes meta, calib, links, ops(10), then a last block; returns the size
// before the last block.
uint64_t write_with_last_block(const std::string& p, int last) {
  ::unlink(p.c_str());  // the writer creates a new file, never over an existing one
  OplogFileWriter w;
  EXPECT_TRUE(w.open(p, meta()));
  EXPECT_TRUE(w.write_calib(calib(0.5, 0, 0, 0, 0, 1)));
  EXPECT_TRUE(w.write_links({{1, "a", "b"}}));
  std::vector<OpEntry> ops;
  for (int i = 0; i < 15; ++i) ops.push_back(make_op(i));
  EXPECT_TRUE(w.write_ops(ops.data(), 10));
  const uint64_t before = w.bytes_written();
  switch (last) {
    case 0:
      EXPECT_TRUE(w.write_ops(ops.data() + 10, 5));
      break;
    case 1:
      EXPECT_TRUE(w.write_calib(calib(0.25, 1, 2, 3, 4, 5)));
      break;
    case 2:
      EXPECT_TRUE(w.write_links({{2, "c", "d"}}));
      break;
    default:
      EXPECT_TRUE(w.write_end(15, 0, 0));
      break;
  }
  return before;
}

TEST_F(OplogFileTest, TruncatedAtEveryOffsetOfTheLastBlock) {
  const std::string p = path("full.oplog");
  const std::string cut = path("cut.oplog");
  for (int last = 0; last < 4; ++last) {
    const uint64_t before = write_with_last_block(p, last);
    const std::string full = read_bytes(p);
    ASSERT_GT(full.size(), before + sizeof(oplog::BlockHeader));
    for (size_t len = before; len <= full.size(); ++len) {
      SCOPED_TRACE("last=" + std::to_string(last) + " len=" + std::to_string(len));
      write_bytes(cut, full.substr(0, len));
      const bool whole = len == before || len == full.size();
      for (int pass = 0; pass < 2; ++pass) {
        OplogReader r;
        std::string err;
        ASSERT_TRUE(r.open(cut, &err)) << err;
        std::vector<OpEntry> got;
        if (pass == 0) {
          ASSERT_TRUE(read_back(r).ok);
        } else {
          ASSERT_TRUE(r.scan(&err)) << err;
        }
        EXPECT_EQ(r.truncated(), !whole);
        const bool last_in = len == full.size();
        EXPECT_EQ(r.ops_read(), last == 0 && last_in ? 15u : 10u);
        EXPECT_EQ(r.calib().ns_per_tick, last == 1 && last_in ? 0.25 : 0.5);
        EXPECT_EQ(r.links().size(), last == 2 && last_in ? 2u : 1u);
        EXPECT_EQ(r.has_end(), last == 3 && last_in);
      }
    }
  }
}

TEST_F(OplogFileTest, TruncatedInTheFileHeaderOrMetadataFailsToOpen) {
  const std::string p = path("full.oplog");
  const std::string cut = path("cut.oplog");
  write_with_last_block(p, 0);
  const std::string full = read_bytes(p);
  // The end of the kMeta block: where the calibration block starts.
  OplogReader probe;
  std::string err;
  ASSERT_TRUE(probe.open(p, &err));
  size_t meta_end = 0;
  {
    oplog::BlockHeader h;
    std::memcpy(&h, full.data() + sizeof(oplog::FileHeader), sizeof(h));
    meta_end = sizeof(oplog::FileHeader) + sizeof(h) + h.payload_bytes;
  }
  for (size_t len = 0; len < meta_end; ++len) {
    SCOPED_TRACE(len);
    write_bytes(cut, full.substr(0, len));
    OplogReader r;
    EXPECT_FALSE(r.open(cut, &err));
    EXPECT_NE(err.find(cut), std::string::npos) << err;
  }
  write_bytes(cut, full.substr(0, meta_end));
  OplogReader r;
  ASSERT_TRUE(r.open(cut, &err)) << err;
  ASSERT_TRUE(read_back(r).ok);
  EXPECT_FALSE(r.truncated());
  EXPECT_EQ(r.ops_read(), 0u);
}

TEST_F(OplogFileTest, FlippedByteStopsAtThatBlock) {
  const std::string p = path("ok.oplog");
  const std::string bad = path("bad.oplog");
  OplogFileWriter w;
  ASSERT_TRUE(w.open(p, meta()));
  ASSERT_TRUE(w.write_calib(calib(0.5, 0, 0, 0, 0, 1)));
  std::vector<OpEntry> ops;
  for (int i = 0; i < 12; ++i) ops.push_back(make_op(i));
  ASSERT_TRUE(w.write_ops(ops.data(), 3));
  const uint64_t b_start = w.bytes_written();
  ASSERT_TRUE(w.write_ops(ops.data() + 3, 4));
  const uint64_t b_end = w.bytes_written();
  ASSERT_TRUE(w.write_calib(calib(0.25, 0, 0, 0, 0, 1)));
  const uint64_t c_end = w.bytes_written();
  ASSERT_TRUE(w.write_ops(ops.data() + 7, 5));
  ASSERT_TRUE(w.write_end(12, 0, 0));
  w.close();
  const std::string full = read_bytes(p);
  // The file with the bits `mask` of byte `at` flipped, opened by r (a flip
  // past the meta block still opens).
  const auto open_flipped = [&](uint64_t at, char mask, OplogReader* r) {
    std::string s = full;
    s[at] ^= mask;
    write_bytes(bad, s);
    std::string err;
    return r->open(bad, &err);
  };

  // Every payload byte of the second ops block.
  for (uint64_t at = b_start + sizeof(oplog::BlockHeader); at < b_end; ++at) {
    OplogReader r;
    ASSERT_TRUE(open_flipped(at, 0x10, &r));
    const ReadBack b = read_back(r);
    ASSERT_TRUE(b.ok);
    EXPECT_TRUE(r.truncated());
    ASSERT_EQ(b.ops.size(), 3u) << at;
    EXPECT_FALSE(r.has_end());
    EXPECT_EQ(r.calib().ns_per_tick, 0.5);
  }
  // A byte of the later calibration's payload.
  {
    OplogReader r;
    ASSERT_TRUE(open_flipped(c_end - 2, 0x01, &r));
    const ReadBack b = read_back(r);
    EXPECT_TRUE(r.truncated());
    EXPECT_EQ(b.ops.size(), 7u);
    EXPECT_EQ(r.calib().ns_per_tick, 0.5);
  }
  // The block magic of the second ops block.
  {
    OplogReader r;
    ASSERT_TRUE(open_flipped(b_start, 0x01, &r));
    EXPECT_EQ(read_back(r).ops.size(), 3u);
    EXPECT_TRUE(r.truncated());
    std::string err;
    ASSERT_TRUE(r.scan(&err));
    EXPECT_TRUE(r.truncated());
    EXPECT_EQ(r.ops_read(), 3u);
  }
  // A count that does not match the payload size.
  {
    OplogReader r;
    ASSERT_TRUE(open_flipped(b_start + 12, 0x01, &r));  // BlockHeader::count
    EXPECT_EQ(read_back(r).ops.size(), 3u);
    EXPECT_TRUE(r.truncated());
  }
}

TEST_F(OplogFileTest, ForeignAndMissingFilesAreRejected) {
  std::string err;
  OplogReader r;
  const std::string missing = dir_ + "/does-not-exist.oplog";
  EXPECT_FALSE(r.open(missing, &err));
  EXPECT_NE(err.find(missing), std::string::npos) << err;

  const std::string text = path("foreign.txt");
  write_bytes(text, "hello, this is not an oplog file at all\n");
  EXPECT_FALSE(r.open(text, &err));
  EXPECT_NE(err.find(text), std::string::npos) << err;
  EXPECT_NE(err.find("not a fabtrace oplog"), std::string::npos) << err;

  const std::string tiny = path("tiny");
  write_bytes(tiny, "FTOP");
  EXPECT_FALSE(r.open(tiny, &err));
  EXPECT_NE(err.find("not a fabtrace oplog"), std::string::npos) << err;

  // A future version.
  const std::string p = path("v3.oplog");
  write_with_last_block(p, 0);
  std::string s = read_bytes(p);
  s[8] = 3;
  write_bytes(p, s);
  EXPECT_FALSE(r.open(p, &err));
  EXPECT_NE(err.find("version 3"), std::string::npos) << err;

  // A metadata block of some other format.
  s[8] = 2;
  s[sizeof(oplog::FileHeader) + sizeof(oplog::BlockHeader) + 5] ^= 0x20;
  write_bytes(p, s);
  EXPECT_FALSE(r.open(p, &err));
  EXPECT_NE(err.find("metadata"), std::string::npos) << err;

  std::string none;
  EXPECT_FALSE(r.read_all(nullptr, &none));
  EXPECT_FALSE(none.empty());
}

TEST_F(OplogFileTest, WriterErrorsReturnFalse) {
  OplogFileWriter w;
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(w.open(dir_ + "/no/such/dir/x.oplog", meta()));
  EXPECT_FALSE(w.write_calib(calib(1, 0, 0, 0, 0, 0)));
  const OpEntry e = make_op(1);
  EXPECT_FALSE(w.write_ops(&e, 1));
  EXPECT_FALSE(w.write_end(0, 0, 0));
  const std::string log = ::testing::internal::GetCapturedStderr();
  // One line for the first error only.
  EXPECT_NE(log.find("/no/such/dir/x.oplog"), std::string::npos) << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;

  OplogFileWriter never_opened;
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(never_opened.write_ops(&e, 1));
  ::testing::internal::GetCapturedStderr();

  // A full disk.
  if (access("/dev/full", W_OK) == 0) {
    OplogFileWriter f;
    ::testing::internal::CaptureStderr();
    EXPECT_FALSE(f.open("/dev/full", meta()));
    EXPECT_FALSE(f.write_ops(&e, 1));
    const std::string l2 = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(std::count(l2.begin(), l2.end(), '\n'), 1) << l2;
  }
}

// ---------------------------------------------------------------- export

// What `fabtrace export ops --csv` made of a file: its exit status, its rows,
// and what it said on stderr.
struct Exported {
  int rc = -1;
  std::string csv, err;
};

Exported run_export(const std::string& in) {
  Exported x;
  std::FILE* f = std::tmpfile();
  ::testing::internal::CaptureStderr();
  x.rc = export_ops_csv(in, f);
  x.err = ::testing::internal::GetCapturedStderr();
  std::rewind(f);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) x.csv.append(buf, n);
  std::fclose(f);
  return x;
}

OpEntry op(uint64_t s, uint64_t e, OpKind k, uint64_t bytes, uint32_t link, uint8_t error,
           uint32_t tid) {
  OpEntry o{};
  o.start_ticks = s;
  o.end_ticks = e;
  o.kind = static_cast<uint8_t>(k);
  o.bytes = bytes;
  o.link_id = link;
  o.error = error;
  o.tid = tid;
  return o;
}

constexpr const char* kHeaderRow =
    "start_ns,end_ns,dur_ns,op,bytes,local_nic,remote_nic,error,tid,size_known\n";

TEST_F(OplogFileTest, ExportCsvRowsExact) {
  const std::string p = path("export.oplog");
  OplogFileWriter w;
  OplogMeta m;
  m.host = "n01";
  m.rank = "5";
  m.pid = 777;
  ASSERT_TRUE(w.open(p, m));
  // A first calibration that the later one replaces for every op.
  ASSERT_TRUE(w.write_calib(calib(9.0, 0, 0, 0, 100, 2)));
  ASSERT_TRUE(w.write_links({{1, "0x0a", "0x0b"}, {2, "cxi,0", "q\"r"}}));
  std::vector<OpEntry> a = {
      op(1000, 1010, OpKind::kTsend, 65536, 1, 0, 4001),  // d = 0, 10 ticks -> 4 ns
      op(1001, 1004, OpKind::kWrite, 8, 2, 1, 4002),      // 0.4 -> 0, 1.6 -> 2
      op(999, 1002, OpKind::kRecv, 4096, 7, 0, 4003),     // before tick0; unknown link
  };
  a[2].flags = oplog::kOpSizeUnknown;  // a receive filed under its posted size
  ASSERT_TRUE(w.write_ops(a.data(), a.size()));
  ASSERT_TRUE(w.write_calib(calib(0.4, 1000, 5000000000ull, 1700000000000000000ull, 2.5, 99)));
  const std::vector<OpEntry> b = {
      op(3500, 1000000003500ull, OpKind::kCompareAtomicmsg, 123456789012ull, 1, 0, 1),
      op(0, 1000, OpKind::kRead, 1, 2, 0, 2),  // ticks - tick0 < 0 in signed 64 bits
  };
  ASSERT_TRUE(w.write_ops(b.data(), b.size()));
  ASSERT_TRUE(w.write_end(5, 0, 0));
  w.close();

  const Exported x = run_export(p);
  EXPECT_EQ(x.rc, 0);
  EXPECT_EQ(x.err, "");
  const std::string expect =
      std::string(
          "# fabtrace ops host=n01 rank=5 pid=777 clock=tsc residual_ns=2.5 "
          "anchor_mono_ns=5000000000 anchor_wall_ns=1700000000000000000 (times are "
          "CLOCK_MONOTONIC ns; wall = t - anchor_mono_ns + anchor_wall_ns)\n") +
      kHeaderRow +
      "5000000000,5000000004,4,fi_tsend,65536,0x0a,0x0b,0,4001,1\n"
      "5000000000,5000000002,2,fi_write,8,\"cxi,0\",\"q\"\"r\",1,4002,1\n"
      "5000000000,5000000001,1,fi_recv,4096,,,0,4003,0\n"
      "5000001000,405000001000,400000000000,fi_compare_atomicmsg,123456789012,0x0a,0x0b,0,1,1\n"
      "4999999600,5000000000,400,fi_read,1,\"cxi,0\",\"q\"\"r\",0,2,1\n";
  EXPECT_EQ(x.csv, expect);

  // The same through the command line, into a file.
  const std::string out = path("out.csv");
  EXPECT_EQ(export_command({"ops", p, "--csv", "-o", out}), 0);
  EXPECT_EQ(read_bytes(out), expect);
}

TEST_F(OplogFileTest, ExportRoundsToNearest) {
  const std::string p = path("round.oplog");
  OplogFileWriter w;
  ASSERT_TRUE(w.open(p, meta()));
  ASSERT_TRUE(w.write_calib(calib(0.5, 100, 1000, 0, 0, 1, /*tsc=*/false)));
  const std::vector<OpEntry> ops = {
      op(101, 103, OpKind::kSend, 0, 0, 0, 0),  // 0.5 -> 1, 1.5 -> 2
      op(99, 97, OpKind::kSend, 0, 0, 0, 0),    // -0.5 -> -1, -1.5 -> -2
  };
  ASSERT_TRUE(w.write_ops(ops.data(), ops.size()));
  ASSERT_TRUE(w.write_end(2, 0, 0));
  w.close();
  const Exported x = run_export(p);
  EXPECT_EQ(x.rc, 0);
  const size_t rows = x.csv.find(kHeaderRow);
  ASSERT_NE(rows, std::string::npos);
  EXPECT_NE(x.csv.find("clock=clock_gettime residual_ns=0 anchor_mono_ns=1000 anchor_wall_ns=0"),
            std::string::npos)
      << x.csv;
  EXPECT_EQ(x.csv.substr(rows + std::strlen(kHeaderRow)),
            "1001,1002,1,fi_send,0,,,0,0,1\n"
            "999,998,-1,fi_send,0,,,0,0,1\n");
}

TEST_F(OplogFileTest, ExportTruncatedFileSaysSoAndKeepsWhatIsThere) {
  const std::string p = path("trunc.oplog");
  const uint64_t before = write_with_last_block(p, 0);
  std::string s = read_bytes(p);
  write_bytes(p, s.substr(0, before + 30));
  const Exported cut = run_export(p);
  EXPECT_EQ(cut.rc, 0);
  EXPECT_EQ(std::count(cut.csv.begin(), cut.csv.end(), '\n'), 2 + 10);
  EXPECT_EQ(std::count(cut.err.begin(), cut.err.end(), '\n'), 1) << cut.err;
  EXPECT_NE(cut.err.find(p), std::string::npos) << cut.err;
  EXPECT_NE(cut.err.find("cut short after 10 ops"), std::string::npos) << cut.err;

  // Whole blocks but no end record: a note, all rows.
  write_bytes(p, s);
  const Exported whole = run_export(p);
  EXPECT_EQ(whole.rc, 0);
  EXPECT_EQ(std::count(whole.csv.begin(), whole.csv.end(), '\n'), 2 + 15);
  EXPECT_NE(whole.err.find("no end record after 15 ops"), std::string::npos) << whole.err;
}

TEST_F(OplogFileTest, ExportRejectsMissingAndForeignFiles) {
  const std::string missing = dir_ + "/missing.oplog";
  const Exported gone = run_export(missing);
  EXPECT_EQ(gone.csv, "");
  EXPECT_EQ(gone.rc, 1);
  EXPECT_NE(gone.err.find(missing), std::string::npos) << gone.err;
  EXPECT_EQ(std::count(gone.err.begin(), gone.err.end(), '\n'), 1) << gone.err;

  const std::string foreign = path("foreign.csv");
  write_bytes(foreign, "a,b,c\n1,2,3\n");
  const Exported alien = run_export(foreign);
  EXPECT_EQ(alien.csv, "");
  EXPECT_EQ(alien.rc, 1);
  EXPECT_NE(alien.err.find(foreign), std::string::npos) << alien.err;
  EXPECT_NE(alien.err.find("not a fabtrace oplog"), std::string::npos) << alien.err;

  // -o is not created for a bad input.
  const std::string out = dir_ + "/never.csv";
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(export_command({"ops", foreign, "-o", out}), 1);
  ::testing::internal::GetCapturedStderr();
  EXPECT_NE(access(out.c_str(), F_OK), 0);
}

TEST_F(OplogFileTest, ExportCommandLineErrors) {
  std::string err;
  const auto run = [&err](std::vector<std::string> args) {
    ::testing::internal::CaptureStderr();
    ::testing::internal::CaptureStdout();
    const int rc = export_command(args);
    ::testing::internal::GetCapturedStdout();
    err = ::testing::internal::GetCapturedStderr();
    return rc;
  };
  EXPECT_EQ(run({}), 2);
  EXPECT_EQ(run({"stats", "x"}), 2);
  EXPECT_EQ(run({"ops"}), 2);
  EXPECT_EQ(run({"ops", "a", "b"}), 2);
  EXPECT_EQ(run({"ops", "a", "--json"}), 2);
  // One line, naming the flag.
  EXPECT_EQ(err, "fabtrace export ops: unknown option --json (fabtrace export ops --help)\n");
  EXPECT_EQ(run({"ops", "a", "-o"}), 2);
  EXPECT_EQ(run({"ops", "--help"}), 0);
}

}  // namespace
}  // namespace fabtrace
