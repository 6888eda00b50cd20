// `fabtrace record --uprobes` with a symbol table (elf_symbols.h): the op-table
// sites named by their functions, the providers the helper could not open (or
// all, with --uprobe-by-name) attached by name through fabtrace's table
// (provider_functions.h), and the two paths checked against each other.
#pragma once

#include <string>
#include <vector>

#include "userspace/record/uprobes/elf_symbols.h"
#include "userspace/record/uprobes/optable_probe.h"

namespace fabtrace {

struct SymbolOptions {
  std::vector<std::string> providers;  // --uprobe-providers
  std::string symbols_file;            // --symbols FILE, or "" (the library's own, or by build-id)
  bool by_name = false;                // --uprobe-by-name
  std::string debug_dir = "/usr/lib/debug";
};

// The sites of `provider` from fabtrace's table resolved through `syms`
// (described by describe_site, as the op-table path's); each row not found is
// a note "... not attached".
std::vector<OpSite> sites_by_name(const std::string& provider, const LibrarySymbols& syms,
                                  std::vector<std::string>* notes);

// Applies the library's symbols to the helper's result `r` (r->library's): names
// its sites; adds the by-name sites of each provider it did not open (every
// provider's instead of the op-table ones with by_name). Where both paths give
// a (provider, table.op), their offsets must agree: a disagreement is a note
// and the op-table offset is kept. Without symbols: a note, unless they were
// asked for (--symbols, --uprobe-by-name): then false with one line in *error.
bool apply_symbols(const SymbolOptions& o, OptableResult* r, std::string* error);
// Its part after the symbols are read.
void merge_symbol_sites(const SymbolOptions& o, const LibrarySymbols& syms, OptableResult* r);

}  // namespace fabtrace
