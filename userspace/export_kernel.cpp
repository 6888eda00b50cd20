// fabtrace export kernel: a kernel log (fabtrace record) as text or CSV, one row
// per event, for people and scripts; optionally only some kinds, or only the
// longest N events.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/csv.h"
#include "common/kernel_explain.h"
#include "common/kernel_log.h"
#include "userspace/commands.h"
#include "userspace/report/job/kernel_rows.h"

namespace fabtrace {

namespace {

void write_row(std::FILE* out, bool csv, uint64_t t0, const KernelRow& row, bool* ok) {
  int n;
  if (csv) {
    n = std::fprintf(
        out, "%llu,%s,%u,%u,%u,%llu,%llu,%s,%u,%s,%s\n", static_cast<unsigned long long>(row.ts_ns),
        row.kind.c_str(), row.cpu, row.pid, row.tid, static_cast<unsigned long long>(row.start_ns),
        static_cast<unsigned long long>(row.dur_ns), csv_quote(row.cause).c_str(), row.other_pid,
        csv_quote(row.other_comm).c_str(), csv_quote(row.detail).c_str());
  } else {
    const double t = row.ts_ns >= t0 ? static_cast<double>(row.ts_ns - t0) / 1e9
                                     : -static_cast<double>(t0 - row.ts_ns) / 1e9;
    std::string other;
    if (row.other_pid || !row.other_comm.empty())
      other = " [" + row.other_comm +
              (row.other_pid ? ":" + std::to_string(row.other_pid) : std::string()) + "]";
    const std::string dur = row.dur_ns ? human_ns(row.dur_ns) : "-";
    n = std::fprintf(out, "%12.6f %-10s %7u/%-7u cpu%-3u %12s  %s%s%s%s\n", t, row.kind.c_str(),
                     row.pid, row.tid, row.cpu, dur.c_str(), row.cause.c_str(), other.c_str(),
                     row.detail.empty() ? "" : "  ", row.detail.c_str());
  }
  if (n < 0) *ok = false;
}

}  // namespace

int export_kernel(const std::string& in, bool csv, std::FILE* out) {
  return export_kernel(in, csv, {}, 0, out);
}

int export_kernel(const std::string& in, bool csv, const std::set<std::string>& kinds, size_t top,
                  std::FILE* out) {
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
    for (const KernelSymbol& s : r.symbols())
      if (s.cls == kernel_log::kUprobeSiteClass)
        std::fprintf(out, "# uprobe site +0x%llx %s\n", static_cast<unsigned long long>(s.addr),
                     s.name.c_str());
    for (const KernelTask& t : r.tasks())
      std::fprintf(out, "# task pid %ld tid %ld %s rank %s%s\n", t.pid, t.tid, t.comm.c_str(),
                   t.rank.empty() ? "-" : t.rank.c_str(), t.preload ? " (preload)" : "");
    std::fprintf(out,
                 "# time (s since the session started)  event  pid/tid  cpu  duration  what\n");
  }
  bool write_ok = true;
  // --top keeps the N longest in a min-heap: bounded memory on any log.
  auto longer = [](const KernelRow& a, const KernelRow& b) { return a.dur_ns > b.dur_ns; };
  std::vector<KernelRow> heap;
  const bool ok = r.read_all(
      [&](const ft_hdr& h, const uint8_t* rec) {
        if (!kinds.empty() && !kinds.count(kernel_log::kind_name(h.kind))) return;
        KernelRow row = kernel_row(h, rec, names);
        if (!top) {
          write_row(out, csv, t0, row, &write_ok);
          return;
        }
        if (heap.size() < top) {
          heap.push_back(std::move(row));
          std::push_heap(heap.begin(), heap.end(), longer);
        } else if (row.dur_ns > heap.front().dur_ns) {
          std::pop_heap(heap.begin(), heap.end(), longer);
          heap.back() = std::move(row);
          std::push_heap(heap.begin(), heap.end(), longer);
        }
      },
      &err);
  if (!ok) {
    std::fprintf(stderr, "fabtrace: %s\n", err.c_str());
    return 1;
  }
  std::sort_heap(heap.begin(), heap.end(), longer);
  for (const KernelRow& row : heap) write_row(out, csv, t0, row, &write_ok);
  const KernelStats& s = r.stats();
  if (!csv)
    std::fprintf(out,
                 "# %llu events; %llu lost in the kernel (ring buffer full), %llu program runs "
                 "missed; %llu returns to a CPU without a departure seen, %llu without an "
                 "arrival seen; %llu retransmits and %llu drops on sockets not traced%s\n",
                 static_cast<unsigned long long>(r.records_read()),
                 static_cast<unsigned long long>(s.lost_total()),
                 static_cast<unsigned long long>(s.recursion_misses),
                 static_cast<unsigned long long>(s.in_without_out),
                 static_cast<unsigned long long>(s.in_unseen),
                 static_cast<unsigned long long>(s.untraced_retrans),
                 static_cast<unsigned long long>(s.untraced_drops),
                 r.has_end() ? "" : "; no end block: the collector did not stop cleanly");
  const uint64_t given = s.given_way_total(), evicted = s.evicted_total();
  const std::string short_irqs = s.short_softirqs ? ", " + std::to_string(s.short_softirqs) + " " +
                                                        short_softirqs_what(r.meta())
                                                  : std::string();
  if (!csv && given + evicted + s.short_softirqs)
    std::fprintf(out,
                 "# %llu raw events not in the log (%llu outside the windows kept around stalls "
                 "and slow ops, %llu dropped oldest first to stay within its bound%s): their "
                 "sums are the summary rows\n",
                 static_cast<unsigned long long>(given + evicted + s.short_softirqs),
                 static_cast<unsigned long long>(given), static_cast<unsigned long long>(evicted),
                 short_irqs.c_str());
  if (!csv && s.over_size)
    std::fprintf(out, "# %llu events past the log's bound were not written (--max-size)\n",
                 static_cast<unsigned long long>(s.over_size));
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

}  // namespace fabtrace
