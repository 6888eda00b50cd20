// The GNU build-id of an ELF file, read from a note section: how a session
// names the libfabtrace.so files it attaches (usdt_libraries.h) and how
// --uprobes finds a library's debug file (uprobes/elf_symbols.h).
#pragma once

#include <libelf.h>

#include <string>

namespace fabtrace {

// The GNU build-id (hex) in a note section's data, if it holds one.
void read_gnu_build_id(Elf_Data* notes, std::string* id);

}  // namespace fabtrace
