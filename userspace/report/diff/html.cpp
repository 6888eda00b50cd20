// The HTML page of `fabtrace diff --html FILE`: the text's lists as tables,
// in the report's style (html/page.h), self-contained like report.html.
#include <algorithm>
#include <tuple>
#include <utility>

#include "common/version.h"
#include "userspace/report/analysis/kernel_join.h"
#include "userspace/report/diff/job_diff.h"
#include "userspace/report/html/page.h"
#include "userspace/report/job/identity.h"
#include "userspace/report/text/formats.h"
#include "userspace/report/text/summary.h"

namespace fabtrace::report {

namespace {

using html_page::card;
using html_page::fixed;
using html_page::Html;
using html_page::Table;

constexpr size_t kMaxTableRows = 200;

void link_table(Html* h, const std::string& id, std::vector<const LinkDiff*> rows,
                bool slower_first, double fail_above) {
  if (rows.empty()) {
    h->note("None.");
    return;
  }
  std::stable_sort(rows.begin(), rows.end(), [slower_first](const LinkDiff* x, const LinkDiff* y) {
    return slower_first ? x->worst > y->worst : x->best < y->best;
  });
  Table t({{"from", false},
           {"to", false},
           {"op", false},
           {"size", true},
           {"ops A", true},
           {"ops B", true},
           {"p50 A", true},
           {"p50 B", true},
           {"p50 B/A", true},
           {"p99 A", true},
           {"p99 B", true},
           {"p99 B/A", true},
           {"bandwidth A", true},
           {"bandwidth B", true},
           {"bandwidth B/A", true}},
          id);
  for (size_t i = 0; i < rows.size() && i < kMaxTableRows; ++i) {
    const LinkDiff& l = *rows[i];
    t.row(!l.recv && fail_above > 0 && l.worst > fail_above);
    t.td(l.from, "addr");
    t.td(l.to, "addr");
    t.td(l.op);
    t.n(fmt_size(l.bytes) + (l.size_unknown ? "?" : ""));
    t.n(fmt_count(l.a->row.count));
    t.n(fmt_count(l.b->row.count));
    const std::pair<const FigurePair*, bool> figures[] = {
        {&l.p50, false}, {&l.p99, false}, {&l.gbps, true}};
    for (const auto& [f, is_bw] : figures) {
      t.n(f->a > 0 ? (is_bw ? fmt_op_gbps(f->a) : fmt_ns(f->a)) : "-");
      t.n(f->b > 0 ? (is_bw ? fmt_op_gbps(f->b) : fmt_ns(f->b)) : "-");
      t.n(f->valid() ? fmt_ratio(f->ratio()) : "-");
    }
    t.end_row();
  }
  h->raw(t.done());
  if (rows.size() > kMaxTableRows)
    h->note("And " + fmt_count(rows.size() - kMaxTableRows) + " more (fabtrace diff --top N).");
}

void runs_table(Html* h, const Job& a, const Job& b, const DiffOutputOptions& opt) {
  Table t({{"run", false},
           {"directory", false},
           {"ranks", true},
           {"ops", true},
           {"moved", true},
           {"wall clock", true},
           {"started", false},
           {"command", false}},
          "runs");
  const std::tuple<const char*, const Job*, const std::string*> runs[] = {{"A", &a, &opt.dir_a},
                                                                          {"B", &b, &opt.dir_b}};
  for (const auto& [name, job, dir] : runs) {
    t.row();
    t.td(name);
    t.td(*dir, "addr");
    t.n(fmt_count(job->ranks.size()));
    t.n(fmt_count(job->ops));
    t.n(fmt_bytes(job->bytes));
    t.n(job->first_wall_ns ? fixed((job->last_wall_ns - job->first_wall_ns) / 1e9, 3) + " s" : "?");
    t.td(fmt_wall(job->first_wall_ns, true));
    t.td(tally_text(job_identity(*job).commands, job->ranks.size(), 1));
    t.end_row();
  }
  h->raw(t.done());
}

}  // namespace

std::string diff_html(const Job& a, const Job& b, const JobDiff& d, const DiffOutputOptions& opt) {
  Html h;
  html_page::begin_page(&h, "fabtrace diff - " + opt.dir_a + " vs " + opt.dir_b, "fabtrace diff");
  h.raw("<div class=\"sub\">");
  h.text("A " + opt.dir_a + " \u00b7 B " + opt.dir_b + " \u00b7 ratios are B / A");
  h.raw(
      "</div>\n<nav><a href=\"#slower\">slower</a><a href=\"#faster\">faster</a>"
      "<a href=\"#receives\">receives</a><a href=\"#only\">links in one run</a>"
      "<a href=\"#nics\">NICs</a><a href=\"#ops\">ops</a><a href=\"#stalls\">stalls</a></nav>\n"
      "</header>\n");

  std::vector<const LinkDiff*> slower, faster, receives, only;
  for (const LinkDiff& l : d.links) {
    if (!l.a || !l.b) only.push_back(&l);
    if (l.recv && (l.slower || l.faster)) receives.push_back(&l);
    if (!l.recv && l.slower) slower.push_back(&l);
    if (!l.recv && l.faster) faster.push_back(&l);
  }
  size_t nics_changed = 0, stalls_new = 0, stalls_gone = 0;
  for (const NicDiff& n : d.nics) nics_changed += n.slower || n.faster;
  for (const StallDiff& s : d.stalls) {
    stalls_new += s.kind == StallDiff::Kind::kNew;
    stalls_gone += s.kind == StallDiff::Kind::kGone;
  }
  const Gate g = diff_gate(d, opt.fail_above);
  h.raw("<div class=\"cards\" id=\"verdict\">");
  card(&h, g.figures ? fmt_ratio(g.worst) : "-",
       "largest slowdown" + (g.figures ? ": " + g.worst_where : std::string()));
  if (opt.fail_above > 0)
    card(&h, fmt_count(g.over), "gated figures above " + fmt_ratio(opt.fail_above));
  card(&h, fmt_count(slower.size()), "links slower");
  card(&h, fmt_count(faster.size()), "links faster");
  card(&h, fmt_count(nics_changed), "NICs changed");
  card(&h, fmt_count(stalls_new), "new stalls");
  card(&h, fmt_count(stalls_gone), "stalls gone");
  h.raw("</div>\n");
  runs_table(&h, a, b, opt);
  h.note("A row is compared when it has at least " + fmt_count(d.opt.min_ops) +
         " completions in both runs, and listed when its p50, p99 or per-op bandwidth changed by " +
         fmt_ratio(d.opt.threshold) + " or more either way. " + fmt_count(d.rows_compared) +
         " rows compared, " + fmt_count(d.rows_few_ops) + " with too few ops. Rows are matched " +
         "by rank (r0), endpoint and peer, not by address: the runs' addresses differ.");

  h.h2("slower", "Links slower in B");
  link_table(&h, "slower-table", slower, true, opt.fail_above);
  h.h2("faster", "Links faster in B");
  link_table(&h, "faster-table", faster, false, 0);
  h.h2("receives", "Receives that changed");
  h.note("A receive's time includes waiting for its sender: listed, never gated.");
  link_table(&h, "receives-table", receives, true, 0);

  h.h2("only", "Links in one run only");
  if (only.empty()) {
    h.note("None: both runs have the same links.");
  } else {
    Table t({{"in", false},
             {"from", false},
             {"to", false},
             {"op", false},
             {"size", true},
             {"ops", true}},
            "only-table");
    for (size_t i = 0; i < only.size() && i < kMaxTableRows; ++i) {
      const LinkDiff& l = *only[i];
      const LinkRow* r = l.a ? l.a : l.b;
      t.row();
      t.td(l.a ? "A" : "B");
      t.td(l.from, "addr");
      t.td(l.to, "addr");
      t.td(l.op);
      t.n(fmt_row_size(r->row));
      t.n(fmt_count(r->row.issued()));
      t.end_row();
    }
    h.raw(t.done());
  }

  h.h2("nics", "NICs");
  h.note("Achieved bandwidth: bytes over the time with an op in flight (receives left out).");
  {
    Table t({{"NIC", false},
             {"ops A", true},
             {"ops B", true},
             {"bandwidth A", true},
             {"bandwidth B", true},
             {"B/A", true},
             {"", false}},
            "nics-table");
    size_t n = 0;
    for (const NicDiff& x : d.nics) {
      if (n++ == kMaxTableRows) break;
      t.row(opt.fail_above > 0 && x.compared && x.slowdown > opt.fail_above);
      t.td(x.label, "addr");
      t.n(x.a ? fmt_count(x.a->nic.ops) : "-");
      t.n(x.b ? fmt_count(x.b->nic.ops) : "-");
      t.n(x.a ? fmt_op_gbps(x.a->nic.gbps) : "-");
      t.n(x.b ? fmt_op_gbps(x.b->nic.gbps) : "-");
      t.n(x.compared ? fmt_ratio(x.gbps.ratio()) : "-");
      t.td(x.slower ? "slower" : x.faster ? "faster" : x.compared ? "" : "not compared");
      t.end_row();
    }
    h.raw(t.done());
  }

  h.h2("ops", "Op mix");
  {
    Table t({{"op", false},
             {"issued A", true},
             {"issued B", true},
             {"B/A", true},
             {"share A", true},
             {"share B", true},
             {"mean A", true},
             {"mean B", true},
             {"mean B/A", true},
             {"errors A", true},
             {"errors B", true},
             {"EAGAIN A", true},
             {"EAGAIN B", true}},
            "ops-table");
    for (const OpDiff& o : d.ops) {
      t.row(o.changed);
      t.td(o.op);
      t.n(o.in_a ? fmt_count(o.a.issued) : "-");
      t.n(o.in_b ? fmt_count(o.b.issued) : "-");
      t.n(o.issued.valid() ? fmt_ratio(o.issued.ratio()) : "-");
      t.n(fixed(100 * o.share_a, 1) + "%");
      t.n(fixed(100 * o.share_b, 1) + "%");
      t.n(o.a.completed ? fmt_ns(o.a.mean_ns) : "-");
      t.n(o.b.completed ? fmt_ns(o.b.mean_ns) : "-");
      t.n(o.mean_ns.valid() ? fmt_ratio(o.mean_ns.ratio()) : "-");
      t.n(fmt_count(o.a.errors));
      t.n(fmt_count(o.b.errors));
      t.n(fmt_count(o.a.eagain));
      t.n(fmt_count(o.b.eagain));
      t.end_row();
    }
    h.raw(t.done());
  }

  h.h2("stalls", "Stalls");
  h.note("CQs whose longest poll gap is at least " + fmt_ns(d.opt.stall_ns) +
         " in either run, or whose gaps of 1 ms or more changed by " + fmt_ratio(d.opt.threshold) +
         "; and why, where the node had a kernel log (fabtrace record).");
  if (d.stalls.empty()) {
    h.note("None.");
  } else {
    Table t({{"", false},
             {"CQ", false},
             {"longest A", true},
             {"longest B", true},
             {"gaps >= 1 ms A", true},
             {"gaps >= 1 ms B", true},
             {"why (A)", false},
             {"why (B)", false}},
            "stalls-table");
    for (size_t i = 0; i < d.stalls.size() && i < kMaxTableRows; ++i) {
      const StallDiff& s = d.stalls[i];
      t.row(s.kind == StallDiff::Kind::kNew || s.kind == StallDiff::Kind::kMore ||
            s.kind == StallDiff::Kind::kLonger);
      t.td(stall_kind_name(s.kind));
      t.td(s.label, "addr");
      t.n(s.a ? fmt_ns(s.gap_ns.a) : "-");
      t.n(s.b ? fmt_ns(s.gap_ns.b) : "-");
      t.n(s.a ? fmt_count(static_cast<uint64_t>(s.long_gaps.a)) : "-");
      t.n(s.b ? fmt_count(static_cast<uint64_t>(s.long_gaps.b)) : "-");
      t.td(s.a && s.gap_ns.a >= d.opt.stall_ns ? stall_why(*s.a) : "");
      t.td(s.b && s.gap_ns.b >= d.opt.stall_ns ? stall_why(*s.b) : "");
      t.end_row();
    }
    h.raw(t.done());
  }

  h.raw("<footer>Written by fabtrace ");
  h.text(version());
  h.raw(" (fabtrace diff).</footer>\n</body>\n</html>\n");
  return std::move(h.str());
}

}  // namespace fabtrace::report
