#include "tests/report_fixtures/kernel_fixture.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <cstring>
#include <stdexcept>

#include "common/kernel_log.h"
#include "common/output_names.h"
#include "tests/unit/kernel_records.h"

namespace fabtrace::test {

namespace {

void set(char* dst, size_t n, const char* src) {
  std::memset(dst, 0, n);
  std::strncpy(dst, src, n - 1);
}

// One thread per traced process here: tid = pid.
ft_hdr hdr(uint16_t kind, uint16_t size, uint64_t ts, uint32_t cpu, uint32_t pid) {
  return make_hdr(kind, size, ts, cpu, pid, pid);
}

ft_tuple tuple(uint16_t sport, uint16_t dport) {
  ft_tuple t{};
  t.family = AF_INET;
  inet_pton(AF_INET, "10.0.0.1", t.saddr);
  inet_pton(AF_INET, "10.0.0.1", t.daddr);
  t.sport = sport;
  t.dport = dport;
  return t;
}

}  // namespace

KernelFixture write_kernel_fixture(const std::string& dir) {
  KernelFixture f;
  SyntheticOptions o;
  o.nodes = 1;
  o.ranks_per_node = 2;
  o.oplogs = false;
  o.counters = false;
  f.job = make_synthetic_job(o);
  // TCP addresses, as the tcp;ofi_rxm provider names its endpoints.
  const std::string a[2] = {"fi_sockaddr_in://10.0.0.1:50000", "fi_sockaddr_in://10.0.0.1:50001"};
  const std::string old[2] = {SyntheticJob::address(0), SyntheticJob::address(1)};
  for (ProcessReport& r : f.job.reports) {
    for (LinkReport& l : r.links)
      for (std::string* s : {&l.local, &l.remote})
        for (int k = 0; k < 2; ++k)
          if (*s == old[k]) *s = a[k];
    for (NicReport& n : r.nics)
      for (std::string& s : n.locals)
        for (int k = 0; k < 2; ++k)
          if (s == old[k]) s = a[k];
    for (CqReport& q : r.cqs) {
      q.max_gap_ns = 1e6;  // every other CQ: a 1 ms gap, not in the log
      q.max_gap_end_s = 1.0;
    }
  }
  f.job.reports[0].cqs[0].max_gap_ns = f.gap0_ns;
  f.job.reports[0].cqs[0].max_gap_end_s = 2.0;
  f.job.reports[1].cqs[0].max_gap_ns = f.gap1_ns;
  f.job.reports[1].cqs[0].max_gap_end_s = 3.0;
  f.pid0 = f.job.reports[0].pid;
  f.pid1 = f.job.reports[1].pid;
  f.addr0 = a[0];
  f.addr1 = a[1];
  write_synthetic_job(f.job, dir);

  // The kernel log, on the node's CLOCK_MONOTONIC.
  const ProcessReport& r0 = f.job.reports[0];
  const ProcessReport& r1 = f.job.reports[1];
  const uint32_t p0 = static_cast<uint32_t>(f.pid0), p1 = static_cast<uint32_t>(f.pid1);
  const uint64_t end0 = r0.start_mono_ns + 2000000000ull;
  const uint64_t end1 = r1.start_mono_ns + 3000000000ull;
  KernelLogMeta m;
  m.host = r0.host;
  m.pid = 4000;
  m.kernel = "6.18.0-test";
  m.mono_ns = r0.start_mono_ns;
  m.real_ns = r0.start_wall_ns;
  m.attach = {{"sched", "tp_btf/sched_switch", "attached", ""},
              {"cxi", "raw_tp/cass_err", "absent", "no tracepoint cass_err (module not loaded)"}};
  f.klog = dir + "/" + kernel_log_file_name(m.host, m.pid);
  KernelLogWriter w;
  if (!w.create(f.klog, m)) throw std::runtime_error(w.error());
  w.write_tasks({{f.pid0, f.pid0, "app", "0", "/bin/app", true},
                 {f.pid1, f.pid1, "app", "1", "/bin/app", true}});
  w.write_symbols({{62, "TC_EGRESS", "drop_reason"}});

  // Rank 0's thread preempted by stress-ng inside its gap.
  ft_offcpu off{};
  off.h = hdr(FT_EV_OFFCPU, sizeof(off), end0 - 2000000, 1, p0);
  off.start = end0 - 50200000 + 100000;
  off.syscall = -1;
  off.cpu_out = 1;
  off.off_kind = FT_OFF_PREEMPTED;
  off.out_pid = off.ran_pid = 4312;
  set(off.out_comm, FT_COMM_LEN, "stress-ng");
  set(off.ran_comm, FT_COMM_LEN, "stress-ng");
  off.ran_ns = 48100000;
  w.append(&off, sizeof(off));

  ft_irq irq{};
  for (int k = 0; k < 2; ++k) {
    irq.h = hdr(FT_EV_IRQ, sizeof(irq), end0 + 1000000 + k * 1000000, 1, p0);
    irq.start = irq.h.ts - 50000;
    irq.irq = 24;
    set(irq.name, FT_NAME_LEN, "virtio0-input.0");
    w.append(&irq, sizeof(irq));
  }

  ft_stall s0{};
  s0.h = hdr(FT_EV_STALL, sizeof(s0), end0 + 1000, 1, p0);
  s0.cq = 0;
  s0.w.start = end0 - 50200000;
  s0.w.end = end0;
  s0.w.runnable_ns = 48100000;
  s0.w.on_cpu_ns = 2100000;
  s0.w.offcpu_count = 1;
  s0.w.top[0].pid = 4312;
  s0.w.top[0].ns = 48100000;
  set(s0.w.top[0].comm, FT_COMM_LEN, "stress-ng");
  w.append(&s0, sizeof(s0));

  ft_stall s1{};
  s1.h = hdr(FT_EV_STALL, sizeof(s1), end1 + 1000, 0, p1);
  s1.cq = 0;
  s1.w.start = end1 - 10000000;
  s1.w.end = end1;
  s1.w.futex_ns = 9800000;
  s1.w.on_cpu_ns = 200000;
  s1.w.offcpu_count = 1;
  w.append(&s1, sizeof(s1));

  // The first retransmit record carries two segments (one skb, as TSO sends
  // them), the others none stated (a log from before the field: one each), so
  // the f.retrans segments take one record less.
  const uint64_t retrans_records = f.retrans >= 2 ? f.retrans - 1 : f.retrans;
  for (uint64_t k = 0; k < retrans_records + f.drops; ++k) {
    ft_net n{};
    const bool drop = k >= retrans_records;
    n.h = hdr(drop ? FT_EV_DROP : FT_EV_RETRANS, sizeof(n), end0 + 5000000 + k * 1000, 0, 0);
    n.t = tuple(41000, 50001);  // rank 0 connected to rank 1's listening port
    n.state = 1;
    n.protocol = 6;
    n.reason = drop ? 62 : 0;
    n.owner_pid = p0;
    n.segs = !drop && k == 0 && f.retrans >= 2 ? 2 : 0;
    w.append(&n, sizeof(n));
  }
  for (uint64_t k = 0; k < f.untraced_retrans; ++k) {
    ft_net n{};
    n.h = hdr(FT_EV_RETRANS, sizeof(n), end0 + 6000000 + k * 1000, 0, 0);
    n.t = tuple(22, 51234);  // someone's ssh
    n.state = 1;
    w.append(&n, sizeof(n));
  }

  ft_op slow{};
  slow.h = hdr(FT_EV_SLOW_OP, sizeof(slow), end0 + 20000000, 1, p0);
  slow.bytes = 4096;
  slow.op = 0;
  set(slow.local, FT_ADDR_LEN, a[0].c_str());
  set(slow.remote, FT_ADDR_LEN, a[1].c_str());
  slow.w.start = end0 + 8000000;
  slow.w.end = end0 + 20000000;
  slow.w.on_cpu_ns = 12000000;
  slow.w.faults = 300;
  w.append(&slow, sizeof(slow));

  KernelStats st;
  st.emitted[FT_EV_STALL] = 2;
  w.write_stats(st);
  w.write_end(30000000000ull);
  w.close();
  return f;
}

}  // namespace fabtrace::test
