// Kernel log records as rows (userspace/report/kernel_rows.*): every kind's
// columns and detail keys, names from the log's symbols, connection sides.
#include "userspace/report/job/kernel_rows.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "common/kernel_explain.h"
#include "common/op_kinds.h"
#include "fixtures/kernel_records.h"
#include "tests/unit/scratch_dir.h"

namespace fabtrace {
namespace {

using test::make_hdr;
using test::set_str;

constexpr uint64_t kTs = 7000000000ULL;

template <typename T>
KernelRow row_of(const T& rec, const KernelNames& names = KernelNames{}) {
  const test::Bytes b = test::bytes_of(rec);
  return kernel_row(rec.h, b.data(), names);
}

void expect_common(const KernelRow& r, const char* kind, uint64_t start, uint64_t dur) {
  EXPECT_EQ(r.kind, kind);
  EXPECT_EQ(r.ts_ns, kTs);
  EXPECT_EQ(r.start_ns, start);
  EXPECT_EQ(r.dur_ns, dur);
  EXPECT_EQ(r.cpu, 3u);
  EXPECT_EQ(r.pid, 100u);
  EXPECT_EQ(r.tid, 101u);
}

template <typename T>
T with_hdr(uint16_t kind) {
  T r{};
  r.h = make_hdr(kind, sizeof(T), kTs, 3, 100, 101);
  return r;
}

ft_offcpu sample_offcpu(uint8_t kind) {
  auto e = with_hdr<ft_offcpu>(FT_EV_OFFCPU);
  e.start = kTs - 5000000;
  e.syscall = -1;
  e.prev_state = 0x102;
  e.cpu_out = 2;
  e.off_kind = kind;
  e.out_pid = 555;
  e.in_pid = 556;
  set_str(e.out_comm, "hog");
  set_str(e.in_comm, "swapper/3");
  return e;
}

TEST(KernelRows, OffCpu) {
  // Preempted, with the task that held the CPU longest.
  auto e = sample_offcpu(FT_OFF_PREEMPTED);
  e.ran_ns = 4000000;
  e.ran_pid = 557;
  set_str(e.ran_comm, "stress-ng");
  KernelRow r = row_of(e);
  expect_common(r, "offcpu", kTs - 5000000, 5000000);
  EXPECT_EQ(r.cause, "preempted");
  EXPECT_EQ(r.other_pid, 557u);
  EXPECT_EQ(r.other_comm, "stress-ng");
  EXPECT_EQ(r.detail, "ran_ns=4000000;taken_by=hog[555];cpu_out=2;cpu_in=3;state=0x102");

  // Preempted, no runner known: the task that took the CPU.
  e = sample_offcpu(FT_OFF_PREEMPTED);
  r = row_of(e);
  EXPECT_EQ(r.other_pid, 555u);
  EXPECT_EQ(r.other_comm, "hog");
  EXPECT_EQ(r.detail, "taken_by=hog[555];cpu_out=2;cpu_in=3;state=0x102");

  // Asleep and woken: the task that gave the CPU back, the wait after the wakeup.
  e = sample_offcpu(FT_OFF_SLEEP);
  e.wake = kTs - 1500000;
  r = row_of(e);
  EXPECT_EQ(r.cause, "sleep");
  EXPECT_EQ(r.other_pid, 556u);
  EXPECT_EQ(r.other_comm, "swapper/3");
  EXPECT_EQ(r.detail, "wait_after_wake_ns=1500000;cpu_out=2;cpu_in=3;state=0x102");

  // A wakeup stamped after the switch-in (clock skew between CPUs): no negative wait.
  e.wake = kTs + 10;
  e.off_kind = FT_OFF_DISK;
  r = row_of(e);
  EXPECT_EQ(r.cause, "disk");
  EXPECT_EQ(r.detail, "wait_after_wake_ns=0;cpu_out=2;cpu_in=3;state=0x102");

  // A start after the end: zero length, not a wrapped one.
  e.start = kTs + 1;
  EXPECT_EQ(row_of(e).dur_ns, 0u);
}

TEST(KernelRows, IrqAndSoftirq) {
  auto e = with_hdr<ft_irq>(FT_EV_IRQ);
  e.start = kTs - 2500;
  e.irq = 45;
  e.ret = 1;
  set_str(e.name, "cxi0_comp3");
  KernelRow r = row_of(e);
  expect_common(r, "irq", kTs - 2500, 2500);
  EXPECT_EQ(r.cause, "cxi0_comp3");
  EXPECT_EQ(r.detail, "irq=45;class=cxi-completion");
  set_str(e.name, "eth0-rx-0");
  EXPECT_EQ(row_of(e).detail, "irq=45;class=other");

  auto s = with_hdr<ft_irq>(FT_EV_SOFTIRQ);
  s.start = kTs - 900;
  s.irq = 3;
  r = row_of(s);
  expect_common(r, "softirq", kTs - 900, 900);
  EXPECT_EQ(r.cause, "NET_RX");
  EXPECT_EQ(r.detail, "vec=3");
}

TEST(KernelRows, Faults) {
  auto e = with_hdr<ft_faults>(FT_EV_FAULTS);
  e.first = kTs - 300000;
  e.count = 12;
  e.last_addr = 0x7f0012345000ULL;
  e.total = 400;
  const KernelRow r = row_of(e);
  expect_common(r, "faults", kTs - 300000, 300000);
  EXPECT_EQ(r.cause, "page faults");
  EXPECT_EQ(r.detail, "count=12;total=400;last_addr=0x7f0012345000");
}

ft_tuple v4_tuple(const char* src, uint16_t sport, const char* dst, uint16_t dport) {
  ft_tuple t{};
  t.family = AF_INET;
  EXPECT_EQ(inet_pton(AF_INET, src, t.saddr), 1);
  EXPECT_EQ(inet_pton(AF_INET, dst, t.daddr), 1);
  t.sport = sport;
  t.dport = dport;
  return t;
}

TEST(KernelRows, RetransmitAndDrop) {
  auto e = with_hdr<ft_net>(FT_EV_RETRANS);
  e.t = v4_tuple("10.0.0.1", 5000, "10.0.0.2", 6000);
  e.state = 1;
  e.protocol = 6;
  e.owner_pid = 4100;
  KernelRow r = row_of(e);
  expect_common(r, "retransmit", kTs, 0);
  EXPECT_EQ(r.cause, "retransmit");
  // A log from before the segment count: one record, one segment.
  EXPECT_EQ(r.detail, "src=10.0.0.1:5000;dst=10.0.0.2:6000;owner=4100;tcp_state=1;segs=1");
  e.segs = 3;     // one skb of three segments (TSO)
  e.reason = 11;  // the retransmit's error
  EXPECT_EQ(row_of(e).detail,
            "src=10.0.0.1:5000;dst=10.0.0.2:6000;owner=4100;tcp_state=1;segs=3;err=11");

  KernelNames names;
  names.drop_reasons[2] = "NO_SOCKET";
  names.functions[2] = "not a drop reason";
  auto d = with_hdr<ft_net>(FT_EV_DROP);
  d.t = v4_tuple("192.168.1.5", 443, "192.168.1.9", 50000);
  d.state = 7;
  d.reason = 2;
  r = row_of(d, names);
  expect_common(r, "drop", kTs, 0);
  EXPECT_EQ(r.cause, "NO_SOCKET");
  EXPECT_EQ(r.detail, "src=192.168.1.5:443;dst=192.168.1.9:50000;owner=0;tcp_state=7");
  d.reason = 77;
  EXPECT_EQ(row_of(d, names).cause, "drop reason 77");
}

TEST(KernelRows, CxiWorkAndErrors) {
  KernelNames names;
  names.functions[0xffffffffc0a01230ULL] = "error_irq_worker";
  names.functions[0xffffffffc0a04560ULL] = "cass_pri_worker";
  names.drop_reasons[0xffffffffc0a09999ULL] = "not a function";
  auto e = with_hdr<ft_work>(FT_EV_WORK);
  e.start = kTs - 40000;
  e.func = 0xffffffffc0a04560ULL;
  KernelRow r = row_of(e, names);
  expect_common(r, "cxi_work", kTs - 40000, 40000);
  EXPECT_EQ(r.cause, "cass_pri_worker");
  EXPECT_EQ(r.detail, "class=page-request");
  e.func = 0xffffffffc0a09999ULL;
  r = row_of(e, names);
  EXPECT_EQ(r.cause, "0xffffffffc0a09999");
  EXPECT_EQ(r.detail, "class=");

  auto c = with_hdr<ft_cxi_err>(FT_EV_CXI_ERR);
  c.csr_flag = 7;
  c.bit = 12;
  c.sec = 1700000000;
  c.nsec = 5;
  r = row_of(c);
  expect_common(r, "cxi_err", kTs, 0);
  EXPECT_EQ(r.cause, "cass_err");
  // 5 ns past the second, not half a second.
  EXPECT_EQ(r.detail, "csr_flag=7;bit=12;hw_time=1700000000.000000005");
  c.nsec = 123456789;
  EXPECT_EQ(row_of(c).detail, "csr_flag=7;bit=12;hw_time=1700000000.123456789");
}

TEST(KernelRows, ThreadAndExit) {
  auto t = with_hdr<ft_thread>(FT_EV_THREAD);
  set_str(t.comm, "app-poll");
  set_str(t.rank, "12");
  KernelRow r = row_of(t);
  expect_common(r, "thread", kTs, 0);
  EXPECT_EQ(r.cause, "first fabric activity");
  EXPECT_EQ(r.other_comm, "app-poll");
  EXPECT_EQ(r.detail, "rank=12");

  auto x = with_hdr<ft_exit>(FT_EV_EXIT);
  set_str(x.comm, "app\n");
  x.faults_total = 77;
  r = row_of(x);
  expect_common(r, "exit", kTs, 0);
  EXPECT_EQ(r.cause, "exit");
  EXPECT_EQ(r.other_comm, "app?");
  EXPECT_EQ(r.detail, "faults_total=77");
}

// A mark's name (the application's string, any bytes) goes in the quoted
// cause column, control bytes shown as '?'; a name that fills the record has
// no terminator and is cut at its length.
TEST(KernelRows, Marks) {
  auto m = with_hdr<ft_mark>(FT_EV_MARK);
  m.type = FT_MARK_INSTANT;
  set_str(m.name, "iteration 7;x=1\t");
  KernelRow r = row_of(m);
  expect_common(r, "mark", kTs, 0);
  EXPECT_EQ(r.cause, "iteration 7;x=1?");
  EXPECT_EQ(r.detail, "type=mark");

  m.type = FT_MARK_BEGIN;
  std::memset(m.name, 'a', sizeof(m.name));  // no terminator
  r = row_of(m);
  EXPECT_EQ(r.cause, std::string(FT_MARK_NAME_LEN, 'a'));
  EXPECT_EQ(r.detail, "type=begin");

  m.type = FT_MARK_END;
  m.name[0] = 0;
  r = row_of(m);
  EXPECT_EQ(r.cause, "");
  EXPECT_EQ(r.detail, "type=end");
  m.type = 9;
  EXPECT_EQ(row_of(m).detail, "type=?");
}

ft_breakdown preempted_breakdown() {
  ft_breakdown w{};
  w.start = kTs - 50 * 1000000ULL;
  w.end = kTs;
  w.on_cpu_ns = 2000000;
  w.runnable_ns = 48000000;
  w.irq_ns = 300000;
  w.faults = 3;
  w.offcpu_count = 1;
  w.top[0].pid = 4312;
  w.top[0].ns = 48000000;
  set_str(w.top[0].comm, "stress-ng");
  w.top[1].pid = 4313;
  w.top[1].ns = 1000;
  set_str(w.top[1].comm, "kworker/3:1");
  return w;
}

const char* const kBreakdownDetail =
    "on-cpu_ns=2000000;runnable_ns=48000000;irq_ns=300000;faults=3;faults_bound=exact;offcpu=1;"
    "ran_instead=stress-ng[4312]:48000000;ran_instead=kworker/3:1[4313]:1000";

TEST(KernelRows, Stall) {
  auto e = with_hdr<ft_stall>(FT_EV_STALL);
  e.cq = 2;
  e.w = preempted_breakdown();
  KernelRow r = row_of(e);
  expect_common(r, "stall", kTs - 50000000, 50000000);
  EXPECT_EQ(r.cause, breakdown_verdict(e.w));
  EXPECT_EQ(r.cause.rfind("preempted by stress-ng[4312] for 48.0 of 50.0 ms", 0), 0u) << r.cause;
  EXPECT_EQ(r.other_pid, 4312u);
  EXPECT_EQ(r.other_comm, "stress-ng");
  EXPECT_EQ(r.detail, std::string("cq=2;") + kBreakdownDetail);
  e.w.migrations = 4;
  e.w.flags = FT_WIN_PARTIAL_IRQ;
  EXPECT_EQ(row_of(e).detail,
            "cq=2;on-cpu_ns=2000000;runnable_ns=48000000;irq_ns=300000;faults=3;"
            "faults_bound=exact;offcpu=1;migrations=4;ran_instead=stress-ng[4312]:48000000;"
            "ran_instead=kworker/3:1[4313]:1000;flags=2");
}

TEST(KernelRows, SlowOpAndOpError) {
  auto e = with_hdr<ft_op>(FT_EV_SLOW_OP);
  e.bytes = 1048576;
  e.op = static_cast<uint32_t>(OpKind::kTsend);
  set_str(e.local, "cxi0:0x12;pid=3");  // as carried; the ';' is not escaped
  set_str(e.remote, "cxi1:0x34");
  e.w = preempted_breakdown();
  KernelRow r = row_of(e);
  expect_common(r, "slow_op", kTs - 50000000, 50000000);
  EXPECT_EQ(r.cause, breakdown_verdict(e.w));
  EXPECT_EQ(r.other_pid, 4312u);
  EXPECT_EQ(r.detail, std::string("op=fi_tsend;bytes=1048576;local=cxi0:0x12;pid=3;"
                                  "remote=cxi1:0x34;") +
                          kBreakdownDetail);

  e.h.kind = FT_EV_OP_ERROR;
  e.err = 5;
  e.op = 9999;
  r = row_of(e);
  EXPECT_EQ(r.kind, "op_error");
  EXPECT_EQ(r.detail, std::string("op=?;bytes=1048576;local=cxi0:0x12;pid=3;remote=cxi1:0x34;"
                                  "err=5;") +
                          kBreakdownDetail);
}

TEST(KernelRows, PollAndUnknownKind) {
  auto e = with_hdr<ft_poll>(FT_EV_POLL);
  e.enter = kTs - 700;
  e.cq = 4;
  e.ret = -11;
  e.polls = 9;
  e.busy_ns = 450;
  KernelRow r = row_of(e);
  expect_common(r, "poll", kTs - 700, 700);
  EXPECT_EQ(r.cause, "poll");
  EXPECT_EQ(r.detail, "cq=4;ret=-11;polls=9;busy_ns=450");

  auto u = with_hdr<ft_poll>(99);
  r = row_of(u);
  expect_common(r, "kind99", kTs, 0);
  EXPECT_EQ(r.cause, "");
  EXPECT_EQ(r.detail, "");
}

TEST(KernelRows, TupleSides) {
  const ft_tuple v4 = v4_tuple("127.0.0.1", 5000, "10.1.2.3", 65535);
  EXPECT_EQ(tuple_side(v4, true), "127.0.0.1:5000");
  EXPECT_EQ(tuple_side(v4, false), "10.1.2.3:65535");

  ft_tuple v6{};
  v6.family = AF_INET6;
  ASSERT_EQ(inet_pton(AF_INET6, "::1", v6.saddr), 1);
  ASSERT_EQ(inet_pton(AF_INET6, "fe80::1:2", v6.daddr), 1);
  v6.sport = 5000;
  v6.dport = 0;
  EXPECT_EQ(tuple_side(v6, true), "[::1]:5000");
  EXPECT_EQ(tuple_side(v6, false), "[fe80::1:2]:0");
  ASSERT_EQ(inet_pton(AF_INET6, "::ffff:10.0.0.1", v6.saddr), 1);
  EXPECT_EQ(tuple_side(v6, true), "[::ffff:10.0.0.1]:5000");
}

TEST(KernelRows, RecordStrings) {
  EXPECT_EQ(record_str("abc\0def", 8), "abc");
  EXPECT_EQ(record_str("a\tb\x7f"
                       "c",
                       5),
            "a?b?c");
  const char full[4] = {'w', 'x', 'y', 'z'};  // no NUL: stops at the field's end
  EXPECT_EQ(record_str(full, 4), "wxyz");
  EXPECT_EQ(record_str("", 1), "");
}

TEST(KernelRows, NamesFromTheLogSymbols) {
  test::ScratchDir dir;
  const std::string path = dir.path("n.klog");
  KernelLogWriter w;
  ASSERT_TRUE(w.create(path, test::sample_meta()));
  ASSERT_TRUE(w.write_symbols({{0xffffffffc0a01230ULL, "error_irq_worker", "error"},
                               {2, "NO_SOCKET", "drop_reason"},
                               {3, "TCP_CSUM", "drop_reason"},
                               {0xffffffffc0b00010ULL, "cxi_link_worker", "link"}}));
  w.close();
  KernelLogReader r;
  std::string err;
  ASSERT_TRUE(r.open(path, &err)) << err;
  ASSERT_TRUE(r.read_all([](const ft_hdr&, const uint8_t*) {}, &err)) << err;
  const KernelNames n = KernelNames::from(r);
  ASSERT_EQ(n.functions.size(), 2u);
  EXPECT_EQ(n.functions.at(0xffffffffc0a01230ULL), "error_irq_worker");
  EXPECT_EQ(n.functions.at(0xffffffffc0b00010ULL), "cxi_link_worker");
  ASSERT_EQ(n.drop_reasons.size(), 2u);
  EXPECT_EQ(n.drop_reasons.at(2), "NO_SOCKET");
  EXPECT_EQ(n.drop_reasons.at(3), "TCP_CSUM");
}

}  // namespace
}  // namespace fabtrace
