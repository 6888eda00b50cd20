#include "userspace/record/uprobes/uprobe_multi.h"

#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

namespace fabtrace {
namespace {

// union bpf_attr's link_create as of 6.6, for the uprobe_multi member only;
// the header this builds against (Debian 12's, 6.1) stops before it.
struct LinkCreateUprobeMulti {
  uint32_t prog_fd;
  uint32_t target_fd;
  uint32_t attach_type;
  uint32_t flags;
  uint64_t path;
  uint64_t offsets;
  uint64_t ref_ctr_offsets;
  uint64_t cookies;
  uint32_t cnt;
  uint32_t multi_flags;  // BPF_F_UPROBE_MULTI_RETURN
  uint32_t pid;
};
static_assert(offsetof(LinkCreateUprobeMulti, path) == 16, "link_create's union starts at 16");
static_assert(offsetof(LinkCreateUprobeMulti, pid) == 56, "uprobe_multi.pid at 56");
static_assert(sizeof(LinkCreateUprobeMulti) <= sizeof(union bpf_attr), "fits bpf_attr");

constexpr uint32_t kUprobeMultiReturn = 1;  // BPF_F_UPROBE_MULTI_RETURN

int sys_bpf(int cmd, void* attr, size_t size) {
  return static_cast<int>(syscall(__NR_bpf, cmd, attr, size));
}

// A program of one instruction pair (r0 = 0; exit) loaded as a uprobe_multi
// program: kernels that do not know the attach type refuse it or, before
// 5.18, take it and refuse its link.
int probe_program(int attach_type) {
  struct bpf_insn insns[2] = {};
  insns[0].code = BPF_ALU64 | BPF_MOV | BPF_K;
  insns[0].dst_reg = BPF_REG_0;
  insns[1].code = BPF_JMP | BPF_EXIT;
  static const char license[] = "Dual BSD/GPL";  // as bpf/*.bpf.c declare
  union bpf_attr a;
  std::memset(&a, 0, sizeof(a));
  a.prog_type = BPF_PROG_TYPE_KPROBE;
  a.insns = reinterpret_cast<uintptr_t>(insns);
  a.insn_cnt = 2;
  a.license = reinterpret_cast<uintptr_t>(license);
  a.expected_attach_type = static_cast<uint32_t>(attach_type);
  return sys_bpf(BPF_PROG_LOAD, &a, sizeof(a));
}

// BPF_LINK_CREATE for a uprobe_multi link: its fd, or -errno. `pid` as the
// kernel takes it (0: every process).
int link_create(int prog_fd, const char* path, const uint64_t* offsets, const uint64_t* cookies,
                uint32_t cnt, uint32_t multi_flags, uint32_t pid,
                int attach_type = kBpfTraceUprobeMulti) {
  LinkCreateUprobeMulti a{};
  a.prog_fd = static_cast<uint32_t>(prog_fd);
  a.attach_type = static_cast<uint32_t>(attach_type);
  a.path = reinterpret_cast<uintptr_t>(path);
  a.offsets = reinterpret_cast<uintptr_t>(offsets);
  a.cookies = reinterpret_cast<uintptr_t>(cookies);
  a.cnt = cnt;
  a.multi_flags = multi_flags;
  a.pid = pid;
  union bpf_attr whole;
  std::memset(&whole, 0, sizeof(whole));
  std::memcpy(&whole, &a, sizeof(a));
  const int fd = sys_bpf(BPF_LINK_CREATE, &whole, sizeof(whole));
  return fd >= 0 ? fd : -errno;
}

// The kernel's answer (an errno; 0 when it made the link) to a link of one
// probe at `offset` of `path` for `pid`.
int link_errno(int prog_fd, const char* path, uint64_t* offset, uint32_t pid) {
  const int fd = link_create(prog_fd, path, offset, nullptr, 1, 0, pid);
  if (fd >= 0) {
    close(fd);
    return 0;
  }
  return -fd;
}

}  // namespace

bool uprobe_multi_usable(bool pid_filter, std::string* why) {
  const int prog = probe_program(kBpfTraceUprobeMulti);
  if (prog < 0) {
    *why = std::string("the kernel refuses uprobe_multi programs (") + std::strerror(errno) + ")";
    return false;
  }
  // "/" is not a regular file: a kernel that makes uprobe_multi links gets as
  // far as the path and answers EBADF; one that does not answers EINVAL.
  uint64_t offset = 0;
  int err = link_errno(prog, "/", &offset, 0);
  bool ok = err == EBADF;
  if (!ok) {
    *why = std::string("the kernel makes no uprobe_multi links (") + std::strerror(err) +
           "; 6.6 and later do)";
  } else if (pid_filter) {
    // Kernels that check the pid as a process (6.9+) refuse pid -1 before
    // they look at the path (EINVAL); the thread-filtering ones get to the
    // path first (EBADF).
    err = link_errno(prog, "/", &offset, static_cast<uint32_t>(-1));
    ok = err == EINVAL;
    if (!ok)
      *why =
          "the kernel's uprobe_multi links filter by thread, not process (fixed in 6.9): "
          "--only-pids needs one perf-event uprobe per probe";
  }
  close(prog);
  return ok;
}

bool uprobe_session_usable() {
  const int prog = probe_program(kBpfTraceUprobeSession);
  if (prog < 0) return false;
  close(prog);
  return true;
}

int uprobe_multi_attach(int prog_fd, const std::string& path, const std::vector<uint64_t>& offsets,
                        const std::vector<uint64_t>& cookies, bool ret, pid_t pid, bool session) {
  if (offsets.empty() || offsets.size() != cookies.size()) return -EINVAL;
  return link_create(prog_fd, path.c_str(), offsets.data(), cookies.data(),
                     static_cast<uint32_t>(offsets.size()), ret ? kUprobeMultiReturn : 0,
                     pid > 0 ? static_cast<uint32_t>(pid) : 0,
                     session ? kBpfTraceUprobeSession : kBpfTraceUprobeMulti);
}

}  // namespace fabtrace
