#include "userspace/record/uprobes/uprobe_symbols.h"

#include "bpf/uprobe_ops.h"
#include "common/addr_format.h"
#include "userspace/record/uprobes/provider_functions.h"

namespace fabtrace {

namespace {

const OpSite* optable_site(const std::vector<OpSite>& sites, const std::string& prov,
                           const OpSite& like) {
  for (const OpSite& s : sites)
    if (s.has_provider(prov) && s.table == like.table && s.op == like.op) return &s;
  return nullptr;
}

bool is_name_site(const OpSite& s) {
  return s.role == FT_UP_ROLE_GETNAME || s.role == FT_UP_ROLE_AV_INSERT;
}

}  // namespace

std::vector<OpSite> sites_by_name(const std::string& provider, const LibrarySymbols& syms,
                                  std::vector<std::string>* notes) {
  std::vector<OpSite> out;
  ProviderAddress addr{};
  const bool have_addr = provider_address(provider, &addr);
  for (const ProviderFunction& f : provider_functions(provider)) {
    OpSite s;
    if (!describe_site(provider, f.table, f.op, &s)) continue;
    // "a|b": the first alternative the symbols hold.
    const std::string names = f.function;
    std::string why, tried;
    bool found = false;
    for (size_t a = 0; !found && a <= names.size();) {
      size_t b = names.find('|', a);
      if (b == std::string::npos) b = names.size();
      const std::string name = names.substr(a, b - a);
      found = syms.offset_of(name, &s.offset, &why);
      if (found) s.function = name.substr(name.find(':') + 1);
      tried += (tried.empty() ? "" : ", ") + name + ": " + why;
      a = b + 1;
    }
    if (!found) {
      notes->push_back(s.what() + " by name: " + tried + ": not attached");
      continue;
    }
    s.path = syms.library;
    if (is_name_site(s)) {
      if (!have_addr) {
        notes->push_back(s.what() +
                         " by name: the provider's address format is not known: " + "not attached");
        continue;
      }
      s.addr_format = addr.addr_format;
      s.addrlen = s.role == FT_UP_ROLE_AV_INSERT ? addr.addrlen : 0;
      s.straddr_form = kStraddrLibfabric;
    }
    out.push_back(s);
  }
  return out;
}

bool apply_symbols(const SymbolOptions& o, OptableResult* r, std::string* error) {
  const bool asked = o.by_name || !o.symbols_file.empty();
  if (r->library.empty()) {
    if (asked) *error = "symbols: the helper found no libfabric.so.1 to read them for";
    return !asked;
  }
  LibrarySymbols syms;
  std::string why;
  if (!load_library_symbols(r->library, o.symbols_file, o.debug_dir, &syms, &why)) {
    if (asked) {
      *error = (o.by_name && o.symbols_file.empty() ? "--uprobe-by-name: " : "") + why;
      return false;
    }
    r->notes.push_back("no symbols (" + why + "): the sites come from the op tables only");
    return true;
  }
  r->notes.push_back("symbols of " + r->library + ": " + syms.source);
  merge_symbol_sites(o, syms, r);
  return true;
}

void merge_symbol_sites(const SymbolOptions& o, const LibrarySymbols& syms, OptableResult* r) {
  for (OpSite& s : r->sites)
    if (s.path == syms.library) s.function = syms.name_at(s.offset);
  std::vector<OpSite> named;
  for (const std::string& prov : o.providers) {
    bool opened = false;
    for (const OpSite& s : r->sites) opened = opened || s.has_provider(prov);
    if (opened && !o.by_name && provider_functions(prov).empty()) continue;
    std::vector<std::string> missing, notes;
    std::vector<OpSite> mine = sites_by_name(prov, syms, &missing);
    if (mine.empty() && missing.empty()) {
      r->notes.push_back(prov + ": not in fabtrace's table of provider functions: not " +
                         (opened ? "checked by name" : "attached"));
      continue;
    }
    // Both paths: the op tables say where the process's calls go; a symbol
    // elsewhere means symbols of another build (or a wrong table row).
    size_t disagree = 0;
    for (OpSite& m : mine) {
      const OpSite* t = optable_site(r->sites, prov, m);
      if (!t) continue;
      if (t->offset != m.offset) {
        ++disagree;
        notes.push_back(m.what() + " by name is at " + hex_offset(m.offset) +
                        ", the op table's at " + hex_offset(t->offset) +
                        (t->function.empty() ? "" : " (" + t->function + ")") +
                        ": the symbols do not fit the library; the op table's kept");
        m.offset = t->offset;
        m.function = t->function;
      }
      if (is_name_site(m)) {  // what the helper learnt beats the table's defaults
        m.addr_format = t->addr_format;
        m.addrlen = t->addrlen;
        m.straddr_form = t->straddr_form;
      }
    }
    const bool use = o.by_name || !opened;
    r->notes.push_back(
        prov + ": " + std::to_string(mine.size()) + " of " +
        std::to_string(provider_functions(prov).size()) + " functions found by name" +
        (opened ? ", " + std::to_string(disagree) + " disagreeing with the op tables" : "") +
        (use ? ": attached by name" : ""));
    // Names not found matter where the sites come from them.
    if (use) r->notes.insert(r->notes.end(), missing.begin(), missing.end());
    r->notes.insert(r->notes.end(), notes.begin(), notes.end());
    if (use) named.insert(named.end(), mine.begin(), mine.end());
  }
  if (o.by_name) {
    r->sites = dedupe_sites(named, &r->notes);
  } else if (!named.empty()) {
    named.insert(named.begin(), r->sites.begin(), r->sites.end());
    r->sites = dedupe_sites(named, &r->notes);
  }
}

}  // namespace fabtrace
