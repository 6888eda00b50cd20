// A libfabric with a symbol table for the by-name tests of `fabtrace record
// --uprobes --symbols FILE --uprobe-by-name` (test_uprobes_attach.cpp): Debian's
// libfabric is stripped and no unstripped build or debug file exists here.
#pragma once

#include <string>

namespace fabtrace::test {

// Writes DIR/libfabric-symbols.so: a copy of the libfabric.so.1 the processes
// map (its build-id unchanged) given, with binutils' objcopy --add-symbol, one
// function symbol per name of fabtrace's table of provider functions
// (userspace/record/uprobes/provider_functions.h), at the address libfabric's own op
// tables hold for that (provider, table.op) (the record helper's
// probe_optables, the ground truth). Its path, or "" with *why. *symbols: how
// many symbols were added.
std::string libfabric_with_symbols(const std::string& dir, size_t* symbols, std::string* why);

}  // namespace fabtrace::test
