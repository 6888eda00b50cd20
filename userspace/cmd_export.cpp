// fabtrace export: the per-op timeline file ("oplog") in other formats.
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/csv.h"
#include "common/op_kinds.h"
#include "common/oplog_file.h"
#include "common/printable.h"
#include "common/safe_output.h"
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

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: fabtrace export ops FILE [--csv] [-o OUT]\n"
               "       fabtrace export marks FILE [--csv]\n"
               "       fabtrace export kernel FILE [--csv] [--kind K,...] [--top N]\n");
}

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

int cmd_export(int argc, char** argv) {
  if (argc < 1 || !std::strcmp(argv[0], "-h") || !std::strcmp(argv[0], "--help")) {
    usage(argc < 1 ? stderr : stdout);
    return argc < 1 ? 2 : 0;
  }
  if (!std::strcmp(argv[0], "kernel")) return cmd_export_kernel(argc - 1, argv + 1);
  if (!std::strcmp(argv[0], "marks")) return cmd_export_marks(argc - 1, argv + 1);
  if (std::strcmp(argv[0], "ops") != 0) {
    std::fprintf(stderr, "fabtrace export: unknown kind '%s' ('ops', 'marks' or 'kernel')\n",
                 argv[0]);
    usage(stderr);
    return 2;
  }
  std::string in, out_path;
  bool have_in = false;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (!std::strcmp(a, "--csv")) continue;
    if (!std::strcmp(a, "-o") || !std::strcmp(a, "--output")) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "fabtrace export: %s needs a file name\n", a);
        return 2;
      }
      out_path = argv[++i];
      continue;
    }
    if (!std::strncmp(a, "--output=", 9)) {
      out_path = a + 9;
      continue;
    }
    if (!std::strcmp(a, "-h") || !std::strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    }
    if (a[0] == '-' && a[1] != '\0') {
      std::fprintf(stderr, "fabtrace export: unknown option '%s'\n", a);
      usage(stderr);
      return 2;
    }
    if (have_in) {
      std::fprintf(stderr, "fabtrace export: more than one input file ('%s')\n", a);
      return 2;
    }
    in = a;
    have_in = true;
  }
  if (!have_in) {
    std::fprintf(stderr, "fabtrace export: no input file\n");
    usage(stderr);
    return 2;
  }
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
