// The op-table helper's results as the lines it hands the session (its
// output is the only thing that crosses from the helper, which runs the
// providers' code): sites and layouts written and parsed back, each field
// checked, and the sites that two providers share folded into one.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/addr_format.h"
#include "userspace/record/uprobes/optable_probe.h"

namespace fabtrace {

std::vector<std::string> OpSite::providers() const {
  std::vector<std::string> out;
  std::istringstream in(provider);
  for (std::string p; std::getline(in, p, ',');) out.push_back(p);
  return out;
}

bool OpSite::has_provider(const std::string& prov) const {
  for (const std::string& p : providers())
    if (p == prov) return true;
  return false;
}

bool UprobeLayout::operator==(const UprobeLayout& o) const {
  return path == o.path && cq_kind == o.cq_kind && cq_fmt_off == o.cq_fmt_off &&
         std::equal(fmt_fn, fmt_fn + 5, o.fmt_fn) && std::equal(ep_hops, ep_hops + 2, o.ep_hops) &&
         std::equal(&ep_path[0][0], &ep_path[0][0] + 2 * (FT_UP_EP_HOPS_MAX + 1), &o.ep_path[0][0]);
}

std::string UprobeLayout::describe() const {
  std::string d = cq_kind == FT_UP_CQ_FMT_FN ? "CQ format function at +" : "CQ format at +";
  d += std::to_string(cq_fmt_off) + ", endpoint CQs at ";
  for (const int side : {FT_UP_TX, FT_UP_RX}) {
    d += side == FT_UP_TX ? "+" : " and +";
    for (uint32_t h = 0; h <= ep_hops[side] && h <= FT_UP_EP_HOPS_MAX; ++h)
      d += (h ? "->+" : "") + std::to_string(ep_path[side][h]);
  }
  return d;
}

std::string layout_line(const UprobeLayout& l) {
  std::ostringstream o;
  o << "L\t" << l.provider << '\t' << l.cq_kind << '\t' << l.cq_fmt_off;
  for (int fmt = 1; fmt <= 4; ++fmt) o << '\t' << l.fmt_fn[fmt];
  for (const int side : {FT_UP_TX, FT_UP_RX}) {
    o << '\t' << l.ep_hops[side];
    for (const uint64_t off : l.ep_path[side]) o << '\t' << off;
  }
  o << '\t' << l.path;
  return o.str();
}

bool parse_layout_line(const std::string& line, UprobeLayout* l) {
  // "L", the provider (it has no tabs; spaces maybe), numbers, the path.
  if (line.rfind("L\t", 0) != 0) return false;
  const size_t tab = line.find('\t', 2);
  if (tab == std::string::npos) return false;
  UprobeLayout r;
  r.provider = line.substr(2, tab - 2);
  std::istringstream in(line.substr(tab + 1));
  if (!(in >> r.cq_kind >> r.cq_fmt_off)) return false;
  for (int fmt = 1; fmt <= 4; ++fmt)
    if (!(in >> r.fmt_fn[fmt])) return false;
  for (const int side : {FT_UP_TX, FT_UP_RX}) {
    if (!(in >> r.ep_hops[side]) || r.ep_hops[side] > FT_UP_EP_HOPS_MAX) return false;
    for (uint64_t& off : r.ep_path[side])
      if (!(in >> off)) return false;
  }
  in.get();  // the tab before the path (which may hold spaces)
  std::getline(in, r.path);
  if (r.provider.empty() || r.path.empty() || r.path[0] != '/' || !r.cq_fmt_off ||
      (r.cq_kind != FT_UP_CQ_FMT_FN && r.cq_kind != FT_UP_CQ_FMT_WORD))
    return false;
  *l = r;
  return true;
}

std::vector<OpSite> dedupe_sites(const std::vector<OpSite>& in, std::vector<std::string>* notes) {
  std::vector<OpSite> out;
  std::map<std::pair<std::string, uint64_t>, size_t> at;  // (path, offset) -> index in out
  std::vector<bool> conflict;
  for (const OpSite& s : in) {
    const auto key = std::make_pair(s.path, s.offset);
    const auto it = at.find(key);
    if (it == at.end()) {
      at[key] = out.size();
      out.push_back(s);
      conflict.push_back(false);
      continue;
    }
    OpSite& o = out[it->second];
    if (o.straddr_form == kStraddrUnknown) o.straddr_form = s.straddr_form;
    if (o.role != s.role || o.op_kind != s.op_kind || o.ctx != s.ctx || o.len != s.len ||
        o.peer != s.peer || o.addr_format != s.addr_format || o.addrlen != s.addrlen ||
        (o.straddr_form != s.straddr_form && s.straddr_form != kStraddrUnknown)) {
      conflict[it->second] = true;
      o.op += "," + s.table + "." + s.op;
    }
    if (("," + o.provider + ",").find("," + s.provider + ",") == std::string::npos)
      o.provider += "," + s.provider;
  }
  std::vector<OpSite> kept;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].straddr_form == kStraddrUnknown) out[i].straddr_form = kStraddrLibfabric;
    if (!conflict[i]) {
      kept.push_back(out[i]);
      continue;
    }
    char off[32];
    std::snprintf(off, sizeof(off), "0x%llx", static_cast<unsigned long long>(out[i].offset));
    if (notes)
      notes->push_back(out[i].path + "+" + off + " (" + out[i].provider + " " + out[i].table + "." +
                       out[i].op +
                       ") serves ops of different kinds or address formats (a stub): not probed");
  }
  return kept;
}

std::string site_line(const OpSite& s) {
  std::ostringstream o;
  o << s.provider << '\t' << s.table << '\t' << s.op << '\t' << s.role << '\t' << s.op_kind << '\t'
    << s.ctx << '\t' << s.len << '\t' << s.peer << '\t' << s.addr_format << '\t' << s.addrlen
    << '\t' << s.straddr_form << '\t' << s.offset << '\t' << s.path;
  return o.str();
}

bool parse_site_line(const std::string& line, OpSite* s) {
  // provider, table, op, then kNums numbers, then the path (which may hold tabs).
  constexpr size_t kNums = 9;
  std::vector<std::string> f;
  size_t a = 0;
  for (size_t i = 0; i < 3 + kNums; ++i) {
    const size_t b = line.find('\t', a);
    if (b == std::string::npos) return false;
    f.push_back(line.substr(a, b - a));
    a = b + 1;
  }
  f.push_back(line.substr(a));
  OpSite r;
  r.provider = f[0];
  r.table = f[1];
  r.op = f[2];
  unsigned long long nums[kNums] = {};
  for (size_t i = 0; i < kNums; ++i) {
    const std::string& n = f[3 + i];
    if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos) return false;
    nums[i] = std::strtoull(n.c_str(), nullptr, 10);
  }
  r.role = static_cast<uint32_t>(nums[0]);
  r.op_kind = static_cast<uint32_t>(nums[1]);
  r.ctx = static_cast<uint32_t>(nums[2]);
  r.len = static_cast<uint32_t>(nums[3]);
  r.peer = static_cast<uint32_t>(nums[4]);
  r.addr_format = static_cast<uint32_t>(nums[5]);
  r.addrlen = static_cast<uint32_t>(nums[6]);
  r.straddr_form = static_cast<uint32_t>(nums[7]);
  r.offset = nums[8];
  r.path = f[3 + kNums];
  if (r.path.empty() || r.path[0] != '/' || r.role < FT_UP_ROLE_OP || r.role > FT_UP_ROLE_LAST)
    return false;
  *s = r;
  return true;
}

}  // namespace fabtrace
