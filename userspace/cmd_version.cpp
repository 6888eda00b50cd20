// fabtrace version (and fabtrace --version): what a bug report needs first.
#include <cstdio>
#include <string>

#include "common/version.h"
#include "userspace/cli/cli.h"
#include "userspace/commands.h"

#if FABTRACE_HAVE_BPF
#include <bpf/libbpf.h>
#endif

namespace fabtrace {

int print_version(std::FILE* out) {
  std::fprintf(out, "fabtrace %s\n", version());
  std::string path;
  const std::string fi = libfabric_version(true, &path);
  if (fi.empty())
    std::fprintf(out, "libfabric: not found (libfabric.so.1)\n");
  else
    std::fprintf(out, "libfabric %s (%s)\n", fi.c_str(), path.c_str());
#if FABTRACE_HAVE_BPF
  const char* bpf = libbpf_version_string();  // "v1.1"
  std::fprintf(out, "libbpf %s\n", bpf[0] == 'v' ? bpf + 1 : bpf);
#else
  std::fprintf(out, "libbpf: none (built without BPF: no fabtrace record)\n");
#endif
  return std::fflush(out) == 0 && !std::ferror(out) ? 0 : 1;
}

void add_version_command(cli::Cli& cli, CLI::App& parent) {
  cli.add_command(parent, "version",
                  "print fabtrace's version (with git describe at build time) and the versions "
                  "of the libfabric and libbpf it runs with",
                  [] { return print_version(stdout); });
}

}  // namespace fabtrace
