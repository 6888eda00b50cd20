#include "userspace/live/metrics_text.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <set>
#include <vector>

#include "common/live_format.h"

namespace fabtrace {
namespace live {

namespace {

// The counters a link row of the file carries, summed for "other".
struct Row {
  std::string labels;  // the process's and the link's, without braces
  uint64_t ops = 0, bytes = 0, errors = 0, eagain = 0, untimed = 0, sum_ns = 0;
  uint64_t p50 = 0, p90 = 0, p99 = 0;
  bool quantiles = false;
};

struct ProcessRows {
  const ProcessView* p;
  std::string labels;  // jobid, rank, pid
  std::vector<Row> links;
};

std::string seconds(uint64_t ns) {
  char b[40];
  std::snprintf(b, sizeof(b), "%.9g", static_cast<double>(ns) / 1e9);
  return b;
}

std::string label(const char* name, const std::string& value) {
  return std::string(name) + "=\"" + metric_label_value(value) + "\"";
}

std::vector<ProcessRows> rows_of(const NodeView& v, size_t max_links) {
  std::vector<ProcessRows> out;
  for (const ProcessView& p : v.procs) {
    ProcessRows pr;
    pr.p = &p;
    pr.labels = label("jobid", p.snap.job) + "," + label("rank", p.snap.rank) + "," +
                label("pid", std::to_string(p.snap.pid()));
    Row other;
    other.labels = pr.labels + "," + label("local", "other") + "," + label("remote", "other") +
                   "," + label("op", "other");
    std::set<std::string> seen;
    // The busiest rows by whole-run ops keep their own series (stable while
    // the job's mix is).
    std::vector<const LinkView*> order;
    for (const LinkView& l : p.links) order.push_back(&l);
    std::stable_sort(order.begin(), order.end(), [](const LinkView* a, const LinkView* b) {
      return a->row->c[kl_ops] > b->row->c[kl_ops];
    });
    for (const LinkView* l : order) {
      const uint64_t* c = l->row->c;
      Row r;
      r.labels = pr.labels + "," + label("local", l->local) + "," + label("remote", l->remote) +
                 "," + label("op", l->op);
      const bool own = pr.links.size() < max_links && seen.insert(r.labels).second;
      Row& d = own ? r : other;
      d.ops += c[kl_ops];
      d.bytes += c[kl_bytes];
      d.errors += c[kl_errors];
      d.eagain += c[kl_eagain];
      d.untimed += c[kl_untimed];
      d.sum_ns += c[kl_lat_sum_ns];
      if (own) {
        r.p50 = c[kl_p50_ns];
        r.p90 = c[kl_p90_ns];
        r.p99 = c[kl_p99_ns];
        r.quantiles = true;
        pr.links.push_back(r);
      }
    }
    if (order.size() > pr.links.size()) pr.links.push_back(other);
    out.push_back(std::move(pr));
  }
  return out;
}

class Out {
 public:
  void family(const char* name, const char* type, const char* help) {
    text_ += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }
  void sample(const std::string& name, const std::string& labels, const std::string& value) {
    text_ += name + (labels.empty() ? "" : "{" + labels + "}") + " " + value + "\n";
  }
  void sample(const std::string& name, const std::string& labels, uint64_t value) {
    sample(name, labels, std::to_string(value));
  }
  std::string text_;
};

}  // namespace

std::string metric_label_value(const std::string& s) {
  // Printable ASCII only: a byte that is not valid UTF-8 would make the whole
  // file unreadable to node_exporter (the names come from traced processes).
  std::string out;
  for (unsigned char c : s) {
    if (c == '\\' || c == '"')
      out += '\\', out += static_cast<char>(c);
    else if (c >= 0x20 && c < 0x7f)
      out += static_cast<char>(c);
    else
      out += '?';
  }
  return out;
}

std::string metrics_text(const NodeView& v, size_t max_links) {
  const std::vector<ProcessRows> rows = rows_of(v, max_links);
  Out o;
  o.family("fabtrace_processes", "gauge", "Traced processes with a live snapshot on this node.");
  o.sample("fabtrace_processes", "", v.procs.size());
  o.family("fabtrace_record_session", "gauge",
           "1 while a fabtrace record session runs on this node (stall causes), else 0.");
  o.sample("fabtrace_record_session", "", v.session ? 1 : 0);
  o.family("fabtrace_process_info", "gauge", "A traced process: its program's name.");
  for (const ProcessRows& pr : rows)
    o.sample("fabtrace_process_info", pr.labels + "," + label("comm", pr.p->snap.comm), 1);
  o.family("fabtrace_snapshot_age_seconds", "gauge",
           "Time since the process last published its live snapshot.");
  for (const ProcessRows& pr : rows) {
    char b[32];
    std::snprintf(b, sizeof(b), "%.3f", pr.p->age_s);
    o.sample("fabtrace_snapshot_age_seconds", pr.labels, b);
  }

  const auto links = [&](const char* name, const char* type, const char* help,
                         const std::function<void(const Row&)>& each) {
    o.family(name, type, help);
    for (const ProcessRows& pr : rows)
      for (const Row& r : pr.links) each(r);
  };
  links("fabtrace_ops_total", "counter", "Ops completed successfully, per link and op.",
        [&](const Row& r) { o.sample("fabtrace_ops_total", r.labels, r.ops); });
  links("fabtrace_bytes_total", "counter", "Bytes of the ops completed successfully.",
        [&](const Row& r) { o.sample("fabtrace_bytes_total", r.labels, r.bytes); });
  links("fabtrace_op_errors_total", "counter", "Ops completed in error (cancelled included).",
        [&](const Row& r) { o.sample("fabtrace_op_errors_total", r.labels, r.errors); });
  links("fabtrace_op_eagain_total", "counter", "Ops refused at issue with -FI_EAGAIN.",
        [&](const Row& r) { o.sample("fabtrace_op_eagain_total", r.labels, r.eagain); });
  links("fabtrace_untimed_ops_total", "counter",
        "Ops issued without a completion to time (fi_inject, ...): counted, not timed.",
        [&](const Row& r) { o.sample("fabtrace_untimed_ops_total", r.labels, r.untimed); });
  links("fabtrace_op_latency_seconds", "summary",
        "Op latency from issue to the poll that returned its completion (receives include the "
        "wait for their sender); quantiles over the whole run, within 12.5%.",
        [&](const Row& r) {
          if (!r.quantiles) return;
          o.sample("fabtrace_op_latency_seconds", r.labels + ",quantile=\"0.5\"", seconds(r.p50));
          o.sample("fabtrace_op_latency_seconds", r.labels + ",quantile=\"0.9\"", seconds(r.p90));
          o.sample("fabtrace_op_latency_seconds", r.labels + ",quantile=\"0.99\"", seconds(r.p99));
          o.sample("fabtrace_op_latency_seconds_sum", r.labels, seconds(r.sum_ns));
          o.sample("fabtrace_op_latency_seconds_count", r.labels, r.ops);
        });

  const auto cqs = [&](const char* name, const char* type, const char* help,
                       const std::function<std::string(const CqView&)>& value) {
    o.family(name, type, help);
    for (const ProcessRows& pr : rows)
      for (const CqView& c : pr.p->cqs)
        o.sample(name, pr.labels + "," + label("cq", std::to_string(c.id)), value(c));
  };
  cqs("fabtrace_cq_polls_total", "counter", "Polls of a completion queue.",
      [](const CqView& c) { return std::to_string(c.row->c[kq_polls]); });
  cqs("fabtrace_cq_gap_max_seconds", "gauge",
      "Longest gap between two polls of a completion queue, whole run.",
      [](const CqView& c) { return seconds(c.row->c[kq_max_gap_ns]); });
  cqs("fabtrace_cq_gap_interval_max_seconds", "gauge",
      "Longest poll gap now: the longest that ended in the last interval, or the one still "
      "open when longer.",
      [](const CqView& c) { return seconds(c.gap_now_ns); });
  cqs("fabtrace_cq_gaps_1ms_total", "counter", "Poll gaps of 1 ms or more.",
      [](const CqView& c) { return std::to_string(c.row->c[kq_gaps_1ms]); });

  if (v.session) {
    const auto causes = [&](const char* name, const char* help, bool slow) {
      o.family(name, "counter", help);
      for (const ProcessRows& pr : rows) {
        const auto it = v.counts.find(static_cast<uint32_t>(pr.p->snap.pid()));
        if (it == v.counts.end()) continue;
        for (const CauseCount& c : it->second)
          o.sample(name, pr.labels + "," + label("cause", c.cause), slow ? c.slow_ops : c.stalls);
      }
    };
    causes("fabtrace_stalls_total",
           "CQ poll gaps of FABTRACE_STALL_US or more, by the kernel's main cause (fabtrace record "
           "session).",
           false);
    causes("fabtrace_slow_ops_total",
           "Ops of FABTRACE_SLOW_OP_US or more, by the kernel's main cause (fabtrace record "
           "session).",
           true);
  }
  return o.text_;
}

}  // namespace live
}  // namespace fabtrace
