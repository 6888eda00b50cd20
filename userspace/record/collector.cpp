#include "userspace/record/collector.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
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
#include "common/block_file.h"
#include "common/clock.h"
#include "common/decimal.h"
#include "common/kernel_classify.h"
#include "common/op_kinds.h"
#include "common/output_names.h"
#include "common/printable.h"
#include "common/report_writer.h"
#include "common/safe_output.h"
#include "sampler/cxi_counters.h"
#include "userspace/record/uprobes/uprobe_report.h"
#include "userspace/record/uprobes/uprobe_symbols.h"

namespace fabtrace {

namespace {

constexpr uint64_t kScanNs = 500000000;  // /proc rescan
// The kernel's counters into the log (what a killed session keeps; a read is
// some 85 map and program lookups).
constexpr uint64_t kStatsNs = 10000000000;
// --uprobes: the rows that changed into the log (what a killed session keeps).
constexpr uint64_t kUprobeRowsNs = 5000000000;

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

std::string Collector::host_name() {
  char h[256] = {};
  if (gethostname(h, sizeof(h) - 1) != 0) return "unknown";
  return h;
}

// The node's Cassini counters, sampled once for all its ranks (every device).
struct Collector::NodeCounters {
  explicit NodeCounters(CounterSampler::Config c) : sampler(std::move(c)) {}
  CounterSampler sampler;
};

Collector::Collector(CollectorOptions opt)
    : opt_(std::move(opt)), watch_(opt_.proc_root), raw_windows_(opt_.raw_windows) {
  // The softirqs --raw windows would not write are summed in the kernel
  // instead of sent one by one: the collector's work is per event.
  opt_.bpf.min_softirq_ns =
      opt_.raw == CollectorOptions::Raw::kWindows ? opt_.raw_windows.min_softirq_ns : 0;
}

namespace {

const char* raw_name(CollectorOptions::Raw r) {
  switch (r) {
    case CollectorOptions::Raw::kAll:
      return "all";
    case CollectorOptions::Raw::kNone:
      return "none";
    default:
      return "windows";
  }
}

}  // namespace

bool Collector::start(std::string* error) {
  start_ns_ = mono_ns();
  // Refused before anything is created: not root, another session, a
  // directory that is not root's or the invoking user's (safe_output.h).
  if (geteuid() != 0) {
    *error = "needs root (it loads BPF programs and attaches to kernel tracepoints)";
    return false;
  }
  if (!lock_.acquire(error, opt_.lock_dir)) return false;
  std::string why;
  // A template's own directories, one at a time, each walked as dir_ is.
  if (opt_.owned) {
    if (!dir_.open_owned_by(opt_.dir, opt_.owner_uid, opt_.owner_gid, &why)) {
      *error = "cannot use the output directory " + why;
      return false;
    }
  }
  for (size_t slash = opt_.owned || opt_.create_from == std::string::npos
                          ? std::string::npos
                          : opt_.dir.find('/', opt_.create_from);
       slash != std::string::npos; slash = opt_.dir.find('/', slash + 1)) {
    OutputDir part;
    if (!part.open(opt_.dir.substr(0, slash), true, &why)) {
      *error = "cannot use the output directory " + why;
      return false;
    }
  }
  if (!opt_.owned && !dir_.open(opt_.dir, true, &why)) {
    *error = "cannot use the output directory " + why;
    return false;
  }
  if (opt_.bpf.cxi_work.empty()) opt_.bpf.cxi_work = cxi_work_symbols(read_kallsyms());
  // --only-pids: the probes for these processes only, not for every process
  // that maps the library (whose preloads would then see a session).
  if (!opt_.discover) opt_.bpf.only_pids = opt_.pids;
  opt_.bpf.session_start_ns = start_ns_;
  // --uprobes: where the providers' data path is, from a helper that opens them
  // (before any thread of ours exists: it forks).
  if (opt_.bpf.uprobes.enabled && opt_.bpf.uprobes.sites.empty()) {
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
    opt_.bpf.uprobes.sites = std::move(r.sites);
    opt_.bpf.uprobes.layouts = r.layouts;
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
  m.options["uprobes"] = opt_.bpf.uprobes.enabled ? "1" : "0";
  m.options["raw"] = raw_name(opt_.raw);
  m.options["raw_margin_ns"] = std::to_string(opt_.raw_windows.margin_ns);
  m.options[kernel_log::kMinSoftirqOption] = std::to_string(opt_.raw_windows.min_softirq_ns);
  m.options["max_size"] = std::to_string(opt_.max_log_bytes);
  m.options[kernel_log::kSummaryOption] = "1";
  m.attach = session_.attach_list();
  // A name already taken (a file or link planted at the predictable name) costs
  // the next free name and one line, never the session.
  std::string name, note;
  const int fd = dir_.create(kernel_log_file_name(m.host, m.pid), &name, &note, &why);
  if (fd < 0 || !log_.create(fd, dir_.path_of(name), m)) {
    *error = "cannot write the kernel log: " + (fd < 0 ? why : log_.error());
    return false;
  }
  if (!note.empty()) std::fprintf(stderr, "fabtrace record: %s\n", note.c_str());
  log_name_ = name;
  last_summary_ = mono_ns();
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
  // The latest stalls for `fabtrace top` and `fabtrace metrics`: a session
  // without them still records.
  if (!opt_.live_dir.empty() && !live_.open(opt_.live_dir, &why))
    std::fprintf(stderr, "fabtrace record: no live stalls for fabtrace top: %s\n", why.c_str());
  // Published by a thread of their own, from a ring of their own
  // (live_thread.h): without them, the session still records.
  if (live_.is_open() && !live_.start(&session_, opt_.proc_root)) {
    std::fprintf(stderr, "fabtrace record: no live stalls for fabtrace top: %s\n",
                 "the programs that send them are not loaded");
    live_.close();
  }
  scan();
  return true;
}

void Collector::find_own_threads() {
  std::vector<uint32_t> tids;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (struct dirent* e = ::readdir(d))
      if (e->d_name[0] >= '0' && e->d_name[0] <= '9')
        tids.push_back(static_cast<uint32_t>(std::strtoul(e->d_name, nullptr, 10)));
    ::closedir(d);
  }
  summaries_.set_self(tids);
}

void Collector::scan() {
  last_scan_ = mono_ns();
  std::vector<ScannedProcess> found;
  // Taken before /proc is read: a change made after it is read at the next scan.
  ProcChanges changes;
  const ProcChanges* told = session_.take_proc_changes(&changes) ? &changes : nullptr;
  // Its own threads: at the first scan, and when the kernel says it made one.
  if (!scanned_once_ || !told || changes.pids.count(getpid())) find_own_threads();
  if (opt_.discover) {
    found = watch_.scan(getpid(), last_scan_, told);
  } else if (opt_.bpf.uprobes.enabled) {
    // --only-pids: the others are not traced, but one that starts during the
    // session is named, so that its missing rows are not taken for idleness.
    for (ScannedProcess& p : watch_.scan(getpid(), last_scan_, told)) {
      const bool listed = std::find(opt_.pids.begin(), opt_.pids.end(), p.pid) != opt_.pids.end();
      if (listed || p.libfabric_path.empty() || !outside_.insert(p.pid).second) continue;
      if (scanned_once_) unprobed_later_.push_back(std::move(p));
    }
  }
  scanned_once_ = true;
  for (pid_t pid : opt_.pids) {
    ScannedProcess p;
    if (!watch_.scanner().inspect(pid, &p)) {
      // Traced at the kernel level even without libfabric mapped.
      p.pid = pid;
      std::ifstream in(opt_.proc_root + "/" + std::to_string(pid) + "/comm");
      if (!in) continue;
      std::getline(in, p.comm);
    }
    found.push_back(p);
  }
  std::vector<KernelTask> tasks;
  // Every process found traced first, then their connections read: a table
  // read once for a namespace's processes (proc_watch.h) is read after each of
  // them is traced, so that the programs see what it misses.
  for (const ScannedProcess& p : found)
    if (!known_.count(p.pid)) session_.trace_process(p.pid, mono_ns());
  for (const ScannedProcess& p : found) {
    const bool is_new = known_.insert(p.pid).second;
    // A --pid process may be listed before its exec (slurmstepd's task, forked
    // and held until the session runs: docs/slurm.md): it maps the preload, and
    // has its rank, from a later scan on; then its probes and its name.
    const bool new_preload = p.preload && preloaded_.insert(p.pid).second;
    // Its rank read now (the process may be gone at the end), or once it has one.
    std::string& rank = ranks_[p.pid];
    if (is_new || (rank.empty() && !p.rank.empty())) {
      rank = p.rank;
      live_.known(p.pid, p.uid, p.rank);
    }
    if (new_preload) attach_preload(p);
    if (is_new || new_preload) {
      for (const ScannedThread& t : p.threads)
        tasks.push_back({p.pid, t.tid, t.comm, p.rank, p.exe, p.preload});
      if (p.threads.empty()) tasks.push_back({p.pid, p.pid, p.comm, p.rank, p.exe, p.preload});
    }
    // The connections it made before it was traced (the programs see the
    // later ones), read once (proc_watch.h).
    for (const ScannedConn& c : watch_.new_tcp_conns(p.pid)) {
      if (c.state == 0x0A)
        session_.trace_listen_port(c.tuple.sport, p.pid);
      else
        session_.trace_connection(c.tuple, p.pid);
    }
  }
  if (!tasks.empty()) log_.write_tasks(tasks);
}

// The copy of libfabtrace.so a process maps: its probes attached through the
// file it maps (usdt_libraries.h). What could not be attached is said once per
// user: one user's many copies cost one line, and never another user's place.
void Collector::attach_preload(const ScannedProcess& p) {
  const std::string why =
      session_.attach_usdt_mapped(opt_.proc_root, p.pid, p.preload_range, p.preload_path, p.uid);
  if (!why.empty() && usdt_told_.insert(p.uid).second)
    std::fprintf(stderr, "fabtrace record: pid %d: %s (said once per user)\n",
                 static_cast<int>(p.pid), printable(why).c_str());
}

void Collector::on_record(const void* data, size_t size) {
  ft_hdr h;
  if (!BpfSession::record_header(data, size, &h)) {
    ++malformed_;
    return;
  }
  ++events_;
  const auto* rec = static_cast<const uint8_t*>(data);
  if (kernel_log::is_raw(h.kind)) {
    // The programs write each kind whole: anything else is not one of theirs.
    if (h.size != kernel_log::record_size(h.kind)) {
      ++malformed_;
      return;
    }
    summaries_.add(h, rec);
    if (opt_.raw == CollectorOptions::Raw::kNone)
      ++given_way_[h.kind];
    else if (opt_.raw == CollectorOptions::Raw::kWindows && kernel_log::around_windows(h.kind)) {
      if (!raw_windows_.hold(data, h.size, arrival_)) ++short_softirqs_;
    } else
      write_raw(data, h.size);
    return;
  }
  // A stall's or slow op's window: the raw events around it are written.
  if (h.kind == FT_EV_STALL && h.size == sizeof(ft_stall)) {
    const auto e = kernel_log::record_as<ft_stall>(rec);
    raw_windows_.keep(h.pid, e.w.start, e.w.end);
  } else if ((h.kind == FT_EV_SLOW_OP || h.kind == FT_EV_OP_ERROR) && h.size == sizeof(ft_op)) {
    const auto e = kernel_log::record_as<ft_op>(rec);
    raw_windows_.keep(h.pid, e.w.start, e.w.end);
  }
  write_kept(data, h.size);
}

// Room for `len` more bytes of records within the bound (less what the end of
// the session writes: its counters, summaries and end block), making it by
// dropping the oldest raw blocks when there are any.
bool Collector::room(size_t len) {
  const uint64_t reserve = std::min<uint64_t>(1u << 20, opt_.max_log_bytes / 16);
  const uint64_t budget = opt_.max_log_bytes > reserve ? opt_.max_log_bytes - reserve : 0;
  // Each buffer may become a block of its own: two block headers.
  const auto fits = [&] {
    return log_.bytes_written() + log_.buffered_bytes() + len +
               2 * sizeof(blockfile::BlockHeader) <=
           budget;
  };
  return fits() || (compact() && fits());
}

bool Collector::compact() {
  if (compact_failed_ || log_failed_) return false;
  if (log_.raw_bytes() == 0) {
    // Only the raw buffer: written first, so that it can go with the rest.
    // With none either there is nothing to drop, and no write is made: past
    // the bound every record asks, and a flush each would slow the collector
    // behind the ring.
    if (log_.buffered_raw_bytes() == 0 || !log_.flush() || log_.raw_bytes() == 0) return false;
  }
  const uint64_t reserve = std::min<uint64_t>(1u << 20, opt_.max_log_bytes / 16);
  const uint64_t target = (opt_.max_log_bytes - reserve) / 4 * 3;
  std::string tmp, note, why;
  const int fd = dir_.create("." + log_name_ + ".compact", &tmp, &note, &why);
  KernelLogWriter::Compaction c;
  bool ok = fd >= 0 && log_.copy_compacted(fd, target, &c, &why);
  if (ok && ::renameat(dir_.fd(), tmp.c_str(), dir_.fd(), log_name_.c_str()) != 0) {
    why = std::string("cannot rename the compacted log over it: ") + std::strerror(errno);
    ok = false;
  }
  if (!ok) {
    if (fd >= 0) {
      ::close(fd);
      ::unlinkat(dir_.fd(), tmp.c_str(), 0);
    }
    compact_failed_ = true;
    std::fprintf(stderr,
                 "fabtrace record: the kernel log could not drop its oldest raw events (%s): "
                 "past its bound, raw events are counted, not written\n",
                 why.c_str());
    return false;
  }
  log_.adopt(fd, c);
  for (uint16_t k = 0; k < FT_EV_KINDS; ++k) evicted_[k] += c.evicted[k];
  return true;
}

void Collector::write_kept(const void* data, size_t len) {
  ft_hdr h;
  std::memcpy(&h, data, sizeof(h));
  // The session's final --uprobes rows are always written.
  if (h.kind != FT_EV_UPROBE_OPS && !room(len)) {
    if (over_size_++ == 0)
      std::fprintf(stderr,
                   "fabtrace record: the kernel log reached its bound of %s with no raw events "
                   "left to make room: later events are counted, not written (--max-size)\n",
                   byte_size_text(opt_.max_log_bytes).c_str());
    return;
  }
  if (!log_.append(data, len)) write_error(log_.error());
}

void Collector::write_raw(const void* data, size_t len) {
  ft_hdr h;
  std::memcpy(&h, data, sizeof(h));
  if (!room(len)) {
    ++given_way_[h.kind < FT_EV_KINDS ? h.kind : 0];
    return;
  }
  if (!log_.append_raw(data, len)) write_error(log_.error());
}

// The short softirqs the kernel summed since they were last read, into the
// summaries and the count of softirqs too short to write.
void Collector::fold_kernel_softirqs() {
  session_.each_softirq_sum([this](const ft_softirq_key& k, const ft_softirq_sum& v) {
    ft_softirq_sum& was = softirqs_read_[{k.tgid, k.tid, k.cpu, k.vec}];
    if (v.count <= was.count) return;
    const uint64_t count = v.count - was.count, ns = v.ns >= was.ns ? v.ns - was.ns : 0;
    was = v;
    summaries_.add_softirqs(k.tgid, k.tid, k.cpu, k.vec, count, ns);
    short_softirqs_ += count;
  });
}

void Collector::drain_summaries(uint64_t now) {
  last_summary_ = now;
  fold_kernel_softirqs();
  summaries_.drain(now, [this](const ft_summary& r) { write_kept(&r, sizeof(r)); });
}

KernelStats Collector::stats() const {
  KernelStats s = session_.stats();
  for (uint16_t k = 0; k < FT_EV_KINDS; ++k) {
    s.given_way[k] = given_way_[k];
    s.evicted[k] = evicted_[k];
  }
  s.over_size = over_size_;
  s.short_softirqs = short_softirqs_;
  s.collector_cpu_ns = run_cpu_ns();
  s.collector_events = events_;
  s.collector_wall_ns = run_wall_ns();
  s.collector_sched = sched_line();
  return s;
}

void Collector::write_error(const std::string& what) {
  if (first_write_error_.empty()) first_write_error_ = what;
  const bool log = what == log_.error();
  if (log && log_failed_) return;  // the log's error once; each lost output has its line
  if (log) log_failed_ = true;
  std::fprintf(stderr, "fabtrace record: %s%s\n", what.c_str(),
               log ? " (the kernel log keeps what was written before; the rest of the session "
                     "is counted as lost)"
                   : "");
}

void Collector::step(int wait_ms) {
  // A pass that stopped at its budget left records: the next one does not wait.
  session_.poll(
      session_.last_poll().full ? 0 : wait_ms, [this](const void* d, size_t n) { on_record(d, n); },
      [this] { arrival_ = mono_ns(); });
  const uint64_t now = mono_ns();
  pace(now);
  raw_windows_.release(
      now, [this](const void* d, size_t n) { write_raw(d, n); },
      [this](const ft_hdr& h) { ++given_way_[h.kind < FT_EV_KINDS ? h.kind : 0]; });
  if (now - last_summary_ >= opt_.summary_ms * 1000000ULL) drain_summaries(now);
  if (now - last_scan_ >= kScanNs) scan();
  if (now - last_flush_ >= opt_.flush_ms * 1000000ULL) {
    if (!log_.flush()) write_error(log_.error());
    last_flush_ = now;
  }
  if (opt_.bpf.uprobes.enabled && now - last_uprobe_snap_ >= kUprobeRowsNs) {
    snapshot_uprobes();
    last_uprobe_snap_ = now;
  }
  if (now - last_stats_ >= kStatsNs) {
    if (!log_.write_stats(stats())) write_error(log_.error());
    last_stats_ = now;
  }
}

void Collector::finish() {
  // What the programs emitted up to now.
  // Back to the priority it started with: the end of the session is what a
  // job's end waits for.
  set_own_priority(false);
  raised_ns_ += raised_ ? mono_ns() - raised_at_ : 0;
  raised_ = false;
  // Until the ring is empty, for at most kFinishDrainNs: programs that still
  // write faster than that would hold the session's end for ever.
  arrival_ = mono_ns();
  const uint64_t until = arrival_ + kFinishDrainNs;
  while (session_.poll(0, [this](const void* d, size_t n) { on_record(d, n); }) > 0 &&
         session_.last_poll().full && mono_ns() < until) {
  }
  if (session_.last_poll().full)
    std::fprintf(stderr,
                 "fabtrace record: the programs still wrote faster than the session's end "
                 "drains: what was left in the ring buffer after %.0f s is not written\n",
                 static_cast<double>(kFinishDrainNs) / 1e9);
  // What is held is judged now: a window whose margin reaches past the end
  // keeps its events.
  raw_windows_.release(
      UINT64_MAX, [this](const void* d, size_t n) { write_raw(d, n); },
      [this](const ft_hdr& h) { ++given_way_[h.kind < FT_EV_KINDS ? h.kind : 0]; });
  drain_summaries(mono_ns());
  live_.close();  // its thread stops; the session's live files go with it
  if (opt_.bpf.uprobes.enabled) write_uprobes();
  if (!log_.write_stats(stats()) || !log_.write_end(mono_ns() - start_ns_) || !log_.close())
    write_error(log_.error());
  if (counters_) {
    counters_->sampler.stop();
    if (counters_->sampler.samples()) {
      const std::string host = host_name();
      // Created through the directory's descriptor (held by dir_), under the
      // next free name when something was planted at its own.
      const std::string want = node_counters_file_name(host, getpid());
      const std::string name = dir_.free_name(want);
      if (name != want)
        std::fprintf(stderr, "fabtrace record: %s already exists (left as it is): written to %s\n",
                     dir_.path_of(want).c_str(), name.c_str());
      counters_path_ = dir_.path_of(name);
      if (!counters_->sampler.write_csv(counters_path_, host, kNodeCountersRank, getpid()) ||
          (opt_.owned && ::fchownat(dir_.fd(), name.c_str(), opt_.owner_uid, opt_.owner_gid,
                                    AT_SYMLINK_NOFOLLOW) != 0)) {
        ++outputs_lost_;
        write_error("the node's NIC counters were not written to " + counters_path_);
        counters_path_.clear();
      }
    }
  }
}

int report_lost_data(const Collector& col) {
  constexpr size_t kShown = 10;
  const KernelStats st = col.stats();
  std::vector<std::pair<uint32_t, KernelStats::Process>> procs(st.per_process.begin(),
                                                               st.per_process.end());
  std::stable_sort(procs.begin(), procs.end(), [](const auto& a, const auto& b) {
    return a.second.total() > b.second.total();
  });
  for (size_t i = 0; i < procs.size() && i < kShown; ++i) {
    const KernelStats::Process& p = procs[i].second;
    // Every count, each with what it means (in the list's order: stable for readers).
    std::string what;
#define FT_X(name, text) what += (what.empty() ? "" : ", ") + std::to_string(p.name) + " " + text;
    FT_KERNEL_PROCESS_COUNTS(FT_X)
#undef FT_X
    std::fprintf(stderr, "fabtrace record: pid %u: %s\n", procs[i].first, what.c_str());
  }
  if (procs.size() > kShown)
    std::fprintf(stderr,
                 "fabtrace record: ... and %zu more processes with drops (the log's stats)\n",
                 procs.size() - kShown);
  if (col.records_over_size())
    std::fprintf(stderr,
                 "fabtrace record: %llu events past the kernel log's bound were not written\n",
                 static_cast<unsigned long long>(col.records_over_size()));
  if (!col.lost_data()) return 0;
  std::fprintf(stderr,
               "fabtrace record: the session lost data: %llu events not written to the kernel log "
               "and %llu outputs not written (first error: %s)\n",
               static_cast<unsigned long long>(col.records_lost()),
               static_cast<unsigned long long>(col.outputs_lost()),
               col.first_write_error().c_str());
  return 1;
}

}  // namespace fabtrace
