// fabtrace export kernel: a kernel log (fabtrace record) as text or CSV, one row
// per event, for people and scripts.
#include <cstdio>
#include <cstring>
#include <string>

#include "common/kernel_explain.h"
#include "common/kernel_log.h"
#include "userspace/commands.h"
#include "userspace/report/kernel_rows.h"
#include "userspace/report/tables.h"

namespace fabtrace {

namespace {

void usage(std::FILE* f) { std::fprintf(f, "usage: fabtrace export kernel FILE [--csv]\n"); }

}  // namespace

int export_kernel(const std::string& in, bool csv, std::FILE* out) {
  KernelLogReader r;
  std::string err;
  if (!r.open(in, &err)) {
    std::fprintf(stderr, "fabtrace: %s\n", err.c_str());
    return 1;
  }
  // The names (symbols) come in blocks that may follow events: a first pass
  // collects them without formatting anything.
  if (!r.read_all([](const ft_hdr&, const uint8_t*) {}, &err)) {
    std::fprintf(stderr, "fabtrace: %s\n", err.c_str());
    return 1;
  }
  const KernelNames names = KernelNames::from(r);
  const KernelLogMeta& m = r.meta();
  const uint64_t t0 = m.mono_ns;
  if (csv) {
    std::fprintf(
        out,
        "# fabtrace kernel log host=%s kernel=%s collector_pid=%ld mono_ns=%llu real_ns=%llu\n",
        m.host.c_str(), m.kernel.c_str(), m.pid, static_cast<unsigned long long>(m.mono_ns),
        static_cast<unsigned long long>(m.real_ns));
    std::fprintf(out, "ts_ns,kind,cpu,pid,tid,start_ns,dur_ns,cause,other_pid,other_comm,detail\n");
  } else {
    std::fprintf(out, "# host %s, kernel %s, collector pid %ld, command: %s\n", m.host.c_str(),
                 m.kernel.c_str(), m.pid, m.command.empty() ? "(none)" : m.command.c_str());
    for (const KernelAttach& a : m.attach)
      if (a.state != "attached")
        std::fprintf(out, "# %s %s %s: %s\n", a.program.c_str(), a.point.c_str(), a.state.c_str(),
                     a.detail.c_str());
    for (const KernelTask& t : r.tasks())
      std::fprintf(out, "# task pid %ld tid %ld %s rank %s%s\n", t.pid, t.tid, t.comm.c_str(),
                   t.rank.empty() ? "-" : t.rank.c_str(), t.preload ? " (preload)" : "");
    std::fprintf(out, "# time (s since the session started)  event  pid/tid  cpu  what\n");
  }
  bool write_ok = true;
  const bool ok = r.read_all(
      [&](const ft_hdr& h, const uint8_t* rec) {
        const KernelRow row = kernel_row(h, rec, names);
        int n;
        if (csv) {
          n = std::fprintf(out, "%llu,%s,%u,%u,%u,%llu,%llu,%s,%u,%s,%s\n",
                           static_cast<unsigned long long>(row.ts_ns), row.kind.c_str(), row.cpu,
                           row.pid, row.tid, static_cast<unsigned long long>(row.start_ns),
                           static_cast<unsigned long long>(row.dur_ns),
                           report::csv_quote(row.cause).c_str(), row.other_pid,
                           report::csv_quote(row.other_comm).c_str(),
                           report::csv_quote(row.detail).c_str());
        } else {
          const double t = row.ts_ns >= t0 ? static_cast<double>(row.ts_ns - t0) / 1e9
                                           : -static_cast<double>(t0 - row.ts_ns) / 1e9;
          std::string other;
          if (row.other_pid || !row.other_comm.empty())
            other = " [" + row.other_comm +
                    (row.other_pid ? ":" + std::to_string(row.other_pid) : "") + "]";
          n = std::fprintf(out, "%12.6f %-10s %u/%u cpu%u %s%s%s%s%s\n", t, row.kind.c_str(),
                           row.pid, row.tid, row.cpu, row.cause.c_str(),
                           row.dur_ns ? (" " + human_ns(row.dur_ns)).c_str() : "", other.c_str(),
                           row.detail.empty() ? "" : " ", row.detail.c_str());
        }
        if (n < 0) write_ok = false;
      },
      &err);
  if (!ok) {
    std::fprintf(stderr, "fabtrace: %s\n", err.c_str());
    return 1;
  }
  const KernelStats& s = r.stats();
  if (!csv)
    std::fprintf(
        out,
        "# %llu events; %llu lost in the kernel (ring buffer full), %llu program runs missed; "
        "%llu returns to a CPU without a departure seen, %llu without an arrival seen%s\n",
        static_cast<unsigned long long>(r.records_read()),
        static_cast<unsigned long long>(s.lost_total()),
        static_cast<unsigned long long>(s.recursion_misses),
        static_cast<unsigned long long>(s.in_without_out),
        static_cast<unsigned long long>(s.in_unseen),
        r.has_end() ? "" : "; no end block: the collector did not stop cleanly");
  if (r.truncated())
    std::fprintf(stderr, "fabtrace: %s: cut short (%s); the events before it are shown\n",
                 in.c_str(), r.truncation().c_str());
  if (r.bad_records())
    std::fprintf(stderr, "fabtrace: %s: %llu malformed records skipped\n", in.c_str(),
                 static_cast<unsigned long long>(r.bad_records()));
  if (std::fflush(out) != 0 || !write_ok) {
    std::fprintf(stderr, "fabtrace: writing the export failed\n");
    return 1;
  }
  return 0;
}

int cmd_export_kernel(int argc, char** argv) {
  std::string in;
  bool csv = false;
  for (int i = 0; i < argc; ++i) {
    const char* a = argv[i];
    if (!std::strcmp(a, "--csv")) {
      csv = true;
    } else if (!std::strcmp(a, "-h") || !std::strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else if (a[0] == '-' && a[1]) {
      std::fprintf(stderr, "fabtrace export kernel: unknown option '%s'\n", a);
      usage(stderr);
      return 2;
    } else if (!in.empty()) {
      std::fprintf(stderr, "fabtrace export kernel: more than one input file\n");
      return 2;
    } else {
      in = a;
    }
  }
  if (in.empty()) {
    usage(stderr);
    return 2;
  }
  return export_kernel(in, csv, stdout);
}

}  // namespace fabtrace
