#include "userspace/record/uprobes/probe_place.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <map>

namespace fabtrace {

namespace {

constexpr int kRsp = 4;
constexpr int kRax = 0;
constexpr size_t kMaxInsns = 64;  // instructions followed from an entry or a call's return
constexpr size_t kWindow = 512;   // bytes of code read at once
// The registers of arguments 1-6 (rdi, rsi, rdx, rcx, r8, r9); [0] unused.
constexpr int kAbiReg[7] = {-1, 7, 6, 2, 1, 8, 9};

// What the code holds as it runs: each register's value (an argument's
// number, or 0 for anything else), the stack's depth below the entry's stack
// pointer, and the frame's 8-byte slots by their offset from the entry's
// stack pointer (the caller's stack arguments 7.. at +8.. to begin with).
struct State {
  int reg[16] = {};
  int64_t depth = 0;
  std::map<int64_t, int> slots;
};

struct Code {
  const CodeReader& read;
  uint64_t base = 0;
  uint8_t b[kWindow] = {};
  size_t n = 0;
  bool load(uint64_t off) {
    base = off;
    n = read(off, b, sizeof(b));
    return n > 0;
  }
  // Byte i of the window, 0 past its end (decoding then fails on its length).
  uint8_t at(size_t i) const { return i < n ? b[i] : 0; }
};

// A memory or register operand (ModRM, SIB, displacement).
struct Operand {
  bool direct = false;  // a register: `rm`
  int rm = 0;
  int reg = 0;            // the ModRM reg field (with REX.R)
  bool on_stack = false;  // [rsp + disp], no index
  int64_t disp = 0;
  size_t len = 0;  // bytes of ModRM + SIB + displacement
};

Operand modrm(const Code& c, size_t i, int rex) {
  Operand o;
  const uint8_t m = c.at(i);
  const int mod = m >> 6;
  o.reg = ((m >> 3) & 7) | ((rex & 4) ? 8 : 0);
  const int rm = m & 7;
  o.len = 1;
  if (mod == 3) {
    o.direct = true;
    o.rm = rm | ((rex & 1) ? 8 : 0);
    return o;
  }
  bool disp32 = mod == 2;
  if (rm == 4) {
    const uint8_t sib = c.at(i + 1);
    o.len = 2;
    const int base = (sib & 7) | ((rex & 1) ? 8 : 0);
    const int index = ((sib >> 3) & 7) | ((rex & 2) ? 8 : 0);
    if ((sib & 7) == 5 && mod == 0)
      disp32 = true;  // no base
    else
      o.on_stack = base == kRsp && index == kRsp;
  } else if (rm == 5 && mod == 0) {
    disp32 = true;  // rip-relative
  }
  if (mod == 1) {
    o.disp = static_cast<int8_t>(c.at(i + o.len));
    o.len += 1;
  } else if (disp32) {
    int32_t d = 0;
    for (int k = 0; k < 4; ++k) d |= static_cast<int32_t>(c.at(i + o.len + k)) << (8 * k);
    o.disp = d;
    o.len += 4;
  }
  return o;
}

// The slot at entry-relative `off` (0: not an argument).
int slot(const State& s, int64_t off) {
  auto it = s.slots.find(off);
  return it == s.slots.end() ? 0 : it->second;
}

// A store of `size` bytes of `value` at entry-relative `off`: false where it
// is not into the op's own frame (the caller's arguments, the return address).
bool store(State* s, int64_t off, int size, int value) {
  if (off + size > 0) return false;
  for (auto it = s->slots.begin(); it != s->slots.end();) {
    if (it->first < off + size && it->first + 8 > off)
      it = s->slots.erase(it);
    else
      ++it;
  }
  if (size == 8 && value) s->slots[off] = value;
  return true;
}

int32_t rel32(const Code& c, size_t i) {
  int32_t d = 0;
  for (int k = 0; k < 4; ++k) d |= static_cast<int32_t>(c.at(i + k)) << (8 * k);
  return d;
}

std::string at_off(const char* what, uint64_t off) {
  char b[96];
  std::snprintf(b, sizeof(b), "%s at +0x%llx", what, static_cast<unsigned long long>(off));
  return b;
}

// The prefixes this reader knows, at window index p: an fs segment, a REX.
struct Prefix {
  bool fs = false;
  int rex = 0;
  size_t len = 0;
};
Prefix prefix(const Code& c, size_t p) {
  Prefix x;
  if (c.at(p) == 0x64) {
    x.fs = true;
    ++x.len;
  }
  if ((c.at(p + x.len) & 0xf0) == 0x40) x.rex = c.at(p + x.len++);
  return x;
}

// A push of a register (0x50-0x57, with REX.B 0x41 0x50-0x57): emulated.
bool is_push_reg(const uint8_t* b, size_t n) {
  return (n >= 1 && b[0] >= 0x50 && b[0] <= 0x57) ||
         (n >= 2 && b[0] == 0x41 && b[1] >= 0x50 && b[1] <= 0x57);
}

enum class Step { kNext, kCall, kStop };

// One instruction of the prologue at window index *i: its effect on `s`,
// *i moved past it. kCall: a call rel32, *target its callee's file offset.
Step step(const Code& c, size_t* i, State* s, uint64_t* target, std::string* why) {
  size_t p = *i;
  const uint64_t here = c.base + p;
  if (p + 4 <= c.n && is_endbr64(c.b + p)) {
    *i = p + 4;
    return Step::kNext;
  }
  const Prefix pre = prefix(c, p);
  const bool fs = pre.fs;
  const int rex = pre.rex;
  p += pre.len;
  const bool w = rex & 8;
  const uint8_t op = c.at(p++);
  auto bad = [&](const char* what) {
    *why = at_off(what, here);
    return Step::kStop;
  };
  auto rm_operand = [&](size_t imm) {
    Operand o = modrm(c, p, rex);
    p += o.len + imm;
    if (fs) o.on_stack = false;
    return o;
  };
  switch (op) {
    case 0x90:
      break;
    case 0x0f: {
      const uint8_t op2 = c.at(p++);
      if (op2 == 0x1f) {  // nopl r/m
        rm_operand(0);
      } else if (op2 == 0xb6 || op2 == 0xb7 || op2 == 0xbe || op2 == 0xbf ||
                 (op2 >= 0x40 && op2 <= 0x4f)) {  // movzx, movsx, cmovcc: into a register
        s->reg[rm_operand(0).reg] = 0;
      } else {
        return bad("an instruction this reader does not follow");
      }
      break;
    }
    case 0x50:
    case 0x51:
    case 0x52:
    case 0x53:
    case 0x54:
    case 0x55:
    case 0x56:
    case 0x57: {
      const int r = (op & 7) | ((rex & 1) ? 8 : 0);
      const int v = r == kRsp ? 0 : s->reg[r];
      s->depth += 8;
      store(s, -s->depth, 8, v);
      break;
    }
    case 0x6a:
    case 0x68:
      p += op == 0x6a ? 1 : 4;
      s->depth += 8;
      store(s, -s->depth, 8, 0);
      break;
    case 0xff: {
      const Operand o = rm_operand(0);
      if ((o.reg & 7) != 6) return bad("an indirect call or jump");
      const int v = o.direct ? s->reg[o.rm] : o.on_stack ? slot(*s, o.disp - s->depth) : 0;
      s->depth += 8;
      store(s, -s->depth, 8, v);
      break;
    }
    case 0x88:
    case 0x89:
    case 0xc6:
    case 0xc7: {
      // mov r/m, reg (or an immediate): a register copied, or a store
      const size_t imm = op == 0xc6 ? 1 : op == 0xc7 ? 4 : 0;
      const Operand o = rm_operand(imm);
      if (imm && (o.reg & 7) != 0) return bad("an instruction this reader does not follow");
      const int v = (op == 0x89 && w) ? s->reg[o.reg] : 0;
      if (o.direct) {
        s->reg[o.rm] = v;
        if (o.rm == kRsp) return bad("a move into the stack pointer");
      } else if (!o.on_stack || !store(s, o.disp - s->depth,
                                       op == 0x88 || op == 0xc6 ? 1
                                       : w                      ? 8
                                                                : 4,
                                       v)) {
        return bad("a store outside the op's frame");
      }
      break;
    }
    case 0x8b: {  // mov reg, r/m
      const Operand o = rm_operand(0);
      s->reg[o.reg] = !w           ? 0
                      : o.direct   ? s->reg[o.rm]
                      : o.on_stack ? slot(*s, o.disp - s->depth)
                                   : 0;
      if (o.reg == kRsp) return bad("a move into the stack pointer");
      break;
    }
    case 0x8d:  // lea
    case 0x03:
    case 0x0b:
    case 0x13:
    case 0x1b:
    case 0x23:
    case 0x2b:
    case 0x33:
    case 0x63: {  // an operation into a register (its other operand read)
      const Operand o = rm_operand(0);
      if (o.reg == kRsp) return bad("a write to the stack pointer");
      s->reg[o.reg] = 0;
      break;
    }
    case 0x01:
    case 0x09:
    case 0x11:
    case 0x19:
    case 0x21:
    case 0x29:
    case 0x31: {
      const Operand o = rm_operand(0);  // into r/m: a register only
      if (!o.direct) return bad("a store outside the op's frame");
      if (o.rm == kRsp) return bad("a write to the stack pointer");
      s->reg[o.rm] = 0;
      break;
    }
    case 0x38:
    case 0x39:
    case 0x3a:
    case 0x3b:
    case 0x84:
    case 0x85:
      rm_operand(0);  // cmp, test: flags only
      break;
    case 0x81:
    case 0x83: {  // group 1 with an immediate
      const Operand o = rm_operand(op == 0x83 ? 1 : 4);
      const int64_t imm = op == 0x83 ? static_cast<int8_t>(c.at(p - 1)) : rel32(c, p - 4);
      const int sub = o.reg & 7;
      if (sub == 7) break;  // cmp
      if (!o.direct) return bad("a store outside the op's frame");
      if (o.rm == kRsp) {
        if (!w || (sub != 0 && sub != 5)) return bad("a write to the stack pointer");
        s->depth += sub == 5 ? imm : -imm;
        if (s->depth < 0 || s->depth % 8) return bad("a stack pointer this reader does not follow");
      } else {
        s->reg[o.rm] = 0;
      }
      break;
    }
    case 0xf6:
    case 0xf7: {
      const Operand o = rm_operand(op == 0xf6 ? 1 : 4);
      if ((o.reg & 7) != 0) return bad("an instruction this reader does not follow");
      break;  // test
    }
    case 0x05:
    case 0x0d:
    case 0x15:
    case 0x1d:
    case 0x25:
    case 0x2d:
    case 0x35:
      p += 4;
      s->reg[kRax] = 0;
      break;
    case 0x3d:
    case 0xa9:
      p += 4;  // cmp, test rax
      break;
    case 0xb8:
    case 0xb9:
    case 0xba:
    case 0xbb:
    case 0xbc:
    case 0xbd:
    case 0xbe:
    case 0xbf: {
      const int r = (op & 7) | ((rex & 1) ? 8 : 0);
      if (r == kRsp) return bad("a move into the stack pointer");
      s->reg[r] = 0;
      p += w ? 8 : 4;
      break;
    }
    case 0xe8:
      *target = static_cast<uint64_t>(static_cast<int64_t>(c.base + p + 4) + rel32(c, p));
      *i = p + 4;
      return Step::kCall;
    default:
      if (op == 0xe9 || op == 0xeb || (op >= 0x70 && op <= 0x7f)) return bad("a branch");
      return bad("an instruction this reader does not follow");
  }
  if (p > c.n) return bad("code past what could be read");
  *i = p;
  return Step::kNext;
}

// Whether the code from window index `i` (a call's return) returns what the
// call returned: straight on to `ret`, rax untouched; a branch only to a call
// (the stack protector's failure, which does not return).
bool returns_callee_value(Code* c, size_t i, std::string* why) {
  for (size_t k = 0; k < kMaxInsns; ++k) {
    const Prefix pre = prefix(*c, i);
    const int rex = pre.rex;
    size_t p = i + pre.len;
    const uint8_t op = c->at(p++);
    if (op == 0xc3) return true;
    if (op >= 0x58 && op <= 0x5f) {  // pop
      if (((op & 7) | ((rex & 1) ? 8 : 0)) == kRax) break;
    } else if (op == 0x8b || op == 0x2b || op == 0x33) {  // into a register other than rax
      const Operand o = modrm(*c, p, rex);
      if (o.reg == kRax || o.reg == kRsp) break;
      p += o.len;
    } else if (op == 0x81 || op == 0x83) {  // add or sub to rsp
      const Operand o = modrm(*c, p, rex);
      if (!o.direct || o.rm != kRsp || ((o.reg & 7) != 0 && (o.reg & 7) != 5)) break;
      p += o.len + (op == 0x83 ? 1 : 4);
    } else if ((op >= 0x70 && op <= 0x7f) || (op == 0x0f && c->at(p) >= 0x80 && c->at(p) <= 0x8f)) {
      const bool near = op == 0x0f;
      if (near) ++p;
      const int64_t d = near ? rel32(*c, p) : static_cast<int8_t>(c->at(p));
      p += near ? 4 : 1;
      const int64_t t = static_cast<int64_t>(p) + d;
      if (t < 0 || static_cast<size_t>(t) >= c->n || c->at(static_cast<size_t>(t)) != 0xe8) break;
    } else if (op != 0x90) {
      break;
    }
    if (p > c->n) break;
    i = p;
  }
  *why = at_off("the op does not return its callee's value (instruction", c->base + i);
  *why += ")";
  return false;
}

}  // namespace

bool is_endbr64(const uint8_t* b) {
  return b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa;
}

bool uprobe_emulated(const uint8_t* b, size_t n) {
  if (n == 0) return false;
  const uint8_t op = b[0];
  if (is_push_reg(b, n) || op == 0x90 || op == 0xe8 || op == 0xe9 || op == 0xeb ||
      (op >= 0x70 && op <= 0x7f))
    return true;
  if (n >= 2 && op == 0x0f && b[1] >= 0x80 && b[1] <= 0x8f) return true;
  // The 5-byte nop, which this kernel turns into a call (no trap at all).
  return n >= 5 && op == 0x0f && b[1] == 0x1f && b[2] == 0x44 && b[3] == 0 && b[4] == 0;
}

ProbePlace place_op_probe(const CodeReader& read, uint64_t func, uint32_t needed) {
  ProbePlace out;
  out.entry = out.ret = func;
  Code c{read};
  if (!c.load(func)) {
    out.why = "its code could not be read";
    return out;
  }
  size_t i = 0;
  if (c.n >= 4 && is_endbr64(c.b)) i = 4;
  if (uprobe_emulated(c.b + i, c.n - i)) {
    out.why = "its first instruction is emulated";
    return out;
  }
  State s;
  for (int n = 7; n <= kProbeArgs; ++n) s.slots[8 * (n - 6)] = n;
  for (int n = 1; n <= 6; ++n) s.reg[kAbiReg[n]] = n;
  uint64_t callee = 0, call_at = 0;
  bool called = false;
  for (size_t k = 0; k < kMaxInsns && !called; ++k) {
    call_at = c.base + i;
    switch (step(c, &i, &s, &callee, &out.why)) {
      case Step::kNext:
        break;
      case Step::kCall:
        called = true;
        break;
      case Step::kStop:
        return out;
    }
  }
  if (!called) {
    out.why = "no call within its first instructions";
    return out;
  }
  for (int n = 1; n <= kProbeArgs; ++n) {
    if (!(needed & (1u << n))) continue;
    ArgPlace& a = out.args[n];
    // Its own register first, then any register, then the frame.
    if (n <= 6 && s.reg[kAbiReg[n]] == n) a = {true, kAbiReg[n], 0};
    for (int r = 0; r < 16 && !a.known; ++r)
      if (r != kRsp && s.reg[r] == n) a = {true, r, 0};
    for (const auto& [off, v] : s.slots)
      if (!a.known && v == n) a = {true, -1, s.depth + off};
    if (!a.known) {
      out.why = at_off(("argument " + std::to_string(n) + " is not followed to the call").c_str(),
                       call_at);
      return out;
    }
  }
  if (!returns_callee_value(&c, i, &out.why)) return out;
  // The callee: its return probe needs an emulated first instruction.
  Code callee_code{read};
  if (!callee_code.load(callee)) {
    out.why = "the callee's code could not be read";
    return out;
  }
  uint64_t ret = callee;
  size_t j = 0;
  if (callee_code.n >= 4 && is_endbr64(callee_code.b)) {
    j = 4;
    ret += 4;
  }
  if (!is_push_reg(callee_code.b + j, callee_code.n - j)) {
    out.why = at_off("the callee's first instruction is single-stepped", callee);
    return out;
  }
  out.moved = true;
  out.entry = call_at;
  out.ret = ret;
  out.ret_sp = -8;  // the callee's entry: the call's return address pushed
  out.why.clear();
  return out;
}

ProbePlace place_op_probe(const std::string& path, uint64_t func, uint32_t needed) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    ProbePlace out;
    out.entry = out.ret = func;
    out.why = "its library could not be opened";
    return out;
  }
  const CodeReader read = [fd](uint64_t off, uint8_t* buf, size_t n) -> size_t {
    const ssize_t got = ::pread(fd, buf, n, static_cast<off_t>(off));
    return got > 0 ? static_cast<size_t>(got) : 0;
  };
  ProbePlace out = place_op_probe(read, func, needed);
  ::close(fd);
  return out;
}

}  // namespace fabtrace
