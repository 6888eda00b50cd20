// The probe argument layouts: the USDT notes of the built libfabtrace.so
// (section .note.stapsdt) against bpf/fabtrace_events.h ("USDT probe
// arguments"), which bpf/probes.bpf.c reads them by.
#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bpf/fabtrace_events.h"
#include "preload/probe_list.h"
#include "tests/support/require_program.h"
#include "tests/unit/scratch_dir.h"
#include "userspace/record/usdt_libraries.h"

#ifndef FABTRACE_LIB
#error "FABTRACE_LIB: the path of the built libfabtrace.so"
#endif

// The preload's probes, from their one list.
#define FT_COUNT_PROBE(name) +1
constexpr size_t kProbes = 0 FT_USDT_PROBES(FT_COUNT_PROBE);
#undef FT_COUNT_PROBE
namespace fabtrace {
namespace {

struct Section {
  uint64_t addr = 0, offset = 0, size = 0, flags = 0;
  uint32_t type = 0;
  bool found = false;
};

struct UsdtNote {
  uint64_t pc = 0, base = 0, semaphore = 0;
  std::string provider, name, args;
};

struct ElfNotes {
  std::map<std::string, Section> sections;  // by name
  std::vector<UsdtNote> notes;
};

// Reads the section table and the stapsdt notes of a 64-bit little-endian ELF
// file, checking every offset against the file. False with the reason in *err.
bool read_elf_notes(const std::string& bytes, ElfNotes* out, std::string* err) {
  auto fail = [err](const char* why) {
    *err = why;
    return false;
  };
  auto fits = [&](uint64_t off, uint64_t len) {
    return off <= bytes.size() && len <= bytes.size() - off;
  };
  Elf64_Ehdr eh;
  if (!fits(0, sizeof(eh))) return fail("shorter than an ELF header");
  std::memcpy(&eh, bytes.data(), sizeof(eh));
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB)
    return fail("not a 64-bit little-endian ELF file");
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shstrndx >= eh.e_shnum ||
      !fits(eh.e_shoff, uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr)))
    return fail("bad section table");
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  std::memcpy(sh.data(), bytes.data() + eh.e_shoff, sh.size() * sizeof(Elf64_Shdr));
  const Elf64_Shdr& strtab = sh[eh.e_shstrndx];
  if (!fits(strtab.sh_offset, strtab.sh_size)) return fail("bad section names");
  for (const Elf64_Shdr& s : sh) {
    if (s.sh_name >= strtab.sh_size) return fail("bad section name");
    const char* n = bytes.data() + strtab.sh_offset + s.sh_name;
    const std::string name(n, strnlen(n, strtab.sh_size - s.sh_name));
    out->sections[name] = {s.sh_addr, s.sh_offset, s.sh_size, s.sh_flags, s.sh_type, true};
  }
  const Section& ns = out->sections[".note.stapsdt"];
  if (!ns.found) return true;
  if (ns.type != SHT_NOTE || !fits(ns.offset, ns.size)) return fail("bad note section");
  auto align4 = [](uint64_t v) { return (v + 3) & ~uint64_t{3}; };
  uint64_t off = 0;
  while (off + sizeof(Elf64_Nhdr) <= ns.size) {
    Elf64_Nhdr nh;
    std::memcpy(&nh, bytes.data() + ns.offset + off, sizeof(nh));
    const uint64_t name_off = off + sizeof(nh);
    const uint64_t desc_off = name_off + align4(nh.n_namesz);
    const uint64_t next = desc_off + align4(nh.n_descsz);
    if (next > ns.size) return fail("note runs past its section");
    const char* p = bytes.data() + ns.offset;
    if (nh.n_type == 3 && nh.n_namesz == sizeof("stapsdt") &&
        std::memcmp(p + name_off, "stapsdt", sizeof("stapsdt")) == 0) {
      if (nh.n_descsz < 3 * 8) return fail("stapsdt note too short");
      UsdtNote u;
      const char* d = p + desc_off;
      std::memcpy(&u.pc, d, 8);
      std::memcpy(&u.base, d + 8, 8);
      std::memcpy(&u.semaphore, d + 16, 8);
      // Three NUL-terminated strings: provider, name, arguments.
      std::string* strs[] = {&u.provider, &u.name, &u.args};
      size_t at = 24;
      for (std::string* s : strs) {
        const size_t len = strnlen(d + at, nh.n_descsz - at);
        if (at + len >= nh.n_descsz) return fail("unterminated string in a note");
        s->assign(d + at, len);
        at += len + 1;
      }
      out->notes.push_back(u);
    }
    off = next;
  }
  return true;
}

// "8@%rdi -4@4(%rsp)" -> {8, -4}.
std::vector<int> arg_sizes(const std::string& args) {
  std::vector<int> sizes;
  std::istringstream in(args);
  std::string a;
  while (in >> a) {
    const size_t at = a.find('@');
    sizes.push_back(at == std::string::npos ? 0 : std::atoi(a.substr(0, at).c_str()));
  }
  return sizes;
}

TEST(UsdtNotes, ReaderRefusesWhatIsNotElf) {
  // The reader refuses what is not an ELF file rather than reading past it.
  ElfNotes n;
  std::string err;
  EXPECT_FALSE(read_elf_notes("", &n, &err));
  EXPECT_FALSE(read_elf_notes(std::string(64, '\0'), &n, &err));
  EXPECT_EQ(arg_sizes("8@%rdi -4@4(%rsp) -8@%rsi 4@%r14d"), (std::vector<int>{8, -4, -8, 4}));
  EXPECT_TRUE(arg_sizes("").empty());
}

TEST(UsdtNotes, ProbesMatchTheDocumentedLayouts) {
#if !FABTRACE_HAVE_SDT_H
  FAIL() << "libfabtrace.so was built without <sys/sdt.h>: scripts/install-deps installs "
            "systemtap-sdt-dev";
#endif
  const std::string bytes = test::read_file_bytes(FABTRACE_LIB);
  ASSERT_FALSE(bytes.empty()) << FABTRACE_LIB;
  ElfNotes elf;
  std::string err;
  ASSERT_TRUE(read_elf_notes(bytes, &elf, &err)) << FABTRACE_LIB << ": " << err;
  ASSERT_TRUE(elf.sections[".note.stapsdt"].found) << "no .note.stapsdt in " << FABTRACE_LIB;
  const Section probes = elf.sections[".probes"];
  ASSERT_TRUE(probes.found) << "no .probes section (the semaphores)";
  const Section base = elf.sections[".stapsdt.base"];
  ASSERT_TRUE(base.found);

  // bpf/fabtrace_events.h: u64 and pointers 8, u32 4, s32 -4, s64 -8.
  const std::map<std::string, std::vector<int>> documented = {
      {"thread_start", {8}},                 // const char *rank
      {"cq_stall", {8, 8, 8}},               // cq_index, start_ns, end_ns
      {"slow_op", {4, 8, 8, 8, 8, 8}},       // op, bytes, start, end, local, remote
      {"op_error", {4, 8, 8, 8, -4, 8, 8}},  // op, bytes, start, end, err, local, remote
      {"poll", {8, 8}},                      // runs (struct ft_poll_run *), n
      {"mark", {8}},                         // const char *name
      {"phase_begin", {8}},                  // const char *name
      {"phase_end", {}},                     // no argument
  };
  std::set<std::string> seen;
  std::map<std::string, uint64_t> semaphore_of;
  for (const UsdtNote& u : elf.notes) {
    if (u.provider != FT_USDT_PROVIDER) continue;
    const auto it = documented.find(u.name);
    ASSERT_NE(it, documented.end()) << "undocumented probe " << u.name;
    seen.insert(u.name);
    EXPECT_EQ(arg_sizes(u.args), it->second) << u.name << ": " << u.args;
    EXPECT_NE(u.semaphore, 0u) << u.name;
    // Two bytes in .probes, where the kernel finds the reference counter.
    EXPECT_GE(u.semaphore, probes.addr) << u.name;
    EXPECT_LE(u.semaphore + 2, probes.addr + probes.size) << u.name;
    EXPECT_EQ(u.base, base.addr) << u.name;
    EXPECT_NE(u.pc, 0u) << u.name;
    // A probe emitted more than once (a cloned function) keeps one semaphore.
    const auto sem = semaphore_of.emplace(u.name, u.semaphore);
    EXPECT_EQ(sem.first->second, u.semaphore) << u.name;
  }
  std::set<std::string> want;
  for (const auto& d : documented) want.insert(d.first);
  EXPECT_EQ(seen, want);
  // One semaphore per probe.
  std::set<uint64_t> sems;
  for (const auto& s : semaphore_of) sems.insert(s.second);
  EXPECT_EQ(sems.size(), semaphore_of.size());
}

// Each probe site of the built library is x86's 5-byte nop, the form the
// kernel probes through a trampoline rather than a trap (preload/probes.cpp).
TEST(UsdtNotes, ProbeSitesAreFiveByteNops) {
  if (!FABTRACE_HAVE_SDT_H) GTEST_SKIP() << "built without <sys/sdt.h>";
#if !defined(__x86_64__) || !FABTRACE_USDT_NOP5
  GTEST_SKIP() << "the 1-byte nop of <sys/sdt.h> (not x86-64, or FABTRACE_USDT_NOP5=OFF)";
#endif
  const std::string bytes = test::read_file_bytes(FABTRACE_LIB);
  ElfNotes elf;
  std::string err;
  ASSERT_TRUE(read_elf_notes(bytes, &elf, &err)) << FABTRACE_LIB << ": " << err;
  const unsigned char nop5[] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
  size_t sites = 0;
  for (const UsdtNote& u : elf.notes) {
    if (u.provider != FT_USDT_PROVIDER) continue;
    // The site's file offset, through the section that holds its address.
    bool found = false;
    for (const auto& [name, s] : elf.sections) {
      if (s.type != SHT_PROGBITS || !(s.flags & SHF_EXECINSTR) || u.pc < s.addr ||
          u.pc + 5 > s.addr + s.size)
        continue;
      const uint64_t off = s.offset + (u.pc - s.addr);
      ASSERT_LE(off + 5, bytes.size()) << u.name;
      EXPECT_EQ(std::memcmp(bytes.data() + off, nop5, 5), 0)
          << u.name << " at 0x" << std::hex << u.pc << " in " << name;
      found = true;
      break;
    }
    EXPECT_TRUE(found) << u.name << ": no section holds 0x" << std::hex << u.pc;
    ++sites;
  }
  EXPECT_GE(sites, kProbes);  // every probe, some emitted more than once
}

// A session's own reading of the notes (userspace/record/usdt_libraries.h):
// every probe of the built library, each with its specs (what libbpf spends
// one id on, per attach), and the build-id.
TEST(UsdtNotes, TheSessionCountsEachProbesSpecs) {
  if (!FABTRACE_HAVE_SDT_H) GTEST_SKIP() << "built without <sys/sdt.h>";
  const int fd = ::open(FABTRACE_LIB, O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  std::map<std::string, size_t> specs;
  std::string build_id, why;
  ASSERT_TRUE(read_usdt_notes(fd, &specs, &build_id, &why)) << why;
  ::close(fd);
  EXPECT_EQ(specs.size(), kProbes);
  for (const auto& [name, n] : specs) EXPECT_GE(n, 1u) << name;
  EXPECT_FALSE(build_id.empty());
}

// n copies of the built library, DIR/c0.so ... (the same build-id, each its
// own inode).
void copy_the_library(const std::string& dir, int n) {
  for (int i = 0; i < n; ++i) {
    const std::string copy = dir + "/c" + std::to_string(i) + ".so";
    ASSERT_EQ(std::system(("cp " + std::string(FABTRACE_LIB) + " " + copy).c_str()), 0);
  }
}

// A file is taken once however many paths name it, and one user's files are
// bounded; what is not a library with the probes is refused.
TEST(UsdtNotes, LibraryFilesAreTakenOncePerInodeAndBoundedPerUser) {
  if (!FABTRACE_HAVE_SDT_H) GTEST_SKIP() << "built without <sys/sdt.h>";
  const test::ScratchDir scratch;
  const std::string dir = scratch.path();
  ASSERT_NO_FATAL_FAILURE(copy_the_library(dir, 3));
  ASSERT_EQ(::link((dir + "/c0.so").c_str(), (dir + "/hard.so").c_str()), 0);
  UsdtLibraries libs(8, 2);
  bool known = false;
  std::string why;
  EXPECT_NE(libs.add_own(dir + "/c0.so", &known, &why), nullptr) << why;
  EXPECT_EQ(libs.add_own(dir + "/hard.so", &known, &why), nullptr);
  EXPECT_TRUE(known);  // the same inode
  EXPECT_NE(libs.add_own(dir + "/c1.so", &known, &why), nullptr) << why;
  EXPECT_EQ(libs.add_own(dir + "/c2.so", &known, &why), nullptr);  // uid 0's third
  EXPECT_FALSE(known);
  EXPECT_NE(why.find("bound of 2 library files is reached"), std::string::npos) << why;
  EXPECT_EQ(libs.add_own("/proc/self/status", &known, &why), nullptr);
  EXPECT_NE(why.find("refused"), std::string::npos) << why;
  ASSERT_EQ(::mkfifo((dir + "/fifo").c_str(), 0600), 0);
  EXPECT_EQ(libs.add_own(dir + "/fifo", &known, &why), nullptr);  // never waited on
  EXPECT_NE(why.find("not a regular file"), std::string::npos) << why;
  EXPECT_EQ(libs.size(), 2u);
}

// Copies of one build (the same build-id) at other inodes are each taken, and
// each counts against the bounds: a probe is attached per inode, so a process
// that maps a copy is traced only through that copy's own probes. A copy is
// named as one.
TEST(UsdtNotes, CopiesOfOneBuildAreEachTakenAndEachCounted) {
  if (!FABTRACE_HAVE_SDT_H) GTEST_SKIP() << "built without <sys/sdt.h>";
  const test::ScratchDir scratch;
  const std::string dir = scratch.path();
  ASSERT_NO_FATAL_FAILURE(copy_the_library(dir, 3));
  UsdtLibraries libs(2, 8);
  bool known = false;
  std::string why;
  const UsdtFile* a = libs.add_own(dir + "/c0.so", &known, &why);
  ASSERT_NE(a, nullptr) << why;
  const UsdtFile* b = libs.add_own(dir + "/c1.so", &known, &why);
  ASSERT_NE(b, nullptr) << why;  // same build-id, another inode: taken
  EXPECT_FALSE(known);
  EXPECT_FALSE(a->build_id.empty());
  EXPECT_EQ(a->build_id, b->build_id);
  EXPECT_NE(a->ino, b->ino);
  EXPECT_EQ(a->copy_of, "");
  EXPECT_EQ(b->copy_of, dir + "/c0.so");
  // The third copy is over the session's bound of 2 files: copies count.
  EXPECT_EQ(libs.add_own(dir + "/c2.so", &known, &why), nullptr);
  EXPECT_NE(why.find("bound of 2 library files is reached"), std::string::npos) << why;
  EXPECT_EQ(libs.size(), 2u);
  EXPECT_EQ(libs.refused_over_bound(), 1u);
}

}  // namespace
}  // namespace fabtrace
