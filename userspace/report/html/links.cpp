// The HTML report's link tables (outliers and slowest, receives posted late,
// problems) and the files that were skipped or only partly used.
#include "userspace/report/html/sections.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "userspace/report/text/formats.h"
#include "userspace/report/text/summary.h"

namespace fabtrace::report::html_page {

using svg::escape;

namespace {

// A table of link rows: the columns every one opens with (where the link is,
// which op and size; `remote` names the peer's column), then `more`.
Table link_rows_table(const char* remote, std::vector<std::pair<std::string, bool>> more,
                      const std::string& id) {
  std::vector<std::pair<std::string, bool>> cols = {{"host", false},  {"rank", false},
                                                    {"local", false}, {remote, false},
                                                    {"op", false},    {"size", true}};
  cols.insert(cols.end(), more.begin(), more.end());
  return Table(cols, id);
}

// The cells of those first columns; the row is highlighted when `hi`.
void link_row_start(const LinkRow& l, bool hi, Table* t) {
  t->row(hi);
  t->td(l.host());
  t->td(l.rank());
  t->td(short_addr(l.local()), "addr", l.local());
  t->td(short_addr(l.remote()), "addr", l.remote());
  t->td(l.op());
  t->n(fmt_row_size(l.row));
}

void link_table(const std::vector<const LinkRow*>& rows, const std::string& id, Html* h) {
  Table t = link_rows_table("remote",
                            {{"ops", true},
                             {"p50", true},
                             {"p99", true},
                             {"max", true},
                             {"x median p99", true},
                             {"GB/s", true}},
                            id);
  for (const LinkRow* l : rows) {
    link_row_start(*l, l->outlier_ratio >= kOutlierRatio && !l->row.recv, &t);
    t.n(fmt_count(l->row.count));
    t.n(fmt_ns(l->row.p50_ns));
    t.n(fmt_ns(l->row.p99_ns));
    t.n(fmt_ns(l->row.max_ns));
    t.n(l->outlier_ratio > 0 ? fixed(l->outlier_ratio, 2) : "-");
    t.n(fixed(l->row.gbps, 3));
    t.end_row();
  }
  h->raw(t.done());
}

}  // namespace

void section_links(const Job& job, const HtmlOptions& opt, Html* h) {
  h->h2("outliers", "Outlier and slowest links");
  const auto outl = outlier_links(job);
  char buf[200];
  std::snprintf(buf, sizeof(buf),
                "Outliers: links whose p99 is at least %.0fx the median p99 of the links with the "
                "same op and "
                "message size (receives left out). %zu found.",
                kOutlierRatio, outl.size());
  h->note(buf);
  if (!outl.empty()) {
    std::vector<const LinkRow*> rows(
        outl.begin(), outl.begin() + static_cast<long>(std::min(outl.size(), opt.max_table_rows)));
    link_table(rows, "outlier-table", h);
  }
  h->raw("<h3>Slowest by p99</h3>");
  const auto slow = slowest_links(job, opt.top);
  if (slow.empty())
    h->note("No completed sends, writes, reads or atomics.");
  else
    link_table(slow, "slowest-table", h);
}

void section_late(const Job& job, const HtmlOptions& opt, Html* h) {
  h->h2("late", "Receives posted late");
  h->note(
      "A receive was posted late when it was posted after the send of its message was issued. "
      "Only the per-op timelines of both ranks tell: each receive is paired with its send (per "
      "link and message family, in order, sizes checked) and their times compared on the "
      "aligned clock. Rows without that evidence say why; they are never called late. \"Done "
      "< 50 us\" is a different count: receives that completed less than 50 us after they were "
      "posted, which a message already waiting and a receive posted just in time on a fast path "
      "both give.");
  std::vector<const LinkRow*> rows;
  for (const LinkRow& l : job.links)
    if (l.row.recv && l.row.count) rows.push_back(&l);
  std::stable_sort(rows.begin(), rows.end(), [](const LinkRow* a, const LinkRow* b) {
    return a->posted().late > b->posted().late;
  });
  if (rows.empty()) {
    h->note("No receives.");
    return;
  }
  Table t = link_rows_table("from",
                            {{"receives", true},
                             {"done < 50 us", true},
                             {"matched", true},
                             {"posted late", true},
                             {"median lateness", true},
                             {"no verdict because", false}},
                            "late-table");
  for (size_t i = 0; i < rows.size() && i < opt.max_table_rows; ++i) {
    const LinkRow& l = *rows[i];
    link_row_start(l, l.posted().late > 0, &t);
    t.n(fmt_count(l.row.count));
    t.n(fmt_count(l.row.within_50us));
    t.n(fmt_count(l.posted().matched));
    t.n(fmt_count(l.posted().late));
    t.n(l.posted().late ? fmt_ns(l.posted().late_median_ns) : "");
    t.td(l.posted().unknown());
    t.end_row();
  }
  h->raw(t.done());
}

void section_problems(const Job& job, const HtmlOptions& opt, Html* h) {
  h->h2("problems", "Errors, refusals, ops not timed for a full ring, unfinished ops");
  // Ops untimed by design (injects and the like) are a count, not a problem.
  std::vector<const LinkRow*> rows;
  for (const LinkRow& l : job.links)
    if (l.row.errors || l.row.eagain || l.row.refused || l.row.ring_full || l.row.unfinished)
      rows.push_back(&l);
  std::stable_sort(rows.begin(), rows.end(), [](const LinkRow* a, const LinkRow* b) {
    const auto w = [](const OpStats& o) {
      return o.errors * 1000000 + o.unfinished * 1000 + o.ring_full + o.refused + o.eagain;
    };
    return w(a->row) > w(b->row);
  });
  std::string totals =
      fmt_count(job.errors) + " completions in error, " + fmt_count(job.eagain) +
      " EAGAIN refusals, " + fmt_count(job.refused) + " other refusals, " +
      fmt_count(job.unfinished) + " unfinished; " + fmt_count(job.ring_full) +
      " not timed for a full in-flight ring, " + fmt_count(job.cells_full) + " not aggregated, " +
      fmt_count(job.ops_dropped) +
      " per-op timeline records dropped. Not a problem: " + fmt_count(job.untimed) +
      " ops untimed by design (no completion will come: fi_inject*, FI_INJECT without "
      "FI_COMPLETION, selective completion; or their context must reach the provider "
      "unchanged).";
  h->note(totals);
  if (!rows.empty()) {
    Table t = link_rows_table("remote",
                              {{"errors", true},
                               {"EAGAIN", true},
                               {"refused", true},
                               {"ring full", true},
                               {"unfinished", true}},
                              "problem-table");
    for (size_t i = 0; i < rows.size() && i < opt.max_table_rows; ++i) {
      const LinkRow* l = rows[i];
      link_row_start(*l, l->row.errors > 0 || l->row.unfinished > 0, &t);
      t.n(fmt_count(l->row.errors));
      t.n(fmt_count(l->row.eagain));
      t.n(fmt_count(l->row.refused));
      t.n(fmt_count(l->row.ring_full));
      t.n(fmt_count(l->row.unfinished));
      t.end_row();
    }
    h->raw(t.done());
  }
  if (!job.partial.empty() || !job.skipped.empty()) {
    h->raw("<h3>Files</h3>");
    Table t({{"file", false}, {"", false}}, "file-table");
    for (const Skipped& s : job.skipped) {
      t.row(true);
      t.td(s.path, "addr");
      t.td("skipped: " + s.why);
      t.end_row();
    }
    for (const Skipped& s : job.partial) {
      t.row();
      t.td(s.path, "addr");
      t.td("used, but " + s.why);
      t.end_row();
    }
    h->raw(t.done());
  }
}

}  // namespace fabtrace::report::html_page
