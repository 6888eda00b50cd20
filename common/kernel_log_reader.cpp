// The kernel log's reader (kernel_log.h): blocks checked one by one (magic,
// bounds, CRC), records handed on as they are, and the JSON blocks (meta,
// tasks, symbols, stats) read within the readers' bounds.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "common/input_limits.h"
#include "common/kernel_log.h"

namespace fabtrace {

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
  if (j.contains("collector") && j["collector"].is_object()) {
    const json& c = j["collector"];
    s->collector_cpu_ns = u64_of(c, "cpu_ns");
    s->collector_events = u64_of(c, "events");
    s->collector_wall_ns = u64_of(c, "wall_ns");
    s->collector_sched = str_of(c, "sched");
  }
#define FT_X(name, key) s->name = u64_of(j, key);
  FT_KERNEL_STATS_COUNTS(FT_X)
#undef FT_X
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
