#include "tests/report_fixtures/synthetic_job.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "common/op_kinds.h"
#include "common/oplog_file.h"
#include "common/report_writer.h"

namespace fabtrace::test {

namespace {

constexpr uint64_t kS = 1000000000ULL;
constexpr uint64_t kWall0 = 1767225600ULL * kS;  // 2026-01-01 00:00:00 UTC
constexpr uint64_t kMono0 = 1000ULL * kS;        // node 0's CLOCK_MONOTONIC at the job's start
constexpr uint64_t kNodeMonoStep = 48000ULL * kS;
constexpr uint64_t kNodeWallStep = kS / 2;
constexpr uint64_t kLocalStep = 1000000;  // 1 ms between the ranks of a node
constexpr double kDuration = 10.0;

OpRow row(const char* op, uint64_t bytes, uint64_t count, double p50, double p99) {
  OpRow o;
  o.op = op;
  o.bytes = bytes;
  o.count = count;
  o.p50_ns = p50;
  o.p99_ns = p99;
  o.avg_ns = (p50 * 9 + p99) / 10;
  o.min_ns = p50 / 2;
  o.max_ns = p99 * 1.5;
  o.gbps = static_cast<double>(bytes) / o.avg_ns;
  o.recv = op_is_recv(op_from_name(op));
  return o;
}

void mkdirs(const std::string& d) {
  std::string cur;
  for (size_t i = 0; i <= d.size(); ++i) {
    if (i == d.size() || d[i] == '/') {
      if (!cur.empty()) ::mkdir(cur.c_str(), 0755);
    }
    if (i < d.size()) cur += d[i];
  }
}

std::string stem(const ProcessReport& r) {
  return r.host + ".r" + r.rank + ".p" + std::to_string(r.pid);
}

}  // namespace

std::string SyntheticJob::address(int global_rank) {
  char b[64];
  std::snprintf(b, sizeof(b), "fi_addr_cxi://0x%05x", 0x10a00 + global_rank);
  return b;
}

std::string SyntheticJob::host(int node) {
  char b[32];
  std::snprintf(b, sizeof(b), "node%02d", node + 1);
  return b;
}

namespace {
std::string rendered(void (*write)(std::FILE*, const ProcessReport&), const ProcessReport& r) {
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  write(f, r);
  std::fclose(f);
  std::string s(buf, len);
  std::free(buf);
  return s;
}
}  // namespace

std::string report_json_text(const ProcessReport& r) { return rendered(write_report_json, r); }
std::string report_text(const ProcessReport& r) { return rendered(write_report_text, r); }

std::string make_fixture_dir(const std::string& tag) {
  const char* base = std::getenv("TMPDIR");
  std::string t =
      std::string(base && *base ? base : "/tmp") + "/fabtrace-report-" + tag + "-XXXXXX";
  if (!::mkdtemp(&t[0])) throw std::runtime_error("mkdtemp " + t);
  return t;
}

void remove_tree(const std::string& dir) {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

std::string report_name(const ProcessReport& r) { return "fabtrace." + stem(r) + ".json"; }

std::vector<int> peers_of(int g, int n, int peers) {
  std::vector<int> out;
  if (peers <= 0 || peers >= n - 1) {
    for (int p = 0; p < n; ++p)
      if (p != g) out.push_back(p);
    return out;
  }
  // Partners beyond h: the powers of two in (h, n).
  const auto partners = [n](int h) {
    int c = 0;
    for (int64_t b = 1; b < n; b <<= 1) c += b > h;
    return c;
  };
  int h = peers / 2;
  while (h > 1 && 2 * h + partners(h) > peers) --h;
  const bool with_partners = 2 * h + partners(h) <= peers;
  std::vector<char> is_peer(static_cast<size_t>(n), 0);
  for (int d = 1; d <= h; ++d) {
    is_peer[static_cast<size_t>((g + d) % n)] = 1;
    is_peer[static_cast<size_t>(((g - d) % n + n) % n)] = 1;
  }
  if (with_partners)
    for (int64_t b = 1; b < n; b <<= 1) {
      const int64_t p = g ^ b;
      if (b > h && p < n) is_peer[static_cast<size_t>(p)] = 1;
    }
  is_peer[static_cast<size_t>(g)] = 0;
  for (int p = 0; p < n; ++p)
    if (is_peer[static_cast<size_t>(p)]) out.push_back(p);
  return out;
}
// Rank g's receives from "(any)" (link `id`): the k-th send of every other
// rank p to g (its link to g is the index of g among p's peers), posted 5 us
// before (even k) or after (odd k) the send's issue on the wall clock, each
// completing 30 us after its post.
void add_receives(const SyntheticJob& job, int g, uint32_t id, std::vector<OplogLink>* links,
                  std::vector<oplog::OpEntry>* ops) {
  const ProcessReport& r = job.reports[static_cast<size_t>(g)];
  links->push_back(OplogLink{id, SyntheticJob::address(g), "(any)"});
  const int n = static_cast<int>(job.reports.size());
  for (const int p : peers_of(g, n, job.opt.peers)) {
    const ProcessReport& s = job.reports[static_cast<size_t>(p)];
    // The link's index at p: g's place among p's peers (the relation is symmetric).
    const std::vector<int> of_p = peers_of(p, n, job.opt.peers);
    const uint64_t link_at_p =
        static_cast<uint64_t>(std::lower_bound(of_p.begin(), of_p.end(), g) - of_p.begin());
    for (int k = 0; k < job.opt.oplog_ops_per_link; ++k) {
      const uint64_t send_wall =
          s.start_wall_ns + static_cast<uint64_t>(k) * 1000000 + link_at_p * 1000;
      const uint64_t post = send_wall - r.start_wall_ns + r.start_mono_ns;
      oplog::OpEntry e{};
      e.start_ticks = k % 2 ? post + 5000 : post - 5000;
      e.end_ticks = e.start_ticks + 30000;
      e.bytes = 65536;
      e.link_id = id;
      e.tid = static_cast<uint32_t>(r.pid);
      e.kind = static_cast<uint8_t>(OpKind::kTrecv);
      ops->push_back(e);
    }
  }
}

std::string oplog_name(const ProcessReport& r) { return "fabtrace_ops." + stem(r) + ".oplog"; }
std::string counter_name(const ProcessReport& r) { return "fabtrace_nic." + stem(r) + ".csv"; }

SyntheticJob make_synthetic_job(const SyntheticOptions& opt) {
  SyntheticJob j;
  j.opt = opt;
  const int n = opt.nodes * opt.ranks_per_node;
  if (n < 2) throw std::invalid_argument("a synthetic job needs two ranks");
  if (opt.peers == 1 || opt.peers < 0)
    throw std::invalid_argument("a sparse synthetic job needs 2 peers per rank or more");
  const int last = n - 1;
  const int stall_rank = opt.nodes > 1 ? opt.ranks_per_node : 0;
  std::vector<double> tsend_p99;

  for (int g = 0; g < n; ++g) {
    const int node = g / opt.ranks_per_node, local = g % opt.ranks_per_node;
    ProcessReport r;
    r.host = SyntheticJob::host(node);
    r.rank = std::to_string(g);
    r.pid = 1000 + g;
    r.providers = "cxi";
    r.start_mono_ns = kMono0 + node * kNodeMonoStep + local * kLocalStep;
    r.start_wall_ns = kWall0 + node * kNodeWallStep + local * kLocalStep;
    r.duration_s = kDuration;
    r.tsc = true;
    r.ns_per_tick = 0.5;
    r.ring_slots = 16384;

    const std::string me = SyntheticJob::address(g);
    uint64_t nic_ops = 0, nic_bytes = 0;
    const std::vector<int> peers = peers_of(g, n, opt.peers);
    for (const int p : peers) {
      LinkReport l;
      l.local = me;
      l.remote = SyntheticJob::address(p);
      const double p99 = (g == last && p == 0) ? 900000.0 : 20000.0 + 50.0 * ((g * 7 + p * 3) % 10);
      OpRow s = row("fi_tsend", 65536, 1000, 10000 + 100.0 * g, p99);
      if (g == 1 && p == 0) s.errors = 3;
      if (g == 0 && p == 1) s.eagain = 120;
      tsend_p99.push_back(p99);
      nic_ops += s.count;
      nic_bytes += s.count * s.bytes;
      l.rows.push_back(s);
      if (p == (g + 1) % n) {
        OpRow w = row("fi_write", 1 << 20, 100, 150000, 200000.0 + 1000.0 * (g % 3));
        if (g == last) w.unfinished = 2;
        nic_ops += w.count;
        nic_bytes += w.count * w.bytes;
        l.rows.push_back(w);
      }
      r.links.push_back(std::move(l));
    }
    {
      LinkReport l;
      l.local = me;
      l.remote = "(any)";
      OpRow rv = row("fi_trecv", 65536, 1000ULL * peers.size(), 15000, 2e6);
      rv.within_50us = g == 1 ? rv.count * 9 / 10 : rv.count / 20;
      if (g == 1) {
        j.late_imm = rv.within_50us;
        j.late_count = rv.count;
      }
      l.rows.push_back(rv);
      r.links.push_back(std::move(l));
    }
    NicReport nic;
    nic.domain = "cxi" + std::to_string(local);
    nic.locals = {me};
    nic.ops = nic_ops;
    nic.bytes = nic_bytes;
    nic.gbps = 10.0 + g;
    nic.busy_ns = static_cast<double>(nic_bytes) / nic.gbps;
    r.nics.push_back(nic);
    for (uint32_t c = 0; c < 2; ++c) {
      CqReport q;
      q.id = c;
      q.polls = 100000 + g;
      q.gaps[0] = 99000;
      q.gaps[1] = 900;
      q.gaps[2] = 90;
      q.gaps[3] = 10;
      q.max_gap_ns = 1e6 * (1 + c) + 1e5 * g;
      q.max_gap_end_s = 1.0 + 0.1 * g;
      if (g == stall_rank && c == 1) {
        q.gaps[4] = 1;
        q.max_gap_ns = 250e6;
        q.max_gap_end_s = 3.25;
      }
      r.cqs.push_back(q);
    }
    j.reports.push_back(std::move(r));
  }

  // Known answers.
  j.first_wall_ns = kWall0;
  for (const ProcessReport& r : j.reports) {
    j.last_wall_ns =
        std::max(j.last_wall_ns, r.start_wall_ns + static_cast<uint64_t>(kDuration * 1e9));
    for (const LinkReport& l : r.links)
      for (const OpRow& o : l.rows) {
        j.ops += o.issued();
        j.completed += o.count;
        if (!o.recv) j.bytes += o.count * o.bytes;
        j.errors += o.errors;
        j.eagain += o.eagain;
        j.unfinished += o.unfinished;
      }
  }
  std::sort(tsend_p99.begin(), tsend_p99.end());
  j.tsend_median_p99_ns = tsend_p99[(tsend_p99.size() - 1) / 2];
  j.slow_host = j.reports[static_cast<size_t>(last)].host;
  j.slow_rank = j.reports[static_cast<size_t>(last)].rank;
  j.slow_local = SyntheticJob::address(last);
  j.slow_remote = SyntheticJob::address(0);
  j.slow_p99_ns = 900000.0;
  const ProcessReport& sr = j.reports[static_cast<size_t>(stall_rank)];
  j.stall_host = sr.host;
  j.stall_rank = sr.rank;
  j.stall_cq = 1;
  j.stall_gap_ns = 250e6;
  j.stall_end_wall_ns = sr.start_wall_ns + 3250000000ULL;
  j.stall_end_job_s = static_cast<double>(j.stall_end_wall_ns - j.first_wall_ns) / 1e9;
  j.late_host = j.reports[1].host;
  j.late_rank = j.reports[1].rank;
  j.ops_dropped = opt.oplogs ? 7 : 0;
  j.oplog_ops_per_rank = static_cast<uint64_t>(opt.oplog_ops_per_link) *
                         peers_of(0, n, opt.peers).size() * (opt.oplog_recvs ? 2 : 1);
  j.octets_rate_per_s = opt.counters ? 1e9 : 0;
  return j;
}

std::vector<std::string> write_synthetic_job(const SyntheticJob& job, const std::string& dir,
                                             bool per_node_dirs) {
  std::vector<std::string> paths;
  mkdirs(dir);
  const int n = static_cast<int>(job.reports.size());
  for (int g = 0; g < n; ++g) {
    const ProcessReport& r = job.reports[static_cast<size_t>(g)];
    const std::string d = per_node_dirs ? dir + "/" + r.host : dir;
    mkdirs(d);
    {
      const std::string p = d + "/" + report_name(r);
      std::FILE* f = std::fopen(p.c_str(), "w");
      if (!f) throw std::runtime_error("cannot write " + p);
      write_report_json(f, r);
      std::fclose(f);
      paths.push_back(p);
    }
    if (job.opt.oplogs) {
      const std::string p = d + "/" + oplog_name(r);
      OplogFileWriter w;
      if (!w.open(p, OplogMeta{r.host, r.rank, r.pid}))
        throw std::runtime_error("cannot write " + p);
      OplogCalib cal;
      cal.tsc = false;
      cal.ns_per_tick = 1.0;
      cal.tick0 = r.start_mono_ns;
      cal.mono0_ns = r.start_mono_ns;
      cal.real0_ns = r.start_wall_ns;
      cal.pairs = 2;
      w.write_calib(cal);
      std::vector<OplogLink> links;
      std::vector<oplog::OpEntry> ops;
      uint32_t id = 0;
      for (const int p2 : peers_of(g, n, job.opt.peers)) {
        links.push_back(OplogLink{id, SyntheticJob::address(g), SyntheticJob::address(p2)});
        for (int k = 0; k < job.opt.oplog_ops_per_link; ++k) {
          oplog::OpEntry e{};
          e.start_ticks = r.start_mono_ns + static_cast<uint64_t>(k) * 1000000 + id * 1000;
          e.end_ticks = e.start_ticks + 20000;
          if (job.opt.varied_durations)
            e.end_ticks += static_cast<uint64_t>((k * 7 + g) % 13) * 1000;
          e.bytes = 65536;
          e.link_id = id;
          e.tid = static_cast<uint32_t>(r.pid);
          e.kind = static_cast<uint8_t>(OpKind::kTsend);
          ops.push_back(e);
        }
        ++id;
      }
      if (job.opt.oplog_recvs) add_receives(job, g, id, &links, &ops);
      w.write_links(links);
      w.write_ops(ops.data(), ops.size());
      w.write_end(ops.size(), g == 1 ? 7 : 0, 0);
      w.close();
      paths.push_back(p);
    }
    if (job.opt.counters) {
      const std::string p = d + "/" + counter_name(r);
      std::FILE* f = std::fopen(p.c_str(), "w");
      if (!f) throw std::runtime_error("cannot write " + p);
      const std::string dev = "cxi" + std::to_string(g % job.opt.ranks_per_node);
      const int samples = job.opt.counter_samples;
      std::fprintf(f, "# fabtrace-counters v1 host=%s rank=%s pid=%ld\n", r.host.c_str(),
                   r.rank.c_str(), r.pid);
      std::fprintf(
          f,
          "# interval_ms=100 achieved_mean_ms=100.000 devices=%s counters=6 samples=%d dropped=0 "
          "read_errors=1\n",
          dev.c_str(), samples);
      std::fprintf(f, "# clock t_mono_ns=CLOCK_MONOTONIC ns; wall_ns=CLOCK_REALTIME\n");
      std::fprintf(f, "# dev %s nic_addr=0x%x nid=%d\n", dev.c_str(), 0x10a00 + g, g);
      const char* names[] = {
          "hni_sts_tx_ok_octets", "hni_pkts_sent", "rh:nacks", "cq_in_use", "hni_idle",
          "hni_rx_paused"};
      std::fprintf(f, "t_mono_ns,wall_ns,%s:telemetry_wall_ns", dev.c_str());
      for (const char* c : names) std::fprintf(f, ",%s:%s", dev.c_str(), c);
      std::fputc('\n', f);
      for (int s = 0; s < samples; ++s) {
        const uint64_t t = r.start_mono_ns + static_cast<uint64_t>(s) * 100000000ULL;
        const uint64_t wall = t - r.start_mono_ns + r.start_wall_ns;
        // Sample 20's octets read failed (0).
        const uint64_t octets =
            s == 20 ? 0 : 5000000000ULL + static_cast<uint64_t>(s) * 100000000ULL;
        const uint64_t pkts = 1000 + static_cast<uint64_t>(s) * 2000;
        const uint64_t nacks = static_cast<uint64_t>(s / 5);
        const uint64_t in_use = 3 + static_cast<uint64_t>(s % 3);
        const uint64_t paused = s < 10 ? 0 : s < 30 ? 1 : 2;
        std::fprintf(f, "%llu,%llu,%llu,%llu,%llu,%llu,%llu,7,%llu\n",
                     static_cast<unsigned long long>(t), static_cast<unsigned long long>(wall),
                     static_cast<unsigned long long>(wall), static_cast<unsigned long long>(octets),
                     static_cast<unsigned long long>(pkts), static_cast<unsigned long long>(nacks),
                     static_cast<unsigned long long>(in_use),
                     static_cast<unsigned long long>(paused));
      }
      std::fclose(f);
      paths.push_back(p);
    }
  }
  return paths;
}

}  // namespace fabtrace::test
