// The text of `fabtrace diff` on stdout: what changed from run A to run B,
// a few dozen lines whatever the jobs' sizes (lists are cut at opt.top).
#include <algorithm>

#include "common/printable.h"
#include "common/version.h"
#include "userspace/report/analysis/kernel_join.h"
#include "userspace/report/diff/job_diff.h"
#include "userspace/report/job/identity.h"
#include "userspace/report/text/formats.h"
#include "userspace/report/text/summary.h"

namespace fabtrace::report {

namespace {

// "p50 24.1 us -> 4.12 ms x171"
std::string figure(const char* name, const FigurePair& f, bool bandwidth) {
  if (!f.valid()) return "";
  return std::string("  ") + name + " " + (bandwidth ? fmt_op_gbps(f.a) : fmt_ns(f.a)) + " -> " +
         (bandwidth ? fmt_op_gbps(f.b) : fmt_ns(f.b)) + " " + fmt_ratio(f.ratio());
}

std::string link_line(const LinkDiff& l) {
  return "  " + printable(link_diff_name(l)) + figure("p50", l.p50, false) +
         figure("p99", l.p99, false) + figure("bw", l.gbps, true) + "  (" +
         fmt_count(l.a->row.count) + " -> " + fmt_count(l.b->row.count) + " ops)\n";
}

// A list of links, the first `top` of them.
void link_list(std::string* s, const std::string& title, std::vector<const LinkDiff*> rows,
               bool slower_first, size_t top) {
  *s += title + ": " + (rows.empty() ? std::string("none") : fmt_count(rows.size())) + "\n";
  std::stable_sort(rows.begin(), rows.end(), [slower_first](const LinkDiff* x, const LinkDiff* y) {
    return slower_first ? x->worst > y->worst : x->best < y->best;
  });
  for (size_t i = 0; i < rows.size() && i < top; ++i) *s += link_line(*rows[i]);
  if (rows.size() > top) *s += "  (+" + fmt_count(rows.size() - top) + " more)\n";
}

// The names of up to `top` rows in one run only.
void only_list(std::string* s, const char* title, const std::vector<const LinkDiff*>& rows,
               size_t top) {
  if (rows.empty()) return;
  *s += std::string(title) + ": " + fmt_count(rows.size()) + "\n";
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const LinkRow* r = rows[i]->a ? rows[i]->a : rows[i]->b;
    *s += "  " + printable(link_diff_name(*rows[i])) + "  " + fmt_count(r->row.issued()) + " ops\n";
  }
  if (rows.size() > top) *s += "  (+" + fmt_count(rows.size() - top) + " more)\n";
}

std::string run_line(const char* which, const std::string& dir, const Job& job) {
  std::string s = std::string(which) + "  " + printable(dir) + "  " + fmt_count(job.ranks.size()) +
                  (job.ranks.size() == 1 ? " rank, " : " ranks, ") + fmt_count(job.ops) + " ops, " +
                  fmt_bytes(job.bytes);
  if (job.first_wall_ns)
    s += printf_str(", %.3f s from ", (job.last_wall_ns - job.first_wall_ns) / 1e9) +
         fmt_wall(job.first_wall_ns, true);
  const JobIdentity id = job_identity(job);
  if (const std::string cmd = tally_text(id.commands, job.ranks.size(), 1); !cmd.empty())
    s += "\n   command " + printable(cmd);
  return s + "\n";
}

std::string names(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < 8; ++i) s += (i ? ", " : "") + printable(v[i]);
  if (v.size() > 8) s += " and " + std::to_string(v.size() - 8) + " more";
  return s;
}

}  // namespace

std::string diff_text(const Job& a, const Job& b, const JobDiff& d, const DiffOutputOptions& opt) {
  std::string s =
      std::string("fabtrace diff, by fabtrace ") + version() + ": run B against run A\n";
  s += run_line("A", opt.dir_a, a);
  s += run_line("B", opt.dir_b, b);
  s += "rule      ratios are B / A; a row is compared when it has at least " +
       fmt_count(d.opt.min_ops) +
       " completions in both runs (--min-ops) and listed when its p50, " +
       "p99 or bandwidth changed by " + fmt_ratio(d.opt.threshold) +
       " or more either way (--threshold)\n";
  s += "ranks     " + fmt_count(d.ranks_both) + " in both";
  if (!d.ranks_only_a.empty()) s += "; only in A: " + names(d.ranks_only_a);
  if (!d.ranks_only_b.empty()) s += "; only in B: " + names(d.ranks_only_b);
  s += "\n";
  s += "links     " + fmt_count(d.rows_compared) + " rows compared, " + fmt_count(d.rows_few_ops) +
       " with too few ops, " + fmt_count(d.rows_only_a) + " only in A, " +
       fmt_count(d.rows_only_b) + " only in B\n";

  std::vector<const LinkDiff*> slower, faster, rslower, rfaster, only_a, only_b;
  for (const LinkDiff& l : d.links) {
    if (!l.a) only_b.push_back(&l);
    if (!l.b) only_a.push_back(&l);
    if (l.slower) (l.recv ? rslower : slower).push_back(&l);
    if (l.faster) (l.recv ? rfaster : faster).push_back(&l);
  }
  link_list(&s, "slower in B (receives left out)", slower, true, opt.top);
  link_list(&s, "faster in B (receives left out)", faster, false, opt.top);
  if (!rslower.empty() || !rfaster.empty()) {
    s += "receives (their time includes waiting for the sender; not gated)\n";
    link_list(&s, "  slower", rslower, true, opt.top);
    link_list(&s, "  faster", rfaster, false, opt.top);
  }
  only_list(&s, "links only in A", only_a, opt.top);
  only_list(&s, "links only in B", only_b, opt.top);

  // NICs.
  {
    size_t compared = 0;
    std::vector<const NicDiff*> changed;
    for (const NicDiff& n : d.nics) {
      compared += n.compared;
      if (n.slower || n.faster) changed.push_back(&n);
    }
    std::stable_sort(changed.begin(), changed.end(),
                     [](const NicDiff* x, const NicDiff* y) { return x->slowdown > y->slowdown; });
    s += "NICs      achieved bandwidth (receives left out): " + fmt_count(compared) +
         " compared, " + (changed.empty() ? std::string("none") : fmt_count(changed.size())) +
         " changed\n";
    for (size_t i = 0; i < changed.size() && i < opt.top; ++i) {
      const NicDiff& n = *changed[i];
      s += "  " + printable(n.label) + "  " + fmt_op_gbps(n.gbps.a) + " -> " +
           fmt_op_gbps(n.gbps.b) + " " + fmt_ratio(n.gbps.ratio()) +
           (n.slower ? "  slower" : "  faster") + "  (" + fmt_count(n.a->nic.ops) + " -> " +
           fmt_count(n.b->nic.ops) + " ops, busy " + fmt_ns(n.a->nic.busy_ns) + " -> " +
           fmt_ns(n.b->nic.busy_ns) + ")\n";
    }
  }

  // The op mix.
  s += "ops       issued A -> B (share of all ops), mean latency A -> B; * changed\n";
  for (const OpDiff& o : d.ops) {
    s += (o.changed ? "  * " : "    ") + printable(o.op) + "  ";
    s += (o.in_a ? fmt_count(o.a.issued) : "-") + " -> " + (o.in_b ? fmt_count(o.b.issued) : "-");
    if (o.issued.valid() && o.a.issued != o.b.issued) s += " " + fmt_ratio(o.issued.ratio());
    s += printf_str(" (%.1f%% -> %.1f%%)", 100 * o.share_a, 100 * o.share_b);
    if (o.a.completed || o.b.completed)
      s += "  mean " + (o.a.completed ? fmt_ns(o.a.mean_ns) : "-") + " -> " +
           (o.b.completed ? fmt_ns(o.b.mean_ns) : "-") +
           (o.mean_ns.valid() ? " " + fmt_ratio(o.mean_ns.ratio()) : "");
    if (o.a.errors || o.b.errors)
      s += "  errors " + fmt_count(o.a.errors) + " -> " + fmt_count(o.b.errors);
    if (o.a.eagain || o.b.eagain)
      s += "  EAGAIN " + fmt_count(o.a.eagain) + " -> " + fmt_count(o.b.eagain);
    s += "\n";
  }
  if (d.ops.empty()) s += "  (no data-path ops)\n";

  // Stalls.
  s += "stalls    CQs with a longest poll gap >= " + fmt_ns(d.opt.stall_ns) +
       " (--stall-ms) in A or B, or whose gaps >= 1 ms changed by " + fmt_ratio(d.opt.threshold) +
       ": " + (d.stalls.empty() ? std::string("none") : fmt_count(d.stalls.size())) + "\n";
  for (size_t i = 0; i < d.stalls.size() && i < opt.top; ++i) {
    const StallDiff& st = d.stalls[i];
    s += printf_str("  %-7s ", stall_kind_name(st.kind)) + printable(st.label) + "  longest " +
         (st.a ? fmt_ns(st.gap_ns.a) : "-") + " -> " + (st.b ? fmt_ns(st.gap_ns.b) : "-") +
         "  gaps >= 1 ms " + (st.a ? fmt_count(static_cast<uint64_t>(st.long_gaps.a)) : "-") +
         " -> " + (st.b ? fmt_count(static_cast<uint64_t>(st.long_gaps.b)) : "-") + "\n";
    // The cause of the longest gap in each run that has a stall.
    for (const Stall* x : {st.a, st.b}) {
      if (!x || x->cq.max_gap_ns < d.opt.stall_ns) continue;
      const std::string why = stall_why(*x);
      if (!why.empty())
        s += std::string("      why (") + (x == st.a ? "A" : "B") + "): " + why + "\n";
    }
  }
  if (d.stalls.size() > opt.top) s += "  (+" + fmt_count(d.stalls.size() - opt.top) + " more)\n";

  // The gate.
  const Gate g = diff_gate(d, opt.fail_above);
  s += "gate      ";
  if (!g.figures) {
    s += "no figure to gate (no non-receive row or NIC compared)";
  } else {
    s += "largest slowdown " + fmt_ratio(g.worst) + " (" + printable(g.worst_where) + ") of " +
         fmt_count(g.figures) + " gated figures";
  }
  if (opt.fail_above > 0)
    s += "; --fail-above " + fmt_ratio(opt.fail_above).substr(1) + ": " +
         (g.over ? fmt_count(g.over) + " above, exit 1" : std::string("none above, exit 0"));
  s += "\n";
  return s;
}

}  // namespace fabtrace::report
