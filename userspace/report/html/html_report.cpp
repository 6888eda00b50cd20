// The HTML report's page: head, navigation, the sections in order (each in
// its own html_*.cpp, html/sections.h), footer; and writing it to a file.
#include "userspace/report/html/html_report.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "common/safe_output.h"
#include "common/version.h"
#include "userspace/report/analysis/slowest_ops.h"
#include "userspace/report/html/sections.h"
#include "userspace/report/html/svg.h"
#include "userspace/report/job/identity.h"
#include "userspace/report/text/formats.h"
#include "userspace/report/text/summary.h"

namespace fabtrace::report {

using html_page::Html;
using html_page::kScript;
using svg::escape;

std::string html_report(const Job& job, const HtmlOptions& opt) {
  Html h;
  html_page::begin_page(&h, "fabtrace report" + (opt.dir.empty() ? std::string() : " - " + opt.dir),
                        "fabtrace report");
  h.raw("<div class=\"sub\">");
  h.text(opt.dir.empty() ? std::string() : opt.dir + " \u00b7 ");
  h.text(job.first_wall_ns
             ? fmt_wall(job.first_wall_ns, true) + " .. " + fmt_wall(job.last_wall_ns, false)
             : std::string("no wall-clock anchor"));
  h.raw(
      "</div>\n<nav><a href=\"#heatmaps\">latency heatmaps</a><a href=\"#bandwidth\">bandwidth</a>"
      "<a href=\"#counters\">counters</a><a href=\"#stalls\">poll gaps</a><a "
      "href=\"#slowest\">slowest ops</a><a href=\"#outliers\">outliers</a>"
      "<a href=\"#late\">receives posted late</a><a href=\"#problems\">problems</a><a "
      "href=\"#ranks\">ranks</a>");
  if (!job.kernel.empty())
    h.raw(
        "<a href=\"#why\">why (kernel)</a><a href=\"#network\">network</a><a "
        "href=\"#nodes\">nodes</a>");
  for (const std::string& o : opt.outputs) {
    const size_t slash = o.find_last_of('/');
    const std::string name = slash == std::string::npos ? o : o.substr(slash + 1);
    h.raw("<a href=\"" + escape(name) + "\">" + escape(name) + "</a>");
  }
  h.raw("</nav>\n");
  // Which job: the launcher's ids, the command, the ranks' fabtrace versions.
  {
    const JobIdentity id = job_identity(job);
    const size_t n = job.ranks.size();
    std::string who = tally_text(id.jobs, n);
    const std::string cmd = tally_text(id.commands, n, 2);
    if (!cmd.empty()) who += (who.empty() ? "" : " \u00b7 ") + cmd;
    if (!who.empty()) {
      h.raw("<div class=\"sub\">");
      h.text(who);
      h.raw("</div>\n");
    }
    if (const std::string note = versions_note(id, n); !note.empty()) {
      h.raw("<div class=\"sub\">");
      h.text(note);
      h.raw("</div>\n");
    }
  }
  h.raw("</header>\n");

  html_page::section_shape(job, &h);
  html_page::section_heatmaps(job, &h);
  html_page::section_bandwidth(job, &h);
  html_page::section_counters(job, opt, &h);
  html_page::section_stalls(job, opt, &h);
  html_page::section_stall_causes(job, opt, &h);
  html_page::section_waits(job, opt, &h);
  if (opt.slowest) h.raw(slowest_ops_html(*opt.slowest));
  html_page::section_links(job, opt, &h);
  html_page::section_link_net(job, opt, &h);
  html_page::section_late(job, opt, &h);
  html_page::section_problems(job, opt, &h);
  html_page::section_ranks(job, opt, &h);
  html_page::section_kernel_nodes(job, &h);
  h.raw("<footer>Written by fabtrace ");
  h.text(version());
  h.raw(" (fabtrace report). Every link row is in ");
  h.text(opt.links_table == "links.csv" ? "links.csv / links.json" : opt.links_table);
  h.raw(", every NIC in nics.csv / nics.json.</footer>\n");
  h.raw("<script>");
  h.raw(kScript);
  h.raw("</script>\n</body>\n</html>\n");
  return std::move(h.str());
}

bool write_html_report(const Job& job, const std::string& path, const HtmlOptions& opt,
                       std::string* error) {
  const std::string html = html_report(job, opt);
  ReplacingFile f;
  if (!f.open(path, error)) return false;
  std::FILE* stream = f.stream();
  if (!stream || std::fwrite(html.data(), 1, html.size(), stream) != html.size()) {
    if (error) *error = "writing " + path + " failed: " + std::strerror(errno);
    return false;
  }
  return f.commit(error);
}

}  // namespace fabtrace::report
