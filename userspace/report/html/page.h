// The building blocks of the HTML report's page (html_report.h): the page
// being written, a table built cell by cell, the style sheet and script every
// page carries. What each section file (html/sections.h) writes with.
#pragma once

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "userspace/report/html/svg.h"

namespace fabtrace::report::html_page {

// A number with a fixed count of decimals ("%.*f").
inline std::string fixed(double v, int decimals) {
  char b[64];
  std::snprintf(b, sizeof(b), "%.*f", decimals, v);
  return b;
}

class Html {
 public:
  void raw(const std::string& s) { out_ += s; }
  void text(const std::string& s) { out_ += svg::escape(s); }
  void h2(const std::string& id, const std::string& title) {
    out_ += "<h2 id=\"" + svg::escape(id) + "\">" + svg::escape(title) + "</h2>\n";
  }
  void note(const std::string& s) { out_ += "<p class=\"note\">" + svg::escape(s) + "</p>\n"; }
  std::string& str() { return out_; }

 private:
  std::string out_;
};

// A table built cell by cell.
class Table {
 public:
  explicit Table(const std::vector<std::pair<std::string, bool>>& cols,
                 const std::string& id = "") {
    s_ = "<table" + (id.empty() ? std::string() : " id=\"" + svg::escape(id) + "\"") +
         "><thead><tr>";
    for (const auto& c : cols)
      s_ += std::string("<th") + (c.second ? " class=\"n\"" : "") + ">" + svg::escape(c.first) +
            "</th>";
    s_ += "</tr></thead><tbody>\n";
  }
  void row(bool hi = false) { s_ += hi ? "<tr class=\"hi\">" : "<tr>"; }
  void td(const std::string& v, const char* cls = nullptr, const std::string& title = "") {
    s_ += "<td";
    if (cls) s_ += std::string(" class=\"") + cls + "\"";
    if (!title.empty()) s_ += " title=\"" + svg::escape(title) + "\"";
    s_ += ">" + svg::escape(v) + "</td>";
  }
  void n(const std::string& v) { td(v, "n"); }
  void raw_td(const std::string& html) { s_ += "<td>" + html + "</td>"; }
  void end_row() { s_ += "</tr>\n"; }
  std::string done() { return s_ + "</tbody></table>\n"; }

 private:
  std::string s_;
};

// The page's inline style sheet and script (html/style.cpp).
extern const char* const kStyle;
extern const char* const kScript;

// A page's start, the same for every page fabtrace writes (html/style.cpp):
// the document's head with `title` and the style sheet, then the body's
// header opened with `heading` as its <h1>; the caller goes on with the
// header's lines and closes it.
void begin_page(Html* h, const std::string& title, const std::string& heading);
// A figure on a card: its value large, what it is below.
inline void card(Html* h, const std::string& v, const std::string& k) {
  h->raw("<div class=\"card\"><div class=\"v\">" + svg::escape(v) + "</div><div class=\"k\">" +
         svg::escape(k) + "</div></div>");
}

}  // namespace fabtrace::report::html_page
