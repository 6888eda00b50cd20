// The ELF symbol reader of `fabtrace record --uprobes --symbols`
// (userspace/record/uprobes/elf_symbols.*). Ground truth: an unstripped shared object
// the build makes (symtab_fixture.c), loaded here: where the dynamic loader put
// its functions (dladdr's object, dl_iterate_phdr's segments: code_location) is
// what its symbol table must say; its build-id is what binutils' readelf
// prints; its debug file and stripped copy come from binutils' objcopy.
#include "userspace/record/uprobes/elf_symbols.h"

#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "tests/unit/scratch_dir.h"

namespace fabtrace {
namespace {

using test::read_file_bytes;
using test::ScratchDir;

// What a shell command prints (its exit status in *rc).
std::string run(const std::string& cmd, int* rc = nullptr) {
  std::string out;
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int status = ::pclose(p);
  if (rc) *rc = status;
  return out;
}

// The fixture's functions where the loader put them: (file, offset) each.
struct Loaded {
  std::string path;
  uint64_t alpha = 0, beta = 0, hidden = 0;
};
Loaded load_fixture() {
  Loaded l;
  void* h = dlopen(SYMTAB_FIXTURE, RTLD_NOW | RTLD_LOCAL);
  if (!h) return l;
  const void* alpha = dlsym(h, "ft_symtab_alpha");
  const void* beta = dlsym(h, "ft_symtab_beta");
  auto hidden_ptr = reinterpret_cast<void* (*)()>(dlsym(h, "ft_symtab_hidden_ptr"));
  std::string p;
  if (!alpha || !beta || !hidden_ptr || !code_location(alpha, &l.path, &l.alpha) ||
      !code_location(beta, &p, &l.beta) || !code_location(hidden_ptr(), &p, &l.hidden))
    l.path.clear();
  Dl_info info;
  // dladdr names the same object as dl_iterate_phdr.
  if (dladdr(alpha, &info) == 0 || l.path != info.dli_fname) l.path.clear();
  return l;
}

TEST(ElfSymbols, OffsetsAreWhereTheLoaderPutTheFunctions) {
  const Loaded l = load_fixture();
  ASSERT_FALSE(l.path.empty());
  ScratchDir dir;
  LibrarySymbols syms;
  std::string why;
  ASSERT_TRUE(load_library_symbols(l.path, "", dir.path(), &syms, &why)) << why;
  EXPECT_NE(syms.source.find("its own symbol table"), std::string::npos) << syms.source;
  uint64_t off = 0;
  ASSERT_TRUE(syms.offset_of("ft_symtab_alpha", &off, &why)) << why;
  EXPECT_EQ(off, l.alpha);
  ASSERT_TRUE(syms.offset_of("ft_symtab_beta", &off, &why)) << why;
  EXPECT_EQ(off, l.beta);
  // A static function: by its name and by "file:name" (its STT_FILE).
  ASSERT_TRUE(syms.offset_of("ft_symtab_hidden", &off, &why)) << why;
  EXPECT_EQ(off, l.hidden);
  ASSERT_TRUE(syms.offset_of("symtab_fixture.c:ft_symtab_hidden", &off, &why)) << why;
  EXPECT_EQ(off, l.hidden);
  EXPECT_EQ(syms.name_at(l.alpha), "ft_symtab_alpha");
  EXPECT_EQ(syms.name_at(l.hidden), "ft_symtab_hidden");
  EXPECT_EQ(syms.name_at(l.alpha + 1), "");
  EXPECT_FALSE(syms.offset_of("ft_symtab_gamma", &off, &why));
  EXPECT_EQ(why, "not in the symbols");
  // Two static functions of one name: ambiguous, not a guess.
  syms.offsets["twice"] = {0x10, 0x20};
  EXPECT_FALSE(syms.offset_of("twice", &off, &why));
  EXPECT_NE(why.find("ambiguous"), std::string::npos);
}

TEST(ElfSymbols, BuildIdIsReadelfsAndAMismatchIsRefused) {
  ElfFileInfo a, b;
  std::string why;
  ASSERT_TRUE(read_elf_file(SYMTAB_FIXTURE, &a, &why)) << why;
  ASSERT_TRUE(read_elf_file(SYMTAB_OTHER, &b, &why)) << why;
  const std::string notes = run(std::string("readelf -n '") + SYMTAB_FIXTURE + "'");
  ASSERT_EQ(a.build_id.size(), 40u);  // sha1
  EXPECT_NE(notes.find("Build ID: " + a.build_id), std::string::npos) << notes;
  EXPECT_NE(a.build_id, b.build_id);
  EXPECT_TRUE(a.has_symtab);
  EXPECT_FALSE(a.loads.empty());

  LibrarySymbols syms;
  EXPECT_TRUE(load_library_symbols(SYMTAB_FIXTURE, SYMTAB_FIXTURE, "/nonexistent", &syms, &why))
      << why;
  EXPECT_NE(syms.source.find("--symbols"), std::string::npos);
  EXPECT_FALSE(load_library_symbols(SYMTAB_FIXTURE, SYMTAB_OTHER, "/nonexistent", &syms, &why));
  EXPECT_NE(why.find("build-id (" + b.build_id + ") is not that of"), std::string::npos) << why;
  EXPECT_NE(why.find("refused"), std::string::npos) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos);
  EXPECT_TRUE(syms.offsets.empty());
}

TEST(ElfSymbols, StrippedLibraryUsesItsDebugFileByBuildId) {
  ScratchDir dir;
  const std::string stripped = dir.path("libstripped.so"), debug = dir.path("fixture.debug");
  int rc = -1;
  run("objcopy --strip-all '" + std::string(SYMTAB_FIXTURE) + "' '" + stripped + "' 2>&1", &rc);
  ASSERT_EQ(rc, 0);
  run("objcopy --only-keep-debug '" + std::string(SYMTAB_FIXTURE) + "' '" + debug + "' 2>&1", &rc);
  ASSERT_EQ(rc, 0);
  LibrarySymbols own, syms;
  std::string why;
  ASSERT_TRUE(load_library_symbols(SYMTAB_FIXTURE, "", "", &own, &why)) << why;
  // Stripped, nothing under the debug directory: no symbols, said so.
  EXPECT_FALSE(load_library_symbols(stripped, "", dir.path(), &syms, &why));
  EXPECT_NE(why.find("no symbol table and no debug file by build-id"), std::string::npos) << why;
  // The debug file where a distribution puts it: the same offsets.
  ElfFileInfo info;
  ASSERT_TRUE(read_elf_file(stripped, &info, &why)) << why;
  EXPECT_FALSE(info.has_symtab);
  const std::string rel =
      ".build-id/" + info.build_id.substr(0, 2) + "/" + info.build_id.substr(2) + ".debug";
  dir.write(rel, read_file_bytes(debug));
  ASSERT_TRUE(load_library_symbols(stripped, "", dir.path(), &syms, &why)) << why;
  EXPECT_NE(syms.source.find("debug file by build-id"), std::string::npos) << syms.source;
  EXPECT_EQ(syms.offsets, own.offsets);
  // And given as --symbols.
  ASSERT_TRUE(load_library_symbols(stripped, debug, "/nonexistent", &syms, &why)) << why;
  EXPECT_EQ(syms.offsets, own.offsets);
}

// A hostile file gives false and one line, never a crash or a symbol.
void expect_refused(const std::string& path, const char* what) {
  SCOPED_TRACE(what);
  ElfFileInfo info;
  std::string why;
  EXPECT_FALSE(read_elf_file(path, &info, &why));
  EXPECT_FALSE(why.empty());
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  EXPECT_EQ(why.rfind(path, 0), 0u) << why;  // the file named first
  EXPECT_TRUE(info.functions.empty());
  LibrarySymbols syms;
  EXPECT_FALSE(load_library_symbols(SYMTAB_FIXTURE, path, "/nonexistent", &syms, &why));
}

TEST(ElfSymbols, HostileFilesAreOneClearError) {
  const std::string bytes = read_file_bytes(SYMTAB_FIXTURE);
  ASSERT_GT(bytes.size(), sizeof(Elf64_Ehdr));
  ScratchDir dir;
  for (const size_t n : {size_t{0}, size_t{4}, size_t{63}, bytes.size() / 2, bytes.size() - 1})
    expect_refused(dir.write("trunc" + std::to_string(n), bytes.substr(0, n)),
                   ("truncated to " + std::to_string(n)).c_str());
  expect_refused(dir.write("text", std::string(4096, 'x')), "not ELF");
  // The section header table past the end of the file.
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof(eh));
  std::string far = bytes;
  Elf64_Ehdr e2 = eh;
  e2.e_shoff = 0x7fffffff0000ULL;
  std::memcpy(&far[0], &e2, sizeof(e2));
  expect_refused(dir.write("far_sections", far), "e_shoff past the end");
  // The symbol table's bytes past the end of the file.
  std::string bad = bytes;
  bool patched = false;
  for (size_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    const size_t at = eh.e_shoff + i * sizeof(sh);
    ASSERT_LE(at + sizeof(sh), bad.size());
    std::memcpy(&sh, bad.data() + at, sizeof(sh));
    if (sh.sh_type != SHT_SYMTAB) continue;
    sh.sh_offset = bytes.size() - 8;
    std::memcpy(&bad[at], &sh, sizeof(sh));
    patched = true;
  }
  ASSERT_TRUE(patched);
  const std::string p = dir.write("bad_symtab", bad);
  expect_refused(p, "symtab past the end");
  ElfFileInfo info;
  std::string why;
  read_elf_file(p, &info, &why);
  EXPECT_NE(why.find("lies past the end of the file"), std::string::npos) << why;
  // A directory is not a file.
  expect_refused(dir.path(), "a directory");
}

}  // namespace
}  // namespace fabtrace
