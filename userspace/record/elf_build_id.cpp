#include "userspace/record/elf_build_id.h"

#include <elf.h>
#include <gelf.h>

#include <cstring>

namespace fabtrace {

namespace {

// A bound on a note's build-id (those of real builds are 16 or 20 bytes).
constexpr size_t kMaxBuildIdBytes = 64;

std::string hex(const unsigned char* p, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += digits[p[i] >> 4];
    s += digits[p[i] & 15];
  }
  return s;
}

}  // namespace

void read_gnu_build_id(Elf_Data* d, std::string* id) {
  size_t off = 0;
  GElf_Nhdr nh;
  size_t name_off = 0, desc_off = 0;
  while (off < d->d_size) {
    const size_t next = gelf_getnote(d, off, &nh, &name_off, &desc_off);
    if (next == 0 || next <= off) return;
    const auto* base = static_cast<const unsigned char*>(d->d_buf);
    if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
        std::memcmp(base + name_off, "GNU", 4) == 0 && nh.n_descsz > 0 &&
        nh.n_descsz <= kMaxBuildIdBytes) {
      *id = hex(base + desc_off, nh.n_descsz);
      return;
    }
    off = next;
  }
}

}  // namespace fabtrace
