// uprobe_multi links (kernel 6.6+): one BPF link puts a program on many
// offsets of one file, with a cookie each. fabtrace record --uprobes used one
// perf-event uprobe per probe, and the kernel releases those one at a time
// with a grace-period wait each: 165 probes took 17 s to detach at exit
// (docs/performance.md, "record --uprobes"). A link releases its probes together.
//
// libbpf 1.1 (Debian 12) has neither the attach type nor the link_create
// fields, so both are spelled here from the kernel's UAPI (include/uapi/
// linux/bpf.h, 6.6: BPF_TRACE_UPROBE_MULTI = 48 and link_create.uprobe_multi)
// and the link is made with the raw bpf(2) command. A program is attached
// this way only when loaded with that attach type (set before the load), so
// the choice is made once, before the load, by uprobe_multi_usable().
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fabtrace {

// enum bpf_attach_type's BPF_TRACE_UPROBE_MULTI (kernel 6.6) and
// BPF_TRACE_UPROBE_SESSION (6.13: one program at a probe's entry and its
// return, whose entry may decline the return).
constexpr int kBpfTraceUprobeMulti = 48;
constexpr int kBpfTraceUprobeSession = 57;

// Whether this kernel makes uprobe_multi links, and (with `pid_filter`)
// filters them by process: 6.6 to 6.8 filtered by thread id instead, which
// would miss every other thread of an --only-pids process. On "no", `why`
// says what the kernel answered.
bool uprobe_multi_usable(bool pid_filter, std::string* why);

// Whether this kernel loads uprobe session programs (6.13 and later).
bool uprobe_session_usable();

// One link of the loaded program `prog_fd` (loaded as kBpfTraceUprobeMulti,
// or kBpfTraceUprobeSession with `session`) on `offsets` of `path` (file
// offsets, as a perf-event uprobe takes them), cookie i for offset i; return
// probes with `ret`; only process `pid` when above 0. The link's fd, or -errno.
int uprobe_multi_attach(int prog_fd, const std::string& path, const std::vector<uint64_t>& offsets,
                        const std::vector<uint64_t>& cookies, bool ret, pid_t pid,
                        bool session = false);

}  // namespace fabtrace
