// libfabric's provider functions by name, for `fabtrace record --uprobes`
// where the library's symbols are known (elf_symbols.h): the function each
// (provider, table.op) that record probes points at, taken from libfabric's
// source for v1.17.0 (Debian 12's libfabric1 1.17.0-3). A provider the helper
// cannot open (optable_probe.h) is attached through these, and so is every
// provider with --uprobe-by-name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fabtrace {

struct ProviderFunction {
  const char* provider;  // "tcp;ofi_rxm"
  const char* table;     // "msg", "cq", ... as OpSite::table
  const char* op;        // as OpSite::op
  // "rxm_send"; "file.c:name" for a static inline of a header; "a|b": a, or
  // b where a is not in the symbols (a later version's name)
  const char* function;
};

// The address format and length a provider's AV insert and getname carry when
// the helper could not learn them (enum fi_addr_format, its stride).
struct ProviderAddress {
  const char* provider;
  uint32_t addr_format;
  uint32_t addrlen;
};

// The table's rows of `provider` (none for a provider it does not cover).
std::vector<ProviderFunction> provider_functions(const std::string& provider);
// Every row (the tests' and docs/uprobes.md's).
const std::vector<ProviderFunction>& all_provider_functions();
// The provider's address defaults; false for a provider the table does not cover.
bool provider_address(const std::string& provider, ProviderAddress* out);

}  // namespace fabtrace
