#include "userspace/record/uprobes/elf_symbols.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "userspace/record/elf_build_id.h"

namespace fabtrace {

namespace {

// Bounds on what an input file may make us hold: a libfabric's debug file is
// tens of MiB with tens of thousands of symbols.
constexpr uint64_t kMaxFileBytes = 1ULL << 31;
constexpr size_t kMaxSections = 1u << 16;
constexpr size_t kMaxSymbols = 1u << 23;
constexpr size_t kMaxNameBytes = 4096;

// A section's bytes lie inside the file (libelf would read past a short
// file's end as zeroes or fail later, less clearly).
bool inside(const GElf_Shdr& sh, uint64_t file_size) {
  if (sh.sh_type == SHT_NOBITS) return true;
  return sh.sh_offset <= file_size && sh.sh_size <= file_size - sh.sh_offset;
}

bool read_symtab(Elf* e, Elf_Scn* scn, const GElf_Shdr& sh, ElfFileInfo* out, std::string* why) {
  if (sh.sh_entsize != sizeof(Elf64_Sym) || sh.sh_size / sh.sh_entsize > kMaxSymbols) {
    *why = "its symbol table has a bad entry size or too many entries";
    return false;
  }
  Elf_Data* d = elf_getdata(scn, nullptr);
  if (!d) {
    *why = std::string("its symbol table cannot be read: ") + elf_errmsg(-1);
    return false;
  }
  const size_t n = d->d_size / sizeof(Elf64_Sym);
  // A local symbol follows the STT_FILE symbol of its source file: a static
  // function is also known as "file.c:name" (static inline helpers of
  // libfabric's headers have one copy per file).
  std::string file;
  for (size_t i = 0; i < n; ++i) {
    GElf_Sym sym;
    if (!gelf_getsym(d, static_cast<int>(i), &sym)) break;
    const char* name = elf_strptr(e, sh.sh_link, sym.st_name);
    if (!name || !*name || strnlen(name, kMaxNameBytes) == kMaxNameBytes) continue;
    if (GELF_ST_TYPE(sym.st_info) == STT_FILE) {
      const char* slash = std::strrchr(name, '/');
      file = slash ? slash + 1 : name;
      continue;
    }
    if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF || !sym.st_value)
      continue;
    out->functions.emplace(name, sym.st_value);
    if (GELF_ST_BIND(sym.st_info) == STB_LOCAL && !file.empty())
      out->functions.emplace(file + ":" + name, sym.st_value);
  }
  out->has_symtab = true;
  return true;
}

// The program and section header tables lie inside the file (libelf takes a
// table past the end for an empty one, and the file would seem to have no
// symbols rather than be broken).
bool headers_inside(Elf* e, uint64_t file_size, std::string* why) {
  GElf_Ehdr eh;
  if (!gelf_getehdr(e, &eh)) {
    *why = std::string("bad ELF header: ") + elf_errmsg(-1);
    return false;
  }
  const auto fits = [&](uint64_t off, uint64_t n, uint64_t entsize) {
    return off <= file_size && n * entsize <= file_size - off;  // n, entsize < 2^16
  };
  if (!fits(eh.e_phoff, eh.e_phnum, eh.e_phentsize) ||
      (eh.e_shoff && eh.e_shentsize != sizeof(Elf64_Shdr)) ||
      !fits(eh.e_shoff, eh.e_shnum, eh.e_shentsize)) {
    *why = "its program or section header table lies past the end of the file";
    return false;
  }
  if (!eh.e_shoff || !eh.e_shnum) {
    *why = "no section headers";
    return false;
  }
  return true;
}

bool read_elf(int fd, uint64_t size, ElfFileInfo* out, std::string* why) {
  Elf* e = elf_begin(fd, ELF_C_READ, nullptr);
  if (!e || elf_kind(e) != ELF_K_ELF || gelf_getclass(e) != ELFCLASS64) {
    *why = "not a 64-bit ELF file";
    if (e) elf_end(e);
    return false;
  }
  bool ok = headers_inside(e, size, why);
  size_t phnum = 0, shnum = 0;
  if (ok &&
      (elf_getphdrnum(e, &phnum) != 0 || elf_getshdrnum(e, &shnum) != 0 || shnum > kMaxSections)) {
    *why = std::string("bad program or section headers: ") + elf_errmsg(-1);
    ok = false;
  }
  for (size_t i = 0; ok && i < phnum; ++i) {
    GElf_Phdr ph;
    if (!gelf_getphdr(e, static_cast<int>(i), &ph)) {
      *why = std::string("bad program header: ") + elf_errmsg(-1);
      ok = false;
    } else if (ph.p_type == PT_LOAD) {
      out->loads.push_back({ph.p_vaddr, ph.p_memsz, ph.p_offset});
    }
  }
  for (Elf_Scn* scn = nullptr; ok && (scn = elf_nextscn(e, scn)) != nullptr;) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) {
      *why = std::string("bad section header: ") + elf_errmsg(-1);
      ok = false;
    } else if (!inside(sh, size)) {
      *why = "section " + std::to_string(elf_ndxscn(scn)) + " lies past the end of the file";
      ok = false;
    } else if (sh.sh_type == SHT_SYMTAB) {
      ok = read_symtab(e, scn, sh, out, why);
    } else if (sh.sh_type == SHT_NOTE && out->build_id.empty()) {
      if (Elf_Data* d = elf_getdata(scn, nullptr)) read_gnu_build_id(d, &out->build_id);
    }
  }
  elf_end(e);
  return ok;
}

std::string debug_file_of(const std::string& debug_dir, const std::string& build_id) {
  if (build_id.size() < 3) return "";
  return debug_dir + "/.build-id/" + build_id.substr(0, 2) + "/" + build_id.substr(2) + ".debug";
}

}  // namespace

bool read_elf_file(const std::string& path, ElfFileInfo* out, std::string* why) {
  *out = ElfFileInfo();
  if (elf_version(EV_CURRENT) == EV_NONE) {
    *why = "libelf: " + std::string(elf_errmsg(-1));
    return false;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *why = path + ": " + std::strerror(errno);
    return false;
  }
  struct stat st;
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
            static_cast<uint64_t>(st.st_size) <= kMaxFileBytes;
  if (!ok) {
    *why = path + ": not a regular file of at most 2 GiB";
  } else {
    std::string w;
    ok = read_elf(fd, static_cast<uint64_t>(st.st_size), out, &w);
    if (!ok) *why = path + ": " + w;
  }
  ::close(fd);
  if (!ok) *out = ElfFileInfo();
  return ok;
}

bool LibrarySymbols::offset_of(const std::string& name, uint64_t* offset, std::string* why) const {
  auto it = offsets.find(name);
  const size_t colon = name.find(':');
  if (it == offsets.end() && colon != std::string::npos) it = offsets.find(name.substr(colon + 1));
  if (it == offsets.end() || it->second.empty()) {
    *why = "not in the symbols";
    return false;
  }
  if (it->second.size() > 1) {
    *why = "ambiguous (" + std::to_string(it->second.size()) + " functions of that name)";
    return false;
  }
  *offset = *it->second.begin();
  return true;
}

std::string LibrarySymbols::name_at(uint64_t offset) const {
  const auto it = names.find(offset);
  return it == names.end() ? "" : it->second;
}

bool load_library_symbols(const std::string& library, const std::string& symbols_file,
                          const std::string& debug_dir, LibrarySymbols* out, std::string* why) {
  *out = LibrarySymbols();
  ElfFileInfo lib;
  if (!read_elf_file(library, &lib, why)) return false;
  ElfFileInfo syms;
  std::string source;
  if (!symbols_file.empty()) {
    if (!read_elf_file(symbols_file, &syms, why)) return false;
    if (lib.build_id.empty() || syms.build_id != lib.build_id) {
      *why = "--symbols " + symbols_file + ": its GNU build-id (" +
             (syms.build_id.empty() ? "none" : syms.build_id) + ") is not that of " + library +
             " (" + (lib.build_id.empty() ? "none" : lib.build_id) +
             "), the library the processes map: refused";
      return false;
    }
    if (!syms.has_symtab) {
      *why = "--symbols " + symbols_file + ": no symbol table (.symtab)";
      return false;
    }
    source = symbols_file + " (--symbols)";
  } else if (lib.has_symtab) {
    syms = lib;
    source = library + " (its own symbol table)";
  } else {
    const std::string debug = debug_file_of(debug_dir, lib.build_id);
    std::string w;
    if (debug.empty() || access(debug.c_str(), R_OK) != 0) {
      *why = library + " has no symbol table and no debug file by build-id" +
             (debug.empty() ? std::string(" (no build-id)") : " (" + debug + ")");
      return false;
    }
    if (!read_elf_file(debug, &syms, &w) || syms.build_id != lib.build_id || !syms.has_symtab) {
      *why = debug + ": not a debug file of " + library + (w.empty() ? "" : ": " + w);
      return false;
    }
    source = debug + " (debug file by build-id)";
  }
  out->library = library;
  out->source = source;
  // The symbols' addresses as file offsets of the library itself: its PT_LOADs
  // are what the processes map (a debug file's may say the same, or nothing).
  for (const auto& [name, vaddr] : syms.functions) {
    uint64_t off = 0;
    if (!file_offset_in(vaddr, 0, lib.loads, &off)) continue;
    out->offsets[name].insert(off);
    if (name.find(':') == std::string::npos) out->names.emplace(off, name);  // the first kept
  }
  return true;
}

}  // namespace fabtrace
