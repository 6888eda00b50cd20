#include "common/kernel_log.h"

#include "common/input_limits.h"
#include "common/version.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

namespace fabtrace {

namespace kernel_log {

size_t record_size(uint16_t kind) {
  switch (kind) {
    case FT_EV_OFFCPU:
      return sizeof(ft_offcpu);
    case FT_EV_IRQ:
    case FT_EV_SOFTIRQ:
      return sizeof(ft_irq);
    case FT_EV_FAULTS:
      return sizeof(ft_faults);
    case FT_EV_RETRANS:
    case FT_EV_DROP:
      return sizeof(ft_net);
    case FT_EV_WORK:
      return sizeof(ft_work);
    case FT_EV_CXI_ERR:
      return sizeof(ft_cxi_err);
    case FT_EV_THREAD:
      return sizeof(ft_thread);
    case FT_EV_STALL:
      return sizeof(ft_stall);
    case FT_EV_SLOW_OP:
    case FT_EV_OP_ERROR:
      return sizeof(ft_op);
    case FT_EV_POLL:
      return sizeof(ft_poll);
    case FT_EV_EXIT:
      return sizeof(ft_exit);
    case FT_EV_MARK:
      return sizeof(ft_mark);
    case FT_EV_UPROBE_OPS:
      return sizeof(ft_uprobe_ops);
    case FT_EV_UPROBE_CQ:
      return sizeof(ft_uprobe_cq);
    case FT_EV_SUMMARY:
      return sizeof(ft_summary);
    default:
      return 0;
  }
}

bool is_raw(uint16_t kind) {
  switch (kind) {
    case FT_EV_OFFCPU:
    case FT_EV_IRQ:
    case FT_EV_SOFTIRQ:
    case FT_EV_FAULTS:
    case FT_EV_WORK:
    case FT_EV_POLL:
      return true;
    default:
      return false;
  }
}

bool around_windows(uint16_t kind) { return is_raw(kind) && kind != FT_EV_POLL; }

std::string kind_name(uint16_t kind) {
  static const char* const names[FT_EV_KINDS] = {
      nullptr,    "offcpu",  "irq",        "softirq",   "faults",  "retransmit", "drop",
      "cxi_work", "cxi_err", "thread",     "stall",     "slow_op", "op_error",   "poll",
      "exit",     "mark",    "uprobe_ops", "uprobe_cq", "summary"};
  if (kind < FT_EV_KINDS && names[kind]) return names[kind];
  return "kind" + std::to_string(kind);
}

const char* off_kind_name(uint8_t k) {
  switch (k) {
    case FT_OFF_PREEMPTED:
      return "preempted";
    case FT_OFF_SLEEP:
      return "sleep";
    case FT_OFF_DISK:
      return "disk";
    case FT_OFF_STOPPED:
      return "stopped";
    default:
      return "other";
  }
}

}  // namespace kernel_log

uint64_t KernelStats::Process::total() const {
  uint64_t n = 0;
#define FT_X(name, what) n += name;
  FT_KERNEL_PROCESS_COUNTS(FT_X)
#undef FT_X
  return n;
}

uint64_t KernelStats::lost_total() const {
  uint64_t n = 0;
  for (uint64_t v : lost) n += v;
  return n;
}

namespace {

using nlohmann::json;

// Parses one JSON block of a log that may come from anyone: nesting deeper than
// the readers' bound is refused before parsing, so it cannot exhaust the stack.
bool parse_block_json(const uint8_t* p, size_t len, json* out) {
  const char* text = reinterpret_cast<const char*>(p);
  if (!json_depth_within(text, len, limits::kMaxJsonDepth)) return false;
  *out = json::parse(text, text + len, nullptr, /*allow_exceptions=*/false);
  return !out->is_discarded();
}

std::string str_of(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return "";
  std::string s = it->get<std::string>();
  if (s.size() > limits::kMaxStringBytes) s.resize(limits::kMaxStringBytes);
  return s;
}

// A count or time: 0 when absent or out of the readers' bounds.
uint64_t u64_of(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_unsigned()) return 0;
  const uint64_t v = it->get<uint64_t>();
  return count_ok(v) ? v : 0;
}

// An address (kernel addresses use the top bits: no count bound).
uint64_t addr_of(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

long long_of(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<long>() : 0;
}

json stats_json(const KernelStats& s) {
  json emitted = json::object(), lost = json::object(), given = json::object(),
       evicted = json::object();
  for (uint16_t k = 1; k < FT_EV_KINDS; ++k) {
    if (s.emitted[k]) emitted[kernel_log::kind_name(k)] = s.emitted[k];
    if (s.lost[k]) lost[kernel_log::kind_name(k)] = s.lost[k];
    if (s.given_way[k]) given[kernel_log::kind_name(k)] = s.given_way[k];
    if (s.evicted[k]) evicted[kernel_log::kind_name(k)] = s.evicted[k];
  }
  json procs = json::object();
  for (const auto& [pid, p] : s.per_process) {
    if (procs.size() >= kMaxStatsProcesses) break;
    json& o = procs[std::to_string(pid)];
#define FT_X(name, what) o[#name] = p.name;
    FT_KERNEL_PROCESS_COUNTS(FT_X)
#undef FT_X
  }
  return json{{"emitted", emitted},
              {"lost", lost},
              {"untraced_retransmits", s.untraced_retrans},
              {"untraced_drops", s.untraced_drops},
              {"threads_full", s.threads_full},
              {"threads_over_share", s.threads_over_share},
              {"recursion_misses", s.recursion_misses},
              {"in_without_out", s.in_without_out},
              {"in_unseen", s.in_unseen},
              {"usdt_over_budget", s.usdt_over_budget},
              {"usdt_malformed", s.usdt_malformed},
              {"given_way", given},
              {"evicted", evicted},
              {"over_size", s.over_size},
              {"collector",
               {{"cpu_ns", s.collector_cpu_ns},
                {"events", s.collector_events},
                {"wall_ns", s.collector_wall_ns},
                {"sched", s.collector_sched}}},
              {"processes", procs}};
}

void stats_from(const json& j, KernelStats* s) {
  *s = KernelStats{};
  for (uint16_t k = 1; k < FT_EV_KINDS; ++k) {
    const std::string n = kernel_log::kind_name(k);
    const std::pair<const char*, uint64_t*> by_kind[] = {{"emitted", s->emitted},
                                                         {"lost", s->lost},
                                                         {"given_way", s->given_way},
                                                         {"evicted", s->evicted}};
    for (const auto& [key, out] : by_kind)
      if (j.contains(key) && j[key].is_object()) out[k] = u64_of(j[key], n.c_str());
  }
  s->over_size = u64_of(j, "over_size");
  if (j.contains("collector") && j["collector"].is_object()) {
    const json& c = j["collector"];
    s->collector_cpu_ns = u64_of(c, "cpu_ns");
    s->collector_events = u64_of(c, "events");
    s->collector_wall_ns = u64_of(c, "wall_ns");
    s->collector_sched = str_of(c, "sched");
  }
  s->untraced_retrans = u64_of(j, "untraced_retransmits");
  s->untraced_drops = u64_of(j, "untraced_drops");
  s->threads_full = u64_of(j, "threads_full");
  s->threads_over_share = u64_of(j, "threads_over_share");
  s->recursion_misses = u64_of(j, "recursion_misses");
  s->in_without_out = u64_of(j, "in_without_out");
  s->in_unseen = u64_of(j, "in_unseen");
  s->usdt_over_budget = u64_of(j, "usdt_over_budget");
  s->usdt_malformed = u64_of(j, "usdt_malformed");
  const auto procs = j.find("processes");
  if (procs == j.end() || !procs->is_object()) return;
  for (const auto& [key, v] : procs->items()) {
    if (s->per_process.size() >= kMaxStatsProcesses) break;
    char* end = nullptr;
    const unsigned long pid = std::strtoul(key.c_str(), &end, 10);
    if (key.empty() || *end || pid == 0 || pid > 0x3fffffff || !v.is_object()) continue;
    KernelStats::Process& p = s->per_process[static_cast<uint32_t>(pid)];
#define FT_X(name, what) p.name = u64_of(v, #name);
    FT_KERNEL_PROCESS_COUNTS(FT_X)
#undef FT_X
  }
}

}  // namespace

// ---------------------------------------------------------------- writer

bool KernelLogWriter::create(const std::string& path, const KernelLogMeta& m) {
  if (!file_.create(path, kernel_log::kMagic, kernel_log::kVersion)) return false;
  return write_meta(m);
}

bool KernelLogWriter::create(int fd, const std::string& path, const KernelLogMeta& m) {
  if (!file_.create(fd, path, kernel_log::kMagic, kernel_log::kVersion)) return false;
  return write_meta(m);
}

bool KernelLogWriter::write_meta(const KernelLogMeta& m) {
  json attach = json::array();
  for (const KernelAttach& a : m.attach)
    attach.push_back(
        {{"program", a.program}, {"point", a.point}, {"state", a.state}, {"detail", a.detail}});
  json j = {{"format", kernel_log::kFormatName},
            {"version", kernel_log::kVersion},
            {"record_version", m.record_version},
            {"fabtrace_version", version()},
            {"host", m.host},
            {"pid", m.pid},
            {"kernel", m.kernel},
            {"boot_id", m.boot_id},
            {"command", m.command},
            {"mono_ns", m.mono_ns},
            {"real_ns", m.real_ns},
            {"options", m.options},
            {"attach", attach}};
  return json_block(kernel_log::kMeta, j.dump(-1, ' ', false, json::error_handler_t::replace));
}

bool KernelLogWriter::json_block(uint16_t type, const std::string& text) {
  return block(type, 0, text.data(), text.size(), false);
}

bool KernelLogWriter::block(uint16_t type, uint32_t count, const void* payload, size_t len,
                            bool raw) {
  const uint64_t off = file_.bytes_written();
  if (!file_.write_block(type, count, payload, len)) return false;
  const uint64_t bytes = file_.bytes_written() - off;
  if (!raw && !index_.empty() && !index_.back().raw) {
    index_.back().bytes += bytes;  // a run of blocks that are not raw: one entry
    index_.back().records += type == kernel_log::kEvents ? count : 0;
    return true;
  }
  Block b;
  b.off = off;
  b.bytes = bytes;
  b.records = type == kernel_log::kEvents ? count : 0;
  b.raw = raw;
  if (raw) {
    std::memcpy(b.kinds, raw_kinds_, sizeof(b.kinds));
    raw_bytes_ += bytes;
  }
  index_.push_back(b);
  return true;
}

bool KernelLogWriter::append(const void* record, size_t len) {
  const size_t at = buf_.size();
  buf_.resize(at + len);
  std::memcpy(buf_.data() + at, record, len);
  ++buffered_;
  return buf_.size() < kernel_log::kEventsBlockBytes || flush();
}

bool KernelLogWriter::append_raw(const void* record, size_t len) {
  ft_hdr h;
  std::memcpy(&h, record, sizeof(h));
  const size_t at = raw_buf_.size();
  raw_buf_.resize(at + len);
  std::memcpy(raw_buf_.data() + at, record, len);
  ++raw_buffered_;
  if (h.kind < FT_EV_KINDS) ++raw_kinds_[h.kind];
  return raw_buf_.size() < kernel_log::kEventsBlockBytes || flush_raw();
}

bool KernelLogWriter::flush_raw() {
  if (raw_buf_.empty()) return file_.is_open() && file_.error().empty();
  const bool ok = block(kernel_log::kEvents, raw_buffered_, raw_buf_.data(), raw_buf_.size(), true);
  (ok ? written_ : lost_) += raw_buffered_;
  raw_buf_.clear();
  raw_buffered_ = 0;
  std::memset(raw_kinds_, 0, sizeof(raw_kinds_));
  return ok;
}

bool KernelLogWriter::flush() {
  bool ok = true;
  if (!buf_.empty()) {
    ok = block(kernel_log::kEvents, buffered_, buf_.data(), buf_.size(), false);
    (ok ? written_ : lost_) += buffered_;
    buf_.clear();
    buffered_ = 0;
  }
  return flush_raw() && ok && file_.is_open() && file_.error().empty();
}

namespace {

// Copies `len` bytes at `off` of `in` to the end of `out`: in the kernel where
// it can (copy_file_range), else through a buffer. 0, or the errno.
int copy_range(int in, uint64_t off, int out, uint64_t len) {
  while (len > 0) {
    loff_t o = static_cast<loff_t>(off);
    const ssize_t n = ::copy_file_range(in, &o, out, nullptr, len, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += static_cast<uint64_t>(n);
    len -= static_cast<uint64_t>(n);
  }
  std::vector<char> buf(len ? std::min<uint64_t>(len, 1u << 20) : 0);
  while (len > 0) {
    const ssize_t r =
        ::pread(in, buf.data(), std::min<uint64_t>(len, buf.size()), static_cast<off_t>(off));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return r == 0 ? EIO : errno;
    iovec v{buf.data(), static_cast<size_t>(r)};
    uint64_t w = 0;
    if (const int err = blockfile::writev_all(out, &v, 1, &w)) return err;
    off += static_cast<uint64_t>(r);
    len -= static_cast<uint64_t>(r);
  }
  return 0;
}

}  // namespace

bool KernelLogWriter::copy_compacted(int fd, uint64_t target, Compaction* c, std::string* error) {
  *c = Compaction{};
  if (!flush()) {
    *error = file_.error();
    return false;
  }
  uint64_t size = file_.bytes_written();
  // The oldest raw blocks go until the rest fits.
  std::vector<bool> drop(index_.size(), false);
  for (size_t i = 0; i < index_.size() && size > target; ++i) {
    if (!index_[i].raw) continue;
    drop[i] = true;
    size -= index_[i].bytes;
    ++c->blocks_dropped;
    for (uint16_t k = 0; k < FT_EV_KINDS; ++k) c->evicted[k] += index_[i].kinds[k];
  }
  // The log is written through a write-only descriptor: read through another
  // one on the same file (its descriptor's link, never its name).
  const int in =
      ::open(("/proc/self/fd/" + std::to_string(file_.fd())).c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) {
    *error = file_.path() + ": compacting: cannot read it back: " + std::strerror(errno);
    return false;
  }
  // The file header, then every block kept, each run of them in one copy.
  const uint64_t header = index_.empty() ? file_.bytes_written() : index_.front().off;
  int err = copy_range(in, 0, fd, header);
  c->bytes = header;
  for (size_t i = 0; i < index_.size() && !err;) {
    if (drop[i]) {
      ++i;
      continue;
    }
    const uint64_t from = index_[i].off;
    uint64_t len = 0;
    for (; i < index_.size() && !drop[i]; ++i) {
      len += index_[i].bytes;
      c->records += index_[i].records;
    }
    err = copy_range(in, from, fd, len);
    c->bytes += len;
  }
  ::close(in);
  if (err) {
    *error = file_.path() + ": compacting: " + std::strerror(err);
    return false;
  }
  return true;
}

void KernelLogWriter::adopt(int fd, const Compaction& c) {
  std::vector<Block> kept;
  uint64_t off = index_.empty() ? 0 : index_.front().off;
  uint64_t dropped = c.blocks_dropped;
  raw_bytes_ = 0;
  for (const Block& b : index_) {
    if (b.raw && dropped > 0) {  // the oldest raw blocks are the ones dropped
      --dropped;
      continue;
    }
    Block n = b;
    n.off = off;
    off += b.bytes;
    if (b.raw) raw_bytes_ += b.bytes;
    if (!n.raw && !kept.empty() && !kept.back().raw) {
      kept.back().bytes += n.bytes;
      kept.back().records += n.records;
    } else {
      kept.push_back(n);
    }
  }
  index_ = std::move(kept);
  uint64_t evicted = 0;
  for (uint64_t v : c.evicted) evicted += v;
  written_ -= std::min(written_, evicted);
  file_.adopt(fd, c.bytes);
}

bool KernelLogWriter::write_tasks(const std::vector<KernelTask>& tasks) {
  if (tasks.empty()) return true;
  json a = json::array();
  for (const KernelTask& t : tasks)
    a.push_back({{"pid", t.pid},
                 {"tid", t.tid},
                 {"comm", t.comm},
                 {"rank", t.rank},
                 {"exe", t.exe},
                 {"preload", t.preload}});
  return json_block(kernel_log::kTasks, a.dump(-1, ' ', false, json::error_handler_t::replace));
}

bool KernelLogWriter::write_symbols(const std::vector<KernelSymbol>& syms) {
  if (syms.empty()) return true;
  json a = json::array();
  for (const KernelSymbol& s : syms)
    a.push_back({{"addr", s.addr}, {"name", s.name}, {"class", s.cls}});
  return json_block(kernel_log::kSymbols, a.dump(-1, ' ', false, json::error_handler_t::replace));
}

bool KernelLogWriter::write_stats(const KernelStats& s) {
  return json_block(kernel_log::kStats, stats_json(s).dump());
}

bool KernelLogWriter::write_uprobe_rows(const void* records, size_t n, size_t record_bytes) {
  // In blocks of at most kEventsBlockBytes, as the events.
  const size_t per = std::max<size_t>(1, kernel_log::kEventsBlockBytes / record_bytes);
  const auto* p = static_cast<const uint8_t*>(records);
  for (size_t i = 0; i < n; i += per) {
    const size_t k = std::min(per, n - i);
    if (!block(kernel_log::kUprobeRows, static_cast<uint32_t>(k), p + i * record_bytes,
               k * record_bytes, false))
      return false;
  }
  return true;
}

bool KernelLogWriter::write_end(uint64_t duration_ns) {
  if (!flush()) return false;
  return json_block(kernel_log::kEnd,
                    json{{"records", written_}, {"duration_ns", duration_ns}}.dump());
}

bool KernelLogWriter::close() {
  flush();
  return file_.close();
}

// ---------------------------------------------------------------- reader

bool KernelLogReader::open(const std::string& path, std::string* error) {
  if (!file_.open(path, kernel_log::kMagic, kernel_log::kVersion, error)) return false;
  bool got = false, bad = false;
  std::string err;
  if (!file_.walk(
          [&](const BlockView& b) {
            json j;
            if (b.type != kernel_log::kMeta || !parse_block_json(b.payload, b.len, &j) ||
                !j.is_object() || str_of(j, "format") != kernel_log::kFormatName) {
              bad = true;
              return false;
            }
            meta_.host = str_of(j, "host");
            meta_.kernel = str_of(j, "kernel");
            meta_.boot_id = str_of(j, "boot_id");
            meta_.command = str_of(j, "command");
            meta_.fabtrace_version = str_of(j, "fabtrace_version");
            meta_.pid = long_of(j, "pid");
            meta_.mono_ns = u64_of(j, "mono_ns");
            meta_.real_ns = u64_of(j, "real_ns");
            meta_.record_version = static_cast<uint32_t>(u64_of(j, "record_version"));
            if (j.contains("options") && j["options"].is_object())
              for (auto it = j["options"].begin(); it != j["options"].end(); ++it)
                if (it.value().is_string()) meta_.options[it.key()] = it.value().get<std::string>();
            if (j.contains("attach") && j["attach"].is_array())
              for (const json& a : j["attach"])
                if (a.is_object())
                  meta_.attach.push_back({str_of(a, "program"), str_of(a, "point"),
                                          str_of(a, "state"), str_of(a, "detail")});
            got = true;
            return false;
          },
          &err)) {
    *error = err;
    return false;
  }
  if (!got || bad) {
    *error = path + ": no kernel log header";
    return false;
  }
  if (meta_.record_version != FT_RECORD_VERSION) {
    *error = path + ": record version " + std::to_string(meta_.record_version) +
             " (this build reads " + std::to_string(FT_RECORD_VERSION) + ")";
    return false;
  }
  return true;
}

bool KernelLogReader::read_all(const std::function<void(const ft_hdr&, const uint8_t*)>& on_record,
                               std::string* error) {
  tasks_.clear();
  symbols_.clear();
  has_stats_ = has_end_ = false;
  records_read_ = bad_records_ = unknown_records_ = 0;
  bool first = true, final_rows = false;
  // The latest periodic --uprobes rows, by row (pid, op, endpoint, peer, size
  // class, as posted), bounded.
  std::map<std::tuple<uint32_t, uint32_t, uint64_t, uint64_t, uint16_t, uint16_t>, ft_uprobe_ops>
      snapshot;
  const bool ok = file_.walk(
      [&](const BlockView& b) {
        if (first) {  // kMeta, read by open()
          first = false;
          return true;
        }
        json j;
        switch (b.type) {
          case kernel_log::kEvents: {
            size_t off = 0;
            uint32_t seen = 0;
            while (off < b.len) {
              ft_hdr h{};
              if (b.len - off >= sizeof(h)) std::memcpy(&h, b.payload + off, sizeof(h));
              const size_t want = kernel_log::record_size(h.kind);
              // A size that is not the kind's, or that runs past the block (a
              // fragment too short for a header included), makes the rest of the
              // block unreadable: count what is left as bad.
              if (h.size < sizeof(ft_hdr) || h.size % 8 != 0 || h.size > b.len - off ||
                  (want && h.size != want)) {
                bad_records_ += b.count > seen ? b.count - seen : 1;
                break;
              }
              if (want) {
                on_record(h, b.payload + off);
                ++records_read_;
                final_rows = final_rows || h.kind == FT_EV_UPROBE_OPS;
              } else {
                ++unknown_records_;
              }
              ++seen;
              off += h.size;
            }
            return true;
          }
          case kernel_log::kTasks:
            if (parse_block_json(b.payload, b.len, &j) && j.is_array())
              for (const json& t : j)
                if (t.is_object() && tasks_.size() < kernel_log::kMaxTasks)
                  tasks_.push_back({long_of(t, "pid"), long_of(t, "tid"), str_of(t, "comm"),
                                    str_of(t, "rank"), str_of(t, "exe"),
                                    t.contains("preload") && t["preload"].is_boolean() &&
                                        t["preload"].get<bool>()});
            return true;
          case kernel_log::kSymbols:
            if (parse_block_json(b.payload, b.len, &j) && j.is_array())
              for (const json& s : j)
                if (s.is_object() && symbols_.size() < kernel_log::kMaxSymbols)
                  symbols_.push_back({addr_of(s, "addr"), str_of(s, "name"), str_of(s, "class")});
            return true;
          case kernel_log::kStats:
            if (parse_block_json(b.payload, b.len, &j) && j.is_object()) {
              stats_from(j, &stats_);
              has_stats_ = true;
            }
            return true;
          case kernel_log::kEnd:
            if (parse_block_json(b.payload, b.len, &j) && j.is_object()) {
              has_end_ = true;
              end_records_ = u64_of(j, "records");
              end_duration_ns_ = u64_of(j, "duration_ns");
            }
            return true;
          case kernel_log::kUprobeRows:
            for (size_t off = 0; off + sizeof(ft_uprobe_ops) <= b.len;
                 off += sizeof(ft_uprobe_ops)) {
              const auto e = kernel_log::record_as<ft_uprobe_ops>(b.payload + off);
              if (e.h.kind != FT_EV_UPROBE_OPS || e.h.size != sizeof(ft_uprobe_ops)) {
                ++bad_records_;
                break;
              }
              const auto key = std::make_tuple(e.h.pid, e.op, e.ep, e.peer, e.size_class, e.posted);
              const auto it = snapshot.find(key);
              if (it != snapshot.end())
                it->second = e;
              else if (snapshot.size() < kernel_log::kMaxUprobeRows)
                snapshot.emplace(key, e);
            }
            return true;
          default:
            return true;  // a block type from a newer writer: skipped
        }
      },
      error);
  if (ok && !final_rows)
    for (const auto& kv : snapshot) {
      on_record(kv.second.h, reinterpret_cast<const uint8_t*>(&kv.second));
      ++records_read_;
    }
  return ok;
}

}  // namespace fabtrace
