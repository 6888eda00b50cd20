// The function symbols of a libfabric library file, for `fabtrace record
// --uprobes`: where a provider's functions are by name (a locally built,
// unstripped libfabric; `--symbols FILE`; the distribution's debug file found
// by build-id), as file offsets of the library the processes map. The files
// are inputs: read with libelf, every size and offset checked against the
// file before use.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "userspace/record/uprobes/optable_probe.h"

namespace fabtrace {

// What one ELF file says: its GNU build-id (hex), its PT_LOADs and its
// defined function symbols (STT_FUNC, local ones too: provider functions are
// static) as virtual addresses.
struct ElfFileInfo {
  std::string build_id;
  std::vector<ElfLoad> loads;
  bool has_symtab = false;
  // name -> st_value; local ones also as "file.c:name" (their STT_FILE's)
  std::multimap<std::string, uint64_t> functions;
};

// Reads `path`; false with one line in *why for a file that is not a readable,
// well-formed ELF (truncated, offsets past its end, too large).
bool read_elf_file(const std::string& path, ElfFileInfo* out, std::string* why);

// A library's functions by name and by file offset.
struct LibrarySymbols {
  std::string library;  // the library file the offsets are of
  std::string source;   // where the symbols came from, for record's notes
  std::map<std::string, std::set<uint64_t>> offsets;  // name -> file offsets
  std::map<uint64_t, std::string> names;              // file offset -> a name

  // The one offset of `name` ("file.c:name" for a static function of that
  // file, else any function of that name); false when absent or ambiguous
  // (static functions of that name in several files), with *why.
  bool offset_of(const std::string& name, uint64_t* offset, std::string* why) const;
  // The function that starts at `offset`, or "".
  std::string name_at(uint64_t offset) const;
};

// The symbols of `library`: those of `symbols_file` when given (an ELF with a
// .symtab and the library's build-id: a mismatch is refused), else the
// library's own .symtab, else `debug_dir`/.build-id/xx/rest.debug. False with
// *why when there are none or the file given does not fit.
bool load_library_symbols(const std::string& library, const std::string& symbols_file,
                          const std::string& debug_dir, LibrarySymbols* out, std::string* why);

}  // namespace fabtrace
