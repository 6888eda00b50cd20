// The HTML report's kernel sections: TCP retransmits and drops per link, and
// one block per node's kernel log.
#include "userspace/report/html/sections.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "userspace/report/text/formats.h"
#include "userspace/report/text/summary.h"

namespace fabtrace::report::html_page {

using svg::escape;

// Retransmits and drops per link, from the nodes' kernel logs.
void section_link_net(const Job& job, const HtmlOptions& opt, Html* h) {
  if (job.kernel.empty()) return;
  h->h2("network", "TCP retransmits and drops per link (kernel)");
  std::map<std::tuple<std::string, std::string, long, std::string, std::string>, const LinkRow*>
      per_link;  // a link's rows all carry its counts: one per link
  for (const LinkRow& l : job.links)
    if (l.kernel_logged() && (l.retrans() || l.drops()))
      per_link.emplace(std::make_tuple(l.host(), l.rank(), l.pid(), l.local(), l.remote()), &l);
  uint64_t retrans = 0, drops = 0;
  for (const KernelNode& n : job.kernel) {
    retrans += n.retrans;
    drops += n.drops;
  }
  h->note(fmt_count(retrans) + " segments retransmitted and " + fmt_count(drops) +
          " packets dropped on the traced processes' connections over the nodes with a kernel "
          "log; the links they belong to below (" +
          opt.links_table + " has the same per link).");
  if (per_link.empty()) return;
  std::vector<const LinkRow*> rows;
  for (const auto& kv : per_link) rows.push_back(kv.second);
  std::stable_sort(rows.begin(), rows.end(), [](const LinkRow* a, const LinkRow* b) {
    return a->retrans() + a->drops() > b->retrans() + b->drops();
  });
  Table t({{"host", false},
           {"rank", false},
           {"local", false},
           {"remote", false},
           {"retransmits", true},
           {"drops", true}},
          "net-table");
  for (size_t i = 0; i < rows.size() && i < opt.max_table_rows; ++i) {
    t.row(rows[i]->retrans() > 0);
    t.td(rows[i]->host());
    t.td(rows[i]->rank());
    t.td(short_addr(rows[i]->local()));
    t.td(short_addr(rows[i]->remote()));
    t.n(fmt_count(rows[i]->retrans()));
    t.n(fmt_count(rows[i]->drops()));
    t.end_row();
  }
  h->raw(t.done());
}

// One block per node's kernel log: what attached, interrupt load, the driver.
void section_kernel_nodes(const Job& job, Html* h) {
  if (job.kernel.empty()) return;
  h->h2("nodes", "Nodes (kernel)");
  for (const KernelNode& n : job.kernel) {
    const uint64_t span = n.last_ns > n.first_ns ? n.last_ns - n.first_ns : 0;
    h->raw("<h3>" + escape(n.host) + "</h3>");
    std::string line = fmt_count(n.records) + " events over " + fmt_ns(static_cast<double>(span)) +
                       "; " + fmt_count(n.stats.lost_total()) + " lost (ring buffer full); " +
                       fmt_count(n.faults) + " page faults of traced threads";
    if (n.cxi_errors || !n.cxi_work.empty()) {
      line += "; cxi driver: " + fmt_count(n.cxi_errors) + " errors";
      for (const auto& kv : n.cxi_work)
        line += ", " + kv.first + " work x" + fmt_count(kv.second.count);
    }
    h->note(line + ".");
    // The observer's effect: the collector's own CPU and what it took from the
    // traced threads.
    const std::string col = collector_line(n);
    if (!col.empty()) {
      const size_t b = col.find_first_not_of(' ');
      std::string text = col.substr(b, col.size() - b - 1);
      text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
      h->note(text + ".");
    }
    std::string absent;
    for (const KernelAttach& a : n.meta.attach)
      if (a.state != "attached")
        absent += (absent.empty() ? "" : ", ") + a.point + " (" + a.detail + ")";
    if (!absent.empty()) h->note("Not attached: " + absent + ".");
    Table t({{"CPU", true},
             {"IRQ time", true},
             {"IRQs", true},
             {"softirq time", true},
             {"softirqs", true},
             {"share of the span", true}});
    std::set<uint32_t> cpus;
    for (const auto& kv : n.irq_per_cpu) cpus.insert(kv.first);
    for (const auto& kv : n.softirq_per_cpu) cpus.insert(kv.first);
    for (uint32_t c : cpus) {
      const auto i = n.irq_per_cpu.find(c);
      const auto si = n.softirq_per_cpu.find(c);
      const KernelLoad irq = i == n.irq_per_cpu.end() ? KernelLoad{} : i->second;
      const KernelLoad soft = si == n.softirq_per_cpu.end() ? KernelLoad{} : si->second;
      t.row();
      t.n(std::to_string(c));
      t.n(fmt_ns(static_cast<double>(irq.ns)));
      t.n(fmt_count(irq.count));
      t.n(fmt_ns(static_cast<double>(soft.ns)));
      t.n(fmt_count(soft.count));
      t.n(span ? fixed(100.0 * static_cast<double>(irq.ns + soft.ns) / static_cast<double>(span),
                       2) +
                     " %"
               : "-");
      t.end_row();
    }
    if (!cpus.empty()) {
      h->note("Interrupt time taken from traced threads, per CPU:");
      h->raw(t.done());
    }
  }
}

}  // namespace fabtrace::report::html_page
