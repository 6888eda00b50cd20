// fabtrace export marks FILE: the marks of a per-op timeline file (the
// application's fabtrace_mark/_begin/_end, and the capture window's changes)
// as CSV: time_ns,kind,name,tid, in CLOCK_MONOTONIC ns.
#include <cstdio>
#include <cstring>
#include <string>

#include "common/csv.h"
#include "common/oplog_file.h"
#include "common/printable.h"
#include "userspace/commands.h"

namespace fabtrace {

int export_marks_csv(const std::string& in, std::FILE* out) {
  OplogReader r;
  std::string err;
  if (!r.open(in, &err) || !r.scan(&err)) {
    std::fprintf(stderr, "fabtrace: %s\n", err.c_str());
    return 1;
  }
  const OplogCalib cal = r.has_calib() ? r.calib() : OplogCalib();
  std::fprintf(out, "# fabtrace marks window=%s signal=%s\n",
               printable(r.capture().spec.empty() ? "all" : r.capture().spec).c_str(),
               printable(r.capture().signal.empty() ? "?" : r.capture().signal).c_str());
  std::fprintf(out, "time_ns,kind,name,tid\n");
  uint64_t bad = 0;
  const bool ok = r.read_all(
      [](const oplog::OpEntry*, size_t) {},
      [&](const oplog::OpEntry* e, size_t n) {
        for (size_t i = 0; i < n; ++i) {
          int64_t t;
          if (!cal.mono_ns_checked(e[i].start_ticks, &t)) {
            ++bad;
            continue;
          }
          std::fprintf(out, "%lld,%s,%s,%u\n", static_cast<long long>(t), mark_kind_name(e[i].kind),
                       csv_quote(r.mark_name(e[i].link_id)).c_str(), e[i].tid);
        }
      },
      &err);
  if (!ok) {
    std::fprintf(stderr, "fabtrace: %s\n", err.c_str());
    return 1;
  }
  if (r.truncated())
    std::fprintf(stderr, "fabtrace: %s was cut short (exported the marks before that)\n",
                 printable(in).c_str());
  if (bad)
    std::fprintf(stderr, "fabtrace: %llu marks left out: times beyond any clock\n",
                 static_cast<unsigned long long>(bad));
  return std::fflush(out) == 0 && !std::ferror(out) ? 0 : 1;
}

}  // namespace fabtrace
