#include "tests/integration/symbols_copy.h"

#include <cstdio>
#include <set>
#include <sstream>

#include "tests/integration/harness.h"
#include "userspace/record/uprobes/elf_symbols.h"
#include "userspace/record/uprobes/optable_probe.h"
#include "userspace/record/uprobes/provider_functions.h"

namespace fabtrace::test {

namespace {

// The .text section's address (readelf -SW: "[13] .text PROGBITS ADDR ...").
bool text_address(const std::string& lib, uint64_t* addr) {
  const RunResult r = run({"readelf", "-SW", lib}, {}, false);
  std::istringstream in(r.output);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line.substr(line.find(']') == std::string::npos ? 0 : line.find(']') + 1));
    std::string name, type, a;
    if (f >> name >> type >> a && name == ".text") {
      *addr = std::stoull(a, nullptr, 16);
      return r.exit_code == 0;
    }
  }
  return false;
}

// The virtual address of file offset `off` (the inverse of file_offset_in).
bool vaddr_of(uint64_t off, const std::vector<ElfLoad>& loads, uint64_t* vaddr) {
  for (const ElfLoad& l : loads)
    if (off >= l.offset && off - l.offset < l.memsz) {
      *vaddr = off - l.offset + l.vaddr;
      return true;
    }
  return false;
}

}  // namespace

std::string libfabric_with_symbols(const std::string& dir, size_t* symbols, std::string* why) {
  const OptableResult r = probe_optables({"tcp;ofi_rxm", "shm"}, 20000);
  ElfFileInfo lib;
  uint64_t text = 0;
  if (r.library.empty() || !read_elf_file(r.library, &lib, why) ||
      !text_address(r.library, &text)) {
    if (why->empty()) *why = "libfabric.so.1 or its .text not found";
    return "";
  }
  std::vector<std::string> argv = {"objcopy"};
  std::set<std::string> added;
  for (const ProviderFunction& f : all_provider_functions()) {
    const OpSite* site = nullptr;
    for (const OpSite& s : r.sites)
      if (("," + s.provider + ",").find("," + std::string(f.provider) + ",") != std::string::npos &&
          s.table == f.table && s.op == f.op)
        site = &s;
    // The row's first name, without a "file.c:" (a global symbol has no file).
    std::string name = f.function;
    name = name.substr(0, name.find('|'));
    name = name.substr(name.find(':') + 1);
    uint64_t vaddr = 0;
    if (!site || !vaddr_of(site->offset, lib.loads, &vaddr) || vaddr < text ||
        !added.insert(name).second)
      continue;
    char value[64];
    std::snprintf(value, sizeof(value), "=.text:0x%llx,function,global",
                  static_cast<unsigned long long>(vaddr - text));
    argv.insert(argv.end(), {"--add-symbol", name + value});
  }
  const std::string out = dir + "/libfabric-symbols.so";
  argv.insert(argv.end(), {r.library, out});
  const RunResult oc = run(argv, {}, false);
  if (oc.exit_code != 0) {
    *why = "objcopy: " + oc.output;
    return "";
  }
  *symbols = added.size();
  return out;
}

}  // namespace fabtrace::test
