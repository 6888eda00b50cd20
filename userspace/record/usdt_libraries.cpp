#include "userspace/record/usdt_libraries.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "bpf/fabtrace_events.h"
#include "userspace/record/elf_build_id.h"

namespace fabtrace {

namespace {

constexpr uint32_t kStapsdtNoteType = 3;  // <sys/sdt.h>: NT_STAPSDT
constexpr size_t kMaxNotes = 4096;        // a library's probe sites, far above ours
constexpr uint64_t kMaxFileBytes = 1ULL << 30;

// The notes of one .note.stapsdt section: pc, base and semaphore addresses
// (8 bytes each on 64-bit), then provider, name and argument spec, each
// NUL-terminated inside the note's descriptor.
void read_stapsdt(Elf_Data* d, std::map<std::string, std::set<std::string>>* by_name,
                  size_t* notes) {
  size_t off = 0, name_off = 0, desc_off = 0;
  GElf_Nhdr nh;
  const auto* base = static_cast<const char*>(d->d_buf);
  while (off < d->d_size && *notes < kMaxNotes) {
    const size_t next = gelf_getnote(d, off, &nh, &name_off, &desc_off);
    if (next == 0 || next <= off) return;
    off = next;
    if (nh.n_type != kStapsdtNoteType || nh.n_descsz < 3 * 8 + 3) continue;
    ++*notes;
    const char* p = base + desc_off + 3 * 8;
    const char* end = base + desc_off + nh.n_descsz;
    std::string parts[3];
    for (std::string& s : parts) {
      const void* nul = std::memchr(p, '\0', static_cast<size_t>(end - p));
      if (!nul) return;
      s.assign(p, static_cast<const char*>(nul));
      p = static_cast<const char*>(nul) + 1;
      if (p > end) return;
    }
    if (parts[0] == FT_USDT_PROVIDER) (*by_name)[parts[1]].insert(parts[2]);
  }
}

}  // namespace

bool read_usdt_notes(int fd, std::map<std::string, size_t>* specs, std::string* build_id,
                     std::string* why) {
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<uint64_t>(st.st_size) > kMaxFileBytes) {
    *why = "not a regular file of a library's size";
    return false;
  }
  elf_version(EV_CURRENT);
  Elf* e = elf_begin(fd, ELF_C_READ, nullptr);
  if (!e || elf_kind(e) != ELF_K_ELF || gelf_getclass(e) != ELFCLASS64) {
    if (e) elf_end(e);
    *why = "not a 64-bit ELF file";
    return false;
  }
  size_t shstrndx = 0;
  std::map<std::string, std::set<std::string>> by_name;
  size_t notes = 0;
  bool ok = elf_getshdrstrndx(e, &shstrndx) == 0;
  for (Elf_Scn* scn = nullptr; ok && (scn = elf_nextscn(e, scn)) != nullptr;) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE) continue;
    if (sh.sh_offset > static_cast<uint64_t>(st.st_size) ||
        sh.sh_size > static_cast<uint64_t>(st.st_size) - sh.sh_offset) {
      ok = false;
      break;
    }
    const char* name = elf_strptr(e, shstrndx, sh.sh_name);
    Elf_Data* d = elf_getdata(scn, nullptr);
    if (!name || !d) continue;
    if (std::strcmp(name, ".note.stapsdt") == 0)
      read_stapsdt(d, &by_name, &notes);
    else if (build_id->empty())
      read_gnu_build_id(d, build_id);
  }
  elf_end(e);
  if (!ok) {
    *why = "a note section lies past the end of the file";
    return false;
  }
  if (by_name.empty()) {
    *why = "no fabtrace USDT probe in it";
    return false;
  }
  specs->clear();
  for (const auto& [name, args] : by_name) (*specs)[name] = args.size();
  return true;
}

UsdtLibraries::~UsdtLibraries() {
  for (const UsdtFile& f : files_) ::close(f.fd);
}

const UsdtFile* UsdtLibraries::add_mapped(const std::string& proc_root, pid_t pid,
                                          const std::string& range, const std::string& path,
                                          uid_t user, bool* known, std::string* why) {
  *known = false;
  for (char c : range)
    if (!(c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      *why = "a bad mapping range";
      return nullptr;
    }
  // The mapped file itself (a root-only magic link: nothing at `path` is looked up).
  const std::string mf = proc_root + "/" + std::to_string(pid) + "/map_files/" + range;
  const int fd = ::open(mf.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    *why = path + " of pid " + std::to_string(pid) + ": " + std::strerror(errno);
    return nullptr;
  }
  return add_fd(fd, path, user, known, why);
}

const UsdtFile* UsdtLibraries::add_own(const std::string& path, bool* known, std::string* why) {
  *known = false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    *why = path + ": " + std::strerror(errno);
    return nullptr;
  }
  return add_fd(fd, path, 0, known, why);
}

const UsdtFile* UsdtLibraries::add_fd(int fd, const std::string& shown, uid_t user, bool* known,
                                      std::string* why) {
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    *why = shown + ": not a regular file: refused";
    return nullptr;
  }
  for (const UsdtFile& f : files_)
    if (f.dev == st.st_dev && f.ino == st.st_ino) {
      ::close(fd);
      *known = true;
      return nullptr;
    }
  UsdtFile f;
  f.fd = fd;
  f.dev = st.st_dev;
  f.ino = st.st_ino;
  f.user = user;
  f.shown = shown;
  std::string bad;
  if (!read_usdt_notes(fd, &f.specs, &f.build_id, &bad)) {
    ::close(fd);
    *why = shown + ": " + bad + ": refused";
    return nullptr;
  }
  if (files_.size() >= max_files_ || per_user_[user] >= max_per_user_) {
    ::close(fd);
    ++over_bound_;
    *why =
        shown + " (uid " + std::to_string(user) + "): not attached: " +
        (files_.size() >= max_files_
             ? "the session's bound of " + std::to_string(max_files_) + " library files is reached"
             : "uid " + std::to_string(user) + "'s bound of " + std::to_string(max_per_user_) +
                   " library files is reached") +
        " (its processes' probes do not fire)";
    return nullptr;
  }
  for (const UsdtFile& g : files_)
    if (!f.build_id.empty() && g.build_id == f.build_id) {
      f.copy_of = g.shown;
      break;
    }
  ++per_user_[user];
  files_.push_back(std::move(f));
  return &files_.back();
}

}  // namespace fabtrace
