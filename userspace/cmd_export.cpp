// fabtrace export: the per-op timeline file ("oplog") in other formats.
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/comma_list.h"
#include "common/csv.h"
#include "common/kernel_log.h"
#include "common/op_kinds.h"
#include "common/oplog_file.h"
#include "common/printable.h"
#include "common/safe_output.h"
#include "userspace/cli/cli.h"
#include "userspace/commands.h"

namespace fabtrace {

namespace {

constexpr size_t kOutBuffer = 1 << 20;

// One line of the comment: no line breaks inside.
std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

std::string fmt_double(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return r.ec == std::errc() ? std::string(buf, r.ptr) : std::string("0");
}

// Rows are built in a private buffer and handed to stdio in large pieces.
class Out {
 public:
  explicit Out(std::FILE* f) : f_(f) { buf_.reserve(kOutBuffer + 4096); }
  void put(const std::string& s) { buf_ += s; }
  void put(const char* s, size_t n) { buf_.append(s, n); }
  void put(char c) { buf_ += c; }
  template <typename T>
  void num(T v) {
    char b[24];
    const auto r = std::to_chars(b, b + sizeof(b), v);
    buf_.append(b, r.ptr);
  }
  void end_row() {
    buf_ += '\n';
    if (buf_.size() >= kOutBuffer) flush();
  }
  void flush() {
    if (!buf_.empty() && std::fwrite(buf_.data(), 1, buf_.size(), f_) != buf_.size()) bad_ = true;
    buf_.clear();
  }
  bool ok() {
    flush();
    return !bad_ && std::fflush(f_) == 0 && !std::ferror(f_);
  }

 private:
  std::FILE* f_;
  std::string buf_;
  bool bad_ = false;
};

}  // namespace

int export_ops_csv(const std::string& in, std::FILE* out) {
  OplogReader r;
  std::string err;
  if (!r.open(in, &err)) {
    std::fprintf(stderr, "fabtrace: %s\n", err.c_str());
    return 1;
  }
  // First pass (small blocks only): the last calibration and every link.
  if (!r.scan(&err)) {
    std::fprintf(stderr, "fabtrace: %s\n", err.c_str());
    return 1;
  }
  const bool has_calib = r.has_calib();
  // Without a calibration the ticks are taken as ns (the identity).
  const OplogCalib cal = has_calib ? r.calib() : OplogCalib();

  // ",local,remote" per link id, made once.
  std::unordered_map<uint32_t, std::string> link_cols;
  const auto add_link = [&](const OplogLink& l) {
    link_cols[l.id] = "," + csv_quote(l.local) + "," + csv_quote(l.remote);
  };
  for (const auto& kv : r.links()) add_link(kv.second);
  // ",op" per kind: the file's own names, which may know kinds this build does not.
  std::vector<std::string> op_cols(256);
  const std::vector<std::string>& names = r.header().op_names;
  for (size_t k = 0; k < op_cols.size(); ++k) {
    std::string n = k < names.size() ? names[k] : "";
    if (n.empty()) n = op_name(static_cast<OpKind>(k));
    if (n.empty() || n == "?") n = "kind" + std::to_string(k);
    op_cols[k] = "," + csv_quote(n);
  }

  const OplogMeta& m = r.header().meta;
  Out o(out);
  o.put("# fabtrace ops host=" + one_line(m.host) + " rank=" + one_line(m.rank) +
        " pid=" + std::to_string(m.pid) +
        " clock=" + (has_calib ? (cal.tsc ? "tsc" : "clock_gettime") : "none") +
        " residual_ns=" + fmt_double(has_calib ? cal.residual_ns : 0.0) +
        " anchor_mono_ns=" + std::to_string(has_calib ? cal.mono0_ns : 0) +
        " anchor_wall_ns=" + std::to_string(has_calib ? cal.real0_ns : 0) +
        " (times are CLOCK_MONOTONIC ns; wall = t - anchor_mono_ns + anchor_wall_ns)");
  o.end_row();
  o.put("start_ns,end_ns,dur_ns,op,bytes,local_nic,remote_nic,error,tid,size_known");
  o.end_row();

  // Second pass: stream the ops.
  uint64_t rows = 0, bad_times = 0;
  uint32_t last_id = 0;
  const std::string* last_cols = nullptr;
  static const std::string kNoLink = ",,";
  const bool read_ok = r.read_all(
      [&](const oplog::OpEntry* e, size_t n) {
        for (size_t i = 0; i < n; ++i) {
          const oplog::OpEntry& op = e[i];
          int64_t s, t;
          if (!cal.mono_ns_checked(op.start_ticks, &s) || !cal.mono_ns_checked(op.end_ticks, &t)) {
            ++bad_times;  // not a time on any clock: left out, counted
            continue;
          }
          ++rows;
          if (!last_cols || op.link_id != last_id) {
            auto it = link_cols.find(op.link_id);
            if (it == link_cols.end()) {
              // A link first seen now (the file grew since the first pass).
              const auto l = r.links().find(op.link_id);
              if (l != r.links().end()) {
                add_link(l->second);
                it = link_cols.find(op.link_id);
              }
            }
            last_id = op.link_id;
            last_cols = it != link_cols.end() ? &it->second : &kNoLink;
          }
          o.num(s);
          o.put(',');
          o.num(t);
          o.put(',');
          o.num(t - s);
          o.put(op_cols[op.kind]);
          o.put(',');
          o.num(op.bytes);
          o.put(*last_cols);
          o.put(op.error ? ",1," : ",0,");
          o.num(op.tid);
          // 0: a receive whose completion had no length; bytes is its posted size.
          o.put((op.flags & oplog::kOpSizeUnknown) ? ",0" : ",1");
          o.end_row();
        }
      },
      &err);
  const bool write_ok = o.ok();
  const int write_errno = errno;
  if (!read_ok) {
    std::fprintf(stderr, "fabtrace: %s\n", err.c_str());
    return 1;
  }
  if (!write_ok) {
    std::fprintf(stderr, "fabtrace: writing the CSV of %s failed: %s\n", in.c_str(),
                 std::strerror(write_errno));
    return 1;
  }
  if (r.truncated()) {
    const std::string why = r.stop_reason().empty() ? "" : " (" + r.stop_reason() + ")";
    std::fprintf(stderr, "fabtrace: %s was cut short after %llu ops%s (exported those)\n",
                 printable(in).c_str(), static_cast<unsigned long long>(rows), why.c_str());
  } else if (!r.has_end()) {
    std::fprintf(stderr,
                 "fabtrace: %s has no end record after %llu ops: the traced process did not "
                 "exit cleanly, or is still running\n",
                 in.c_str(), static_cast<unsigned long long>(rows));
  }
  if (r.has_end() && r.end_dropped() > 0) {
    std::fprintf(stderr, "fabtrace: note: the tracer dropped %llu ops that are not in %s\n",
                 static_cast<unsigned long long>(r.end_dropped()), in.c_str());
  }
  if (bad_times > 0)
    std::fprintf(stderr,
                 "fabtrace: %s: %llu ops left out: their times are beyond any clock with the "
                 "file's calibration\n",
                 printable(in).c_str(), static_cast<unsigned long long>(bad_times));
  if (rows > 0 && !has_calib) {
    std::fprintf(stderr, "fabtrace: %s has no clock calibration: times are raw ticks\n",
                 in.c_str());
  }
  return 0;
}

void add_export_command(cli::Cli& cli, CLI::App& parent) {
  CLI::App* e = cli.add_command(
      parent, "export",
      "export ops, export marks, export kernel: a per-op timeline, its marks, or a kernel log "
      "(fabtrace record) as CSV or text",
      nullptr);

  struct Args {
    std::string in, out, kinds;
    bool csv = false;
    uint64_t top = 0;
  };
  auto a = std::make_shared<Args>();
  CLI::App* ops = cli.add_command(
      *e, "ops",
      "write the per-op timeline FILE (an oplog written by the preload) as CSV: one row per op "
      "in file order, times in CLOCK_MONOTONIC nanoseconds, with the wall-clock anchor in the "
      "first line",
      [a] { return export_ops(a->in, a->out); });
  cli.require(
      ops->add_option("FILE", a->in, "the oplog (fabtrace_ops.<host>.r<rank>.p<pid>.oplog)"));
  ops->add_flag("--csv", a->csv, "CSV (the only format; accepted for clarity)");
  ops->add_option("-o,--output", a->out, "write to OUT instead of stdout (created new)")
      ->type_name("OUT");

  CLI::App* marks = cli.add_command(
      *e, "marks",
      "the marks and phases of the per-op timeline FILE (fabtrace.h's fabtrace_mark, "
      "fabtrace_begin, fabtrace_end, and the capture toggles) as CSV: time_ns,kind,name,tid",
      [a] { return export_marks_csv(a->in, stdout); });
  cli.require(marks->add_option("FILE", a->in, "the oplog"));
  marks->add_flag("--csv", a->csv, "CSV (the only format; accepted for clarity)");

  CLI::App* kernel = cli.add_command(
      *e, "kernel",
      "print a kernel log (fabtrace record), one row per event, or the N longest (--kind stall "
      "--top 10 lists the longest stalls and why)",
      [a] {
        std::set<std::string> kinds;
        for (const std::string& k : split_commas(a->kinds)) kinds.insert(k);
        return export_kernel(a->in, a->csv, kinds, a->top, stdout);
      });
  cli.require(
      kernel->add_option("FILE", a->in, "the kernel log (fabtrace_kernel.<host>.p<pid>.klog)"));
  kernel->add_flag("--csv", a->csv, "CSV instead of aligned text");
  std::string kinds_known;
  for (uint16_t n = 1; n < FT_EV_KINDS; ++n)
    kinds_known += (kinds_known.empty() ? "" : ", ") + kernel_log::kind_name(n);
  kernel->add_option("--kind", a->kinds, "only events of these kinds: " + kinds_known)
      ->type_name("K,...")
      ->check(CLI::Validator(
          [](const std::string& v) -> std::string {
            for (const std::string& k : split_commas(v)) {
              bool known = false;
              for (uint16_t n = 1; n < FT_EV_KINDS; ++n)
                known = known || kernel_log::kind_name(n) == k;
              if (!known) return "unknown kind '" + k + "'";
            }
            return "";
          },
          ""));
  cli::add_number(kernel, "--top", "only the N longest events, longest first", 1, 1000000,
                  [a](uint64_t v) { a->top = v; });
}

int export_ops(const std::string& in, const std::string& out_path) {
  if (out_path.empty() || out_path == "-") return export_ops_csv(in, stdout);

  {
    // Check the input before creating OUT, so a bad input leaves no empty file behind.
    OplogReader probe;
    std::string err;
    if (!probe.open(in, &err)) {
      std::fprintf(stderr, "fabtrace: %s\n", err.c_str());
      return 1;
    }
  }
  // Created, never opened over: a file or link at OUT is left as it is and
  // the next free name is used (common/safe_output.h).
  OutputDir out_dir;
  std::string written, note, why;
  std::FILE* f = create_output_file(out_path, &out_dir, &written, &note, &why);
  if (!f) {
    std::fprintf(stderr, "fabtrace: %s\n", printable(why).c_str());
    return 1;
  }
  if (!note.empty()) std::fprintf(stderr, "fabtrace: %s\n", printable(note).c_str());
  int rc = export_ops_csv(in, f);
  if (std::fclose(f) != 0 && rc == 0) {
    std::fprintf(stderr, "fabtrace: writing %s failed: %s\n", written.c_str(),
                 std::strerror(errno));
    rc = 1;
  }
  return rc;
}

}  // namespace fabtrace
