#include "userspace/record/collector.h"

#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "bpf/uprobe_ops.h"
#include "common/clock.h"
#include "common/cxi_counters.h"
#include "common/kernel_classify.h"
#include "common/output_names.h"
#include "common/report_writer.h"
#include "common/safe_output.h"
#include "userspace/record/uprobe_report.h"
#include "userspace/record/uprobe_symbols.h"

namespace fabtrace {

namespace {

constexpr uint64_t kScanNs = 500000000;    // /proc rescan
constexpr uint64_t kStatsNs = 2000000000;  // kernel counters into the log

std::string host_name() {
  char h[256] = {};
  if (gethostname(h, sizeof(h) - 1) != 0) return "unknown";
  return h;
}

std::string read_small(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  if (s.size() > 256) s.resize(256);
  return s;
}

std::string read_kallsyms() {
  std::ifstream in("/proc/kallsyms");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

// The node's Cassini counters, sampled once for all its ranks (every device).
struct Collector::NodeCounters {
  explicit NodeCounters(CounterSampler::Config c) : sampler(std::move(c)) {}
  CounterSampler sampler;
};

Collector::Collector(CollectorOptions opt) : opt_(std::move(opt)), scanner_(opt_.proc_root) {}

bool Collector::start(std::string* error) {
  start_ns_ = mono_ns();
  if (opt_.bpf.cxi_work.empty()) opt_.bpf.cxi_work = cxi_work_symbols(read_kallsyms());
  // The preloads already running or about to be launched: their USDT probes.
  for (const ScannedProcess& p : scanner_.scan(getpid()))
    if (p.preload) opt_.bpf.usdt_libraries.push_back(p.preload_path);
  // --only-pids: the probes for these processes only, not for every process
  // that maps the library (whose preloads would then see a session).
  if (!opt_.discover) opt_.bpf.only_pids = opt_.pids;
  // --uprobes: where the providers' data path is, from a helper that opens them
  // (before any thread of ours exists: it forks).
  if (opt_.bpf.uprobes && opt_.bpf.uprobe_sites.empty()) {
    const uint64_t t0 = mono_ns();
    OptableResult r = probe_optables(opt_.uprobe_providers, 20000);
    char took[96];
    std::snprintf(took, sizeof(took), "the helper read the op tables in %.2f s",
                  static_cast<double>(mono_ns() - t0) / 1e9);
    r.notes.push_back(took);
    SymbolOptions so;
    so.providers = opt_.uprobe_providers;
    so.symbols_file = opt_.symbols_file;
    so.by_name = opt_.uprobe_by_name;
    if (!apply_symbols(so, &r, error)) return false;
    opt_.bpf.uprobe_sites = std::move(r.sites);
    opt_.bpf.uprobe_layouts = r.layouts;
    uprobe_notes_ = std::move(r.notes);
    if (r.layouts.empty())
      uprobe_notes_.push_back(
          "CQs and endpoints opened before the session: not learnt (no layout)");
    for (const UprobeLayout& l : r.layouts)
      uprobe_notes_.push_back("CQs and endpoints opened before the session: learnt (" + l.path +
                              ": " + l.describe() + "; " + l.provider + ")");
  }
  if (!session_.start(opt_.bpf, error)) return false;

  KernelLogMeta m;
  m.host = host_name();
  m.pid = getpid();
  struct utsname u;
  if (uname(&u) == 0) m.kernel = u.release;
  m.boot_id = read_small("/proc/sys/kernel/random/boot_id");
  m.command = opt_.command;
  m.mono_ns = mono_ns();
  m.real_ns = real_ns();
  m.options["polls"] = opt_.bpf.polls ? "1" : "0";
  m.options["net_all"] = opt_.bpf.net_all ? "1" : "0";
  m.options["min_offcpu_ns"] = std::to_string(opt_.bpf.min_offcpu_ns);
  m.options["uprobes"] = opt_.bpf.uprobes ? "1" : "0";
  m.attach = session_.attach_list();
  const std::string path = opt_.dir + "/" + kernel_log_file_name(m.host, m.pid);
  if (!log_.create(path, m)) {
    *error = "cannot write the kernel log: " + log_.error();
    return false;
  }
  std::vector<KernelSymbol> syms = opt_.bpf.cxi_work;
  for (const KernelSymbol& d : BpfSession::drop_reason_names()) syms.push_back(d);
  log_.write_symbols(syms);

  if (opt_.node_counters) {
    // The same settings as the preload's sampler, but every device of the node
    // (unless FABTRACE_NIC_DEV names some): one file for all its ranks.
    CounterSampler::Config c = CounterSampler::config_from_env();
    if (!std::getenv("FABTRACE_NIC_DEV")) c.devices = "all";
    // A node without cxi devices: nothing to say (as the preload's sampler).
    struct stat st;
    if (c.enabled && ::stat(c.sysfs_root.c_str(), &st) == 0) {
      counters_ = std::make_shared<NodeCounters>(c);
      if (!counters_->sampler.start()) counters_.reset();  // no cxi device: silent
    }
  }
  scan();
  return true;
}

void Collector::scan() {
  last_scan_ = mono_ns();
  std::vector<ScannedProcess> found;
  if (opt_.discover) {
    found = scanner_.scan(getpid());
  } else if (opt_.bpf.uprobes) {
    // --only-pids: the others are not traced, but one that starts during the
    // session is named, so that its missing rows are not taken for idleness.
    for (ScannedProcess& p : scanner_.scan(getpid())) {
      const bool listed = std::find(opt_.pids.begin(), opt_.pids.end(), p.pid) != opt_.pids.end();
      if (listed || p.libfabric_path.empty() || !outside_.insert(p.pid).second) continue;
      if (scanned_once_) unprobed_later_.push_back(std::move(p));
    }
  }
  scanned_once_ = true;
  for (pid_t pid : opt_.pids) {
    ScannedProcess p;
    if (!scanner_.inspect(pid, &p)) {
      // Traced at the kernel level even without libfabric mapped.
      p.pid = pid;
      std::ifstream in(opt_.proc_root + "/" + std::to_string(pid) + "/comm");
      if (!in) continue;
      std::getline(in, p.comm);
    }
    found.push_back(p);
  }
  std::vector<KernelTask> tasks;
  for (const ScannedProcess& p : found) {
    const bool is_new = known_.insert(p.pid).second;
    if (p.preload) preloaded_.insert(p.pid);
    if (is_new) {
      session_.trace_process(p.pid, mono_ns());
      if (p.preload) session_.attach_usdt_library(p.preload_path);
      for (const ScannedThread& t : p.threads)
        tasks.push_back({p.pid, t.tid, t.comm, p.rank, p.exe, p.preload});
      if (p.threads.empty()) tasks.push_back({p.pid, p.pid, p.comm, p.rank, p.exe, p.preload});
    }
    // Connections change while the job runs: the traced process's sockets are
    // registered at every scan (an update of what is there is cheap).
    for (const ScannedConn& c : scanner_.tcp_conns(p.pid)) {
      if (c.state == 0x0A)
        session_.trace_listen_port(c.tuple.sport, p.pid);
      else
        session_.trace_connection(c.tuple, p.pid);
    }
  }
  if (!tasks.empty()) log_.write_tasks(tasks);
}

void Collector::on_record(const void* data, size_t size) {
  if (size < sizeof(ft_hdr)) {
    ++malformed_;
    return;
  }
  ft_hdr h;
  std::memcpy(&h, data, sizeof(h));
  if (h.size != size && !(h.size <= size && size - h.size < 8)) {
    ++malformed_;
    return;
  }
  if (!log_.append(data, h.size) && !log_failed_) {
    log_failed_ = true;
    std::fprintf(stderr, "fabtrace record: %s\n", log_.error().c_str());
  }
}

// --uprobes: one FT_EV_UPROBE_OPS record per (process, op kind, endpoint,
// peer), one FT_EV_UPROBE_CQ per polled CQ, and every site with its hits as a symbol of class
// "uprobe_site" (addr = the file offset).
void Collector::write_uprobes() {
  uprobe_rows_ = session_.uprobe_rows();
  uprobe_cqs_ = session_.uprobe_cqs();
  uprobe_names_ = session_.uprobe_names();
  uprobe_lost_ = session_.uprobe_lost();
  uprobe_hits_ = session_.uprobe_site_hits();
  const uint64_t now = mono_ns();
  for (const UprobeRow& r : uprobe_rows_) {
    const ft_uprobe_ops rec = r.record(now);
    on_record(&rec, sizeof(rec));
  }
  for (const UprobeCq& q : uprobe_cqs_) {
    const ft_uprobe_cq rec = q.record(now);
    on_record(&rec, sizeof(rec));
  }
  std::vector<KernelSymbol> syms;
  const std::vector<OpSite>& sites = session_.uprobe_sites();
  for (size_t i = 0; i < sites.size(); ++i) {
    const OpSite& s = sites[i];
    syms.push_back({s.offset,
                    s.what() + " " + s.path +
                        " hits=" + std::to_string(i < uprobe_hits_.size() ? uprobe_hits_[i] : 0),
                    kernel_log::kUprobeSiteClass});
  }
  log_.write_symbols(syms);
  write_uprobe_reports();
}

// --uprobes: each process without the preload that issued ops gets the
// per-rank report the preload would have written (uprobe_report.h), in the
// session's directory, so that `fabtrace report DIR` reads it.
void Collector::write_uprobe_reports() {
  UprobeReportContext ctx;
  ctx.host = host_name();
  const uint64_t now = mono_ns();
  ctx.start_mono_ns = start_ns_;
  ctx.start_wall_ns = real_ns() - (now - start_ns_);
  ctx.duration_s = static_cast<double>(now - start_ns_) / 1e9;
  std::set<uint32_t> pids;
  for (const UprobeRow& r : uprobe_rows_)
    if (r.op != FT_UP_OP_POLLS) pids.insert(r.pid);
  for (const uint32_t pid : pids) {
    // A process with the preload writes its own (found by a scan while the
    // session ran, or now if it still runs).
    if (preloaded_.count(static_cast<pid_t>(pid))) continue;
    ScannedProcess p;
    const bool seen = scanner_.inspect(static_cast<pid_t>(pid), &p);
    if (seen && p.preload) continue;
    ctx.rank = seen ? p.rank : "";
    const ProcessReport rep =
        uprobe_process_report(pid, uprobe_rows_, uprobe_names_, ctx, uprobe_cqs_);
    const std::string path =
        opt_.dir + "/" + output_file_name(OutputKind::kReportJson, ctx.host, rep.rank, pid);
    std::string err;
    std::FILE* f = create_new_stream(path, &err);
    if (!f) {
      std::fprintf(stderr, "fabtrace record: uprobes report of pid %u: %s\n", pid, err.c_str());
      continue;
    }
    write_report_json(f, rep);
    std::fclose(f);
  }
}

void Collector::step(int wait_ms) {
  session_.poll(wait_ms, [this](const void* d, size_t n) { on_record(d, n); });
  const uint64_t now = mono_ns();
  if (now - last_scan_ >= kScanNs) scan();
  if (now - last_flush_ >= opt_.flush_ms * 1000000ULL) {
    log_.flush();
    last_flush_ = now;
  }
  if (now - last_stats_ >= kStatsNs) {
    log_.write_stats(session_.stats());
    last_stats_ = now;
  }
}

void Collector::finish() {
  // What the programs emitted up to now.
  for (int i = 0; i < 100; ++i)
    if (session_.poll(0, [this](const void* d, size_t n) { on_record(d, n); }) <= 0) break;
  if (opt_.bpf.uprobes) write_uprobes();
  log_.write_stats(session_.stats());
  log_.write_end(mono_ns() - start_ns_);
  log_.close();
  if (counters_) {
    counters_->sampler.stop();
    if (counters_->sampler.samples()) {
      const std::string host = host_name();
      counters_path_ = opt_.dir + "/" + node_counters_file_name(host, getpid());
      if (!counters_->sampler.write_csv(counters_path_, host, kNodeCountersRank, getpid()))
        counters_path_.clear();
    }
  }
}

}  // namespace fabtrace
