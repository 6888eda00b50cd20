#include "common/kernel_log.h"

#include "common/input_limits.h"
#include "common/version.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

namespace fabtrace {

namespace kernel_log {

// By kind, from FT_EVENT_KINDS (bpf/fabtrace_events.h).
size_t record_size(uint16_t kind) {
  switch (kind) {
#define FT_KIND_SIZE(k, value, record, name, raw) \
  case k:                                         \
    return sizeof(record);
    FT_EVENT_KINDS(FT_KIND_SIZE)
#undef FT_KIND_SIZE
    default:
      return 0;
  }
}

bool is_raw(uint16_t kind) {
  switch (kind) {
#define FT_KIND_RAW(k, value, record, name, raw) \
  case k:                                        \
    return raw;
    FT_EVENT_KINDS(FT_KIND_RAW)
#undef FT_KIND_RAW
    default:
      return false;
  }
}

bool around_windows(uint16_t kind) { return is_raw(kind) && kind != FT_EV_POLL; }

std::string kind_name(uint16_t kind) {
  switch (kind) {
#define FT_KIND_NAME(k, value, record, name, raw) \
  case k:                                         \
    return name;
    FT_EVENT_KINDS(FT_KIND_NAME)
#undef FT_KIND_NAME
    default:
      return "kind" + std::to_string(kind);
  }
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

std::string short_softirqs_what(const KernelLogMeta& meta) {
  const auto it = meta.options.find(kernel_log::kMinSoftirqOption);
  char* end = nullptr;
  const unsigned long long ns =
      it == meta.options.end() ? 0 : std::strtoull(it->second.c_str(), &end, 10);
  if (!ns || !end || *end) return "short softirqs";
  char us[32];
  std::snprintf(us, sizeof(us), "%.3g", static_cast<double>(ns) / 1000.0);
  return std::string("softirqs shorter than ") + us + " us";
}

namespace {
uint64_t sum_of(const uint64_t (&by_kind)[FT_EV_KINDS]) {
  uint64_t n = 0;
  for (uint64_t v : by_kind) n += v;
  return n;
}
}  // namespace

uint64_t KernelStats::lost_total() const { return sum_of(lost); }
uint64_t KernelStats::given_way_total() const { return sum_of(given_way); }
uint64_t KernelStats::evicted_total() const { return sum_of(evicted); }

namespace {

using nlohmann::json;

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
  json out{{"emitted", emitted},
           {"lost", lost},
           {"given_way", given},
           {"evicted", evicted},
           {"collector",
            {{"cpu_ns", s.collector_cpu_ns},
             {"events", s.collector_events},
             {"wall_ns", s.collector_wall_ns},
             {"sched", s.collector_sched}}},
           {"processes", procs}};
  // (nlohmann::json keeps its keys sorted: the bytes do not depend on this order.)
#define FT_X(name, key) out[key] = s.name;
  FT_KERNEL_STATS_COUNTS(FT_X)
#undef FT_X
  return out;
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

}  // namespace fabtrace
