#include "result.h"

#include <unistd.h>

#include <cstdio>
#include <map>
#include <vector>

#include "cq_reader.h"

namespace ftapp {
namespace {

std::string quote(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        o += "\\\"";
        break;
      case '\\':
        o += "\\\\";
        break;
      case '\n':
        o += "\\n";
        break;
      case '\t':
        o += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          o += buf;
        } else {
          o += static_cast<char>(c);
        }
    }
  }
  return o + "\"";
}

std::string key_text(const std::string& k) { return quote(k); }
std::string key_text(uint64_t k) { return quote(std::to_string(k)); }

// A JSON object of a map, each value written by `text`.
template <typename Map, typename Text>
std::string object(const Map& m, Text text) {
  std::string o = "{";
  bool first = true;
  for (const auto& kv : m) {
    if (!first) o += ",";
    first = false;
    o += key_text(kv.first) + ":" + text(kv.second);
  }
  return o + "}";
}

std::string json_of(const Counts& m) {
  return object(m, [](uint64_t v) { return std::to_string(v); });
}

std::string json_of(const SizeCounts& m) {
  return object(m, [](const std::map<uint64_t, uint64_t>& by_size) {
    return object(by_size, [](uint64_t v) { return std::to_string(v); });
  });
}

std::string json_of(const Numbers& m) {
  return object(m, [](double v) {
    char t[64];
    std::snprintf(t, sizeof t, "%.17g", v);
    return std::string(t);
  });
}

std::string json_of(const Texts& m) {
  return object(m, [](const std::string& v) { return quote(v); });
}

std::string json_of(const Names& v) {
  std::string o = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i != 0) o += ",";
    o += quote(v[i]);
  }
  return o + "]";
}

std::string json_of(uint64_t v) { return std::to_string(v); }

}  // namespace

std::string result_json(const Options& opt, int rank, const Stats& stats,
                        const std::string& unsupported) {
  StatsSnapshot s = stats.snapshot();
  bool ok = unsupported.empty() && stats.ok();
  std::string o = "{";
  o += "\"rank\":" + std::to_string(rank);
  // The rank's process: a node-wide session (record --uprobes) counts per process.
  o += ",\"pid\":" + std::to_string(::getpid());
  o += ",\"prov\":" + quote(opt.prov);
  o += ",\"test\":" + quote(opt.test);
  o += ",\"ep_type\":" + quote(opt.ep_type == FI_EP_MSG ? "msg" : "rdm");
  o += ",\"cq_format\":" + quote(opt.cq_format_name);
  o += ",\"count\":" + std::to_string(opt.count);
  o += ",\"size\":" + std::to_string(opt.size);
  o += std::string(",\"ok\":") + (ok ? "true" : "false");
#define FTAPP_STATS_JSON(type, name) o += ",\"" #name "\":" + json_of(s.name);
  FTAPP_STATS_FIELDS(FTAPP_STATS_JSON)
#undef FTAPP_STATS_JSON
  o += ",\"cq_polls\":" + std::to_string(cq_polls_made());
  o += ",\"cqs\":" + cq_poll_stats_json();
  if (!unsupported.empty()) o += ",\"unsupported\":" + quote(unsupported);
  o += "}";
  return o;
}

bool write_result_file(const std::string& prefix, int rank, const std::string& json) {
  std::string path = prefix + ".r" + std::to_string(rank) + ".json";
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  bool ok = std::fputs(json.c_str(), f) >= 0 && std::fputc('\n', f) != EOF;
  ok = (std::fclose(f) == 0) && ok;
  return ok;
}

}  // namespace ftapp
