// Where an op site's probes go so that the kernel need not single-step them.
//
// x86-64's uprobes emulate a few instructions (push of a register, call and
// jumps, nop) and single-step every other one out of line; on these machines
// a single-stepped hit costs 8-18 us against about 1 us for an emulated one.
// Many providers' data-path ops start with `sub $N,%rsp` and only forward to
// a common function (shm's send: the arguments rearranged, `call` its
// generic sendmsg, its value returned). For such an op the entry probe goes
// on that `call` (emulated), with where each of the op's arguments is there
// (a register or a slot of the frame), and the return probe on the callee's
// first instruction, where a return probe takes hold (its return address on
// top of the stack), when that instruction is emulated too: the callee's
// value is the op's, since the op returns it untouched.
//
// Only straight-line code that this reader understands is followed: any
// other instruction, a branch before the call, a store that is not into the
// op's own frame, or an argument it cannot follow leaves the site where it
// was (its first instruction). Nothing is guessed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace fabtrace {

inline constexpr int kProbeArgs = 16;  // arguments an op site's programs may read

// Where one argument is at the probe.
struct ArgPlace {
  bool known = false;
  int reg = -1;        // x86 register number (0 rax .. 15 r15), or -1: in memory
  int64_t sp_off = 0;  // in memory: at the probe's stack pointer + sp_off
};

struct ProbePlace {
  bool moved = false;             // false: both probes on the function's first instruction
  uint64_t entry = 0;             // file offset of the entry probe (the `call`)
  uint64_t ret = 0;               // file offset of the return probe (the callee's emulated entry)
  int64_t ret_sp = 0;             // the probe's sp + ret_sp: the sp a return probe at `ret` saw
  ArgPlace args[kProbeArgs + 1];  // [n]: argument n (1-based) at the entry probe
  std::string why;                // not moved: the reason (for --list and tests)
};

// Reads up to `n` bytes of the library at file offset `off`; returns how many.
using CodeReader = std::function<size_t(uint64_t off, uint8_t* buf, size_t n)>;

// The probe place of the op at file offset `func` whose programs read the
// arguments in `needed` (bit n: argument n). Not moved (and `why` set) where
// the first instruction is emulated already, or the code is not the
// forwarding shape above.
ProbePlace place_op_probe(const CodeReader& read, uint64_t func, uint32_t needed);
// The same from a library file.
ProbePlace place_op_probe(const std::string& path, uint64_t func, uint32_t needed);

// Whether the 4 bytes at `code` are an endbr64 (f3 0f 1e fa), which the
// kernel would single-step: a probe goes past it (the arguments and the
// stack are the same there).
bool is_endbr64(const uint8_t* code);

// Whether the instruction at `code` (at most `n` bytes) is one the kernel
// emulates on x86-64 (push of a register, call rel32, jmp, jcc, nop).
bool uprobe_emulated(const uint8_t* code, size_t n);

}  // namespace fabtrace
