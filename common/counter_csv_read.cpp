// A counters CSV read back (format in counter_csv.h), within the bounds of
// common/input_limits.h.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "common/comma_list.h"
#include "common/counter_csv.h"
#include "common/decimal.h"
#include "common/env.h"
#include "common/input_limits.h"

namespace fabtrace {

// ---- CSV input ------------------------------------------------------------------

int CounterSeries::column(const std::string& name) const {
  for (size_t i = 0; i < columns.size(); ++i)
    if (columns[i] == name) return static_cast<int>(i);
  return -1;
}

namespace {

// The "key=value" words of a comment line.
std::vector<std::pair<std::string, std::string>> key_values(const std::string& line) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t j = line.find(' ', i);
    if (j == std::string::npos) j = line.size();
    const std::string word = line.substr(i, j - i);
    const size_t eq = word.find('=');
    if (eq != std::string::npos) out.emplace_back(word.substr(0, eq), word.substr(eq + 1));
    i = j;
  }
  return out;
}

}  // namespace

bool read_counter_csv(const std::string& path, CounterSeries* out, std::string* error) {
  auto fail = [error](const std::string& msg) {
    if (error) *error = msg;
    return false;
  };
  *out = CounterSeries();
  std::string text, why;
  if (!read_bounded_file(path, limits::kMaxCounterCsvBytes, &text, &why))
    return fail(path + ": " + why);
  return parse_counter_csv(text, path, out, error);
}

bool parse_counter_csv(const std::string& text, const std::string& path, CounterSeries* out,
                       std::string* error) {
  auto fail = [error](const std::string& msg) {
    if (error) *error = msg;
    return false;
  };
  *out = CounterSeries();
  // Strings kept from the file are bounded; a longer one is not of our writer.
  auto bounded = [&](const std::string& v, const std::string& where, const char* what) {
    if (v.size() <= limits::kMaxStringBytes) return true;
    fail(where + what + " is " + std::to_string(v.size()) + " bytes long, more than " +
         std::to_string(limits::kMaxStringBytes));
    return false;
  };
  uint64_t values = 0;

  bool saw_format = false, saw_header = false;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    ++line_no;
    if (nl == std::string::npos) {
      // The writer stopped in the middle of this line.
      if (!saw_header) return fail(path + ": cut short before the header row");
      out->truncated = true;
      break;
    }
    const std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    const std::string where = path + ":" + std::to_string(line_no) + ": ";

    if (!saw_format) {
      // "# <format name> v<version>", then the key=value words.
      const std::string name = std::string("# ") + kCounterCsvFormatName + " ";
      const std::string version = "v" + std::to_string(kCounterCsvVersion);
      const size_t at = name.size();
      if (line.compare(0, at, name) != 0)
        return fail(where + "not a " + kCounterCsvFormatName + " file");
      if (line.compare(at, version.size() + 1, version + " ") != 0 &&
          line.compare(at, std::string::npos, version) != 0)
        return fail(where + "unsupported version (" + line.substr(at, line.find(' ', at) - at) +
                    ")");
      saw_format = true;
      for (const auto& kv : key_values(line)) {
        if (!bounded(kv.second, where, kv.first.c_str())) return false;
        if (kv.first == "host") out->host = kv.second;
        if (kv.first == "rank") out->rank = kv.second;
        if (kv.first == "pid") {
          uint64_t pid = 0;
          if (!parse_decimal(kv.second, &pid) || pid > static_cast<uint64_t>(INT32_MAX))
            return fail(where + "pid is not a process id");
          out->pid = static_cast<long>(pid);
        }
      }
      continue;
    }
    if (!line.empty() && line[0] == '#') {
      if (saw_header) return fail(where + "comment after the header row");
      if (line.compare(0, 6, "# dev ") == 0) {
        if (out->device_info.size() >= limits::kMaxCounterDevices)
          return fail(where + "more than " + std::to_string(limits::kMaxCounterDevices) +
                      " devices");
        if (!bounded(line, where, "the line")) return false;
        CounterSeries::Device d;
        const size_t e = line.find(' ', 6);
        d.name = line.substr(6, e == std::string::npos ? std::string::npos : e - 6);
        for (const auto& kv : key_values(line)) {
          if (kv.first == "nic_addr") d.nic_addr = kv.second;
          if (kv.first == "nid") d.nid = kv.second;
        }
        out->device_info.push_back(std::move(d));
      } else if (line.compare(0, 14, "# interval_ms=") == 0) {
        if (!bounded(line, where, "the line")) return false;
        for (const auto& kv : key_values(line)) {
          const std::string& k = kv.first;
          if (k == "interval_ms") parse_decimal(kv.second, &out->interval_ms);
          if (k == "achieved_mean_ms") {
            const double ms = std::strtod(kv.second.c_str(), nullptr);
            out->achieved_mean_ms = finite_in(ms, 0, limits::kMaxSeconds * 1e3) ? ms : 0.0;
          }
          if (k == "devices") out->devices = split_commas(kv.second);
          if (k == "counters") parse_decimal(kv.second, &out->counters);
          if (k == "samples") parse_decimal(kv.second, &out->samples);
          if (k == "dropped") parse_decimal(kv.second, &out->dropped);
          if (k == "read_errors") parse_decimal(kv.second, &out->read_errors);
        }
      } else if (line.compare(0, kCounterWriterPrefixLen, kCounterWriterPrefix) == 0) {
        if (!bounded(line, where, "the line")) return false;
        out->fabtrace_version = line.substr(kCounterWriterPrefixLen);
      }
      continue;  // other comment lines: later additions
    }
    if (line.empty()) continue;
    if (!saw_header) {
      if (std::count(line.begin(), line.end(), ',') >=
          static_cast<std::ptrdiff_t>(limits::kMaxCounterColumns))
        return fail(where + "more than " + std::to_string(limits::kMaxCounterColumns) + " columns");
      out->columns = split_commas(line);
      for (const std::string& c : out->columns)
        if (!bounded(c, where, "a column name")) return false;
      if (out->columns.size() < 2 || out->columns[0] != kCounterMonoColumn ||
          out->columns[1] != kCounterWallColumn)
        return fail(where + "header row does not start with " + kCounterMonoColumn + "," +
                    kCounterWallColumn);
      saw_header = true;
      continue;
    }
    std::vector<uint64_t> row;
    row.reserve(out->columns.size());
    size_t i = 0;
    while (true) {
      size_t j = line.find(',', i);
      if (j == std::string::npos) j = line.size();
      uint64_t v;
      if (!parse_decimal(line.substr(i, j - i), &v))
        return fail(where + "field " + std::to_string(row.size() + 1) + " is not a number");
      row.push_back(v);
      if (j == line.size() || row.size() > out->columns.size()) break;
      i = j + 1;
    }
    if (row.size() != out->columns.size())
      return fail(where + std::to_string(row.size()) + " fields, the header has " +
                  std::to_string(out->columns.size()));
    // The two clocks of the row are times: later arithmetic on them must not wrap.
    if (!time_ns_ok(row[0]) || !time_ns_ok(row[1]))
      return fail(where + "t_mono_ns or wall_ns is beyond any clock (" + std::to_string(row[0]) +
                  ", " + std::to_string(row[1]) + ")");
    values += row.size();
    if (values > limits::kMaxCounterValues || out->rows.size() >= limits::kMaxCounterRows)
      return fail(where + "more samples than fabtrace reads (" +
                  std::to_string(limits::kMaxCounterRows) + " rows, " +
                  std::to_string(limits::kMaxCounterValues) + " values)");
    out->rows.push_back(std::move(row));
  }
  if (!saw_format) return fail(path + ": empty file");
  if (!saw_header) return fail(path + ": no header row");
  return true;
}

}  // namespace fabtrace
