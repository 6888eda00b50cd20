// Where an op site's probes go (userspace/record/uprobes/probe_place.*): an
// op that forwards to a common function is probed on its call and its
// callee's entry, with each argument followed to the call; anything the
// reader does not follow leaves the site on its first instruction. The code
// here is hand-assembled x86-64, in the shapes gcc gives such wrappers.
#include "userspace/record/uprobes/probe_place.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "bpf/uprobe_ops.h"
#include "userspace/record/uprobes/optable_probe.h"

namespace fabtrace {
namespace {

// A library image: code placed at file offsets, zeros elsewhere.
struct Image {
  std::vector<uint8_t> bytes = std::vector<uint8_t>(0x3000, 0);
  void put(uint64_t off, const std::vector<uint8_t>& code) {
    std::memcpy(bytes.data() + off, code.data(), code.size());
  }
  CodeReader reader() const {
    return [this](uint64_t off, uint8_t* buf, size_t n) -> size_t {
      if (off >= bytes.size()) return 0;
      const size_t got = std::min(n, bytes.size() - off);
      std::memcpy(buf, bytes.data() + off, got);
      return got;
    };
  }
};

constexpr uint64_t kFunc = 0x1000;
constexpr uint64_t kCallee = 0x2000;
constexpr uint32_t kArgs1to7 = 0xfe;  // bits 1..7

std::vector<uint8_t> cat(std::initializer_list<std::vector<uint8_t>> parts) {
  std::vector<uint8_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// call rel32 at offset `at` to `to`.
std::vector<uint8_t> call_to(uint64_t at, uint64_t to) {
  const int32_t rel = static_cast<int32_t>(to - (at + 5));
  std::vector<uint8_t> b = {0xe8, 0, 0, 0, 0};
  std::memcpy(b.data() + 1, &rel, 4);
  return b;
}

// An op (ep, buf, len, desc, dest, context, arg7) forwarding to kCallee:
// len, buf, desc kept in its frame, the context pushed, then the call.
const std::vector<uint8_t> kPrologue = {
    0x48, 0x83, 0xec, 0x38,                                // sub $0x38,%rsp
    0x48, 0x89, 0x4c, 0x24, 0x08,                          // mov %rcx,0x8(%rsp)
    0xb9, 0x01, 0x00, 0x00, 0x00,                          // mov $1,%ecx
    0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0x00, 0x00, 0x00,  // mov %fs:0x28,%rax
    0x48, 0x89, 0x44, 0x24, 0x28,                          // mov %rax,0x28(%rsp)
    0x31, 0xc0,                                            // xor %eax,%eax
    0x48, 0x89, 0x74, 0x24, 0x10,                          // mov %rsi,0x10(%rsp)
    0x48, 0x8d, 0x74, 0x24, 0x10,                          // lea 0x10(%rsp),%rsi
    0x48, 0x89, 0x54, 0x24, 0x18,                          // mov %rdx,0x18(%rsp)
    0x48, 0x8d, 0x54, 0x24, 0x08,                          // lea 0x8(%rsp),%rdx
    0xff, 0xb7, 0x90, 0x00, 0x00, 0x00,                    // push 0x90(%rdi)
    0x6a, 0x00,                                            // push $0
    0x41, 0x51,                                            // push %r9
    0x45, 0x31, 0xc9,                                      // xor %r9d,%r9d
    0x6a, 0x00,                                            // push $0
};
// After the call: the stack protector's check, the callee's value returned.
const std::vector<uint8_t> kEpilogue = {
    0x48, 0x83, 0xc4, 0x20,                                // add $0x20,%rsp
    0x48, 0x8b, 0x54, 0x24, 0x28,                          // mov 0x28(%rsp),%rdx
    0x64, 0x48, 0x2b, 0x14, 0x25, 0x28, 0x00, 0x00, 0x00,  // sub %fs:0x28,%rdx
    0x75, 0x05,                                            // jne (the call below)
    0x48, 0x83, 0xc4, 0x38,                                // add $0x38,%rsp
    0xc3,                                                  // ret
    0xe8, 0x00, 0x00, 0x00, 0x00,                          // call __stack_chk_fail
};
const std::vector<uint8_t> kPushEntry = {0x41, 0x57, 0x41, 0x56};  // push %r15; push %r14

Image forwarding_op(const std::vector<uint8_t>& prologue = kPrologue,
                    const std::vector<uint8_t>& epilogue = kEpilogue,
                    const std::vector<uint8_t>& callee = kPushEntry) {
  Image img;
  const uint64_t call_at = kFunc + prologue.size();
  img.put(kFunc, cat({prologue, call_to(call_at, kCallee), epilogue}));
  img.put(kCallee, callee);
  return img;
}

TEST(ProbePlace, AForwardingOpIsProbedOnItsCallWithEveryArgumentFollowed) {
  const Image img = forwarding_op();
  const ProbePlace p = place_op_probe(img.reader(), kFunc, kArgs1to7);
  ASSERT_TRUE(p.moved) << p.why;
  EXPECT_EQ(p.entry, kFunc + kPrologue.size());  // the call
  EXPECT_EQ(p.ret, kCallee);
  EXPECT_EQ(p.ret_sp, -8);
  // 0x38 of frame and four pushes: the entry's stack pointer is sp + 0x58.
  EXPECT_EQ(p.args[1].reg, 7);  // rdi untouched
  EXPECT_EQ(p.args[2].reg, -1);
  EXPECT_EQ(p.args[2].sp_off, 0x58 - 0x38 + 0x10);  // buf at 0x10(%rsp) of the frame
  EXPECT_EQ(p.args[3].sp_off, 0x58 - 0x38 + 0x18);  // len
  EXPECT_EQ(p.args[4].sp_off, 0x58 - 0x38 + 0x08);  // desc
  EXPECT_EQ(p.args[5].reg, 8);                      // r8 untouched
  EXPECT_EQ(p.args[6].reg, -1);
  EXPECT_EQ(p.args[6].sp_off, 8);         // pushed, then one more push
  EXPECT_EQ(p.args[7].sp_off, 0x58 + 8);  // the caller's first stack argument
  for (int n = 1; n <= 7; ++n) EXPECT_TRUE(p.args[n].known) << n;
  EXPECT_FALSE(p.args[8].known);  // not asked for
}

TEST(ProbePlace, AnArgumentCopiedToAnotherRegisterIsFoundThere) {
  // mov %rdi,%rax; mov 0x8(%rdi),%rdi: the endpoint lives on in rax.
  const std::vector<uint8_t> pro = {0x48, 0x83, 0xec, 0x08, 0x48, 0x89,
                                    0xf8, 0x48, 0x8b, 0x7f, 0x08};
  const Image img = forwarding_op(pro, {0x48, 0x83, 0xc4, 0x08, 0xc3});
  const ProbePlace p = place_op_probe(img.reader(), kFunc, 1u << 1);
  ASSERT_TRUE(p.moved) << p.why;
  EXPECT_EQ(p.args[1].reg, 0);
}

TEST(ProbePlace, AnEndbr64IsSteppedOverInTheOpAndItsCallee) {
  const std::vector<uint8_t> endbr = {0xf3, 0x0f, 0x1e, 0xfa};
  const Image img = forwarding_op(cat({endbr, kPrologue}), kEpilogue, cat({endbr, kPushEntry}));
  const ProbePlace p = place_op_probe(img.reader(), kFunc, kArgs1to7);
  ASSERT_TRUE(p.moved) << p.why;
  EXPECT_EQ(p.entry, kFunc + 4 + kPrologue.size());
  EXPECT_EQ(p.ret, kCallee + 4);
}

TEST(ProbePlace, AnOpWhoseFirstInstructionIsEmulatedStays) {
  const Image img = forwarding_op(cat({{0x41, 0x55}, kPrologue}));  // push %r13 first
  const ProbePlace p = place_op_probe(img.reader(), kFunc, kArgs1to7);
  EXPECT_FALSE(p.moved);
  EXPECT_EQ(p.entry, kFunc);
  EXPECT_EQ(p.ret, kFunc);
  EXPECT_NE(p.why.find("emulated"), std::string::npos) << p.why;
}

TEST(ProbePlace, WhatTheReaderCannotFollowLeavesTheSiteOnItsEntry) {
  struct Case {
    const char* what;
    Image img;
    uint32_t needed;
    const char* why;
  };
  const std::vector<uint8_t> sub = {0x48, 0x83, 0xec, 0x08};
  const std::vector<uint8_t> ret8 = {0x48, 0x83, 0xc4, 0x08, 0xc3};
  const Case cases[] = {
      {"a store through another register", forwarding_op(cat({sub, {0x48, 0x89, 0x07}}), ret8),
       1u << 1, "store"},
      {"a store into the caller's frame",
       forwarding_op(cat({sub, {0x48, 0x89, 0x44, 0x24, 0x10}}), ret8), 1u << 1, "store"},
      {"the context overwritten", forwarding_op(cat({sub, {0x45, 0x31, 0xc9}}), ret8), 1u << 6,
       "argument 6"},
      {"a branch before the call", forwarding_op(cat({sub, {0x74, 0x00}}), ret8), 1u << 1,
       "branch"},
      {"an indirect call", forwarding_op(cat({sub, {0xff, 0x57, 0x08}}), ret8), 1u << 1,
       "indirect"},
      {"an instruction it does not know (SSE)",
       forwarding_op(cat({sub, {0x0f, 0x11, 0x04, 0x24}}), ret8), 1u << 1, "does not follow"},
      {"the value changed after the call",
       forwarding_op(sub, {0x48, 0x83, 0xc4, 0x08, 0xb8, 0x00, 0x00, 0x00, 0x00, 0xc3}), 1u << 1,
       "callee's value"},
      {"rax popped after the call", forwarding_op(sub, {0x58, 0xc3}), 1u << 1, "callee's value"},
      {"a callee that is single-stepped", forwarding_op(sub, ret8, {0x48, 0x83, 0xec, 0x08}),
       1u << 1, "callee's first instruction"},
  };
  for (const Case& c : cases) {
    const ProbePlace p = place_op_probe(c.img.reader(), kFunc, c.needed);
    EXPECT_FALSE(p.moved) << c.what;
    EXPECT_EQ(p.entry, kFunc) << c.what;
    EXPECT_EQ(p.ret, kFunc) << c.what;
    EXPECT_NE(p.why.find(c.why), std::string::npos) << c.what << ": " << p.why;
  }
}

TEST(ProbePlace, TheInstructionsTheKernelEmulates) {
  const std::vector<std::vector<uint8_t>> emulated = {{0x55},
                                                      {0x41, 0x57},
                                                      {0x90},
                                                      {0xe8, 0, 0, 0, 0},
                                                      {0xeb, 0},
                                                      {0x74, 0},
                                                      {0x0f, 0x85, 0, 0, 0, 0},
                                                      {0x0f, 0x1f, 0x44, 0x00, 0x00}};
  for (const auto& b : emulated) EXPECT_TRUE(uprobe_emulated(b.data(), b.size())) << int(b[0]);
  const std::vector<std::vector<uint8_t>> stepped = {{0x48, 0x83, 0xec, 0x38},
                                                     {0xf3, 0x0f, 0x1e, 0xfa},
                                                     {0x48, 0x89, 0xf8},
                                                     {0xc3},
                                                     {0x0f, 0x1f, 0x40, 0x00}};
  for (const auto& b : stepped) EXPECT_FALSE(uprobe_emulated(b.data(), b.size())) << int(b[0]);
}

// The op sites of this machine's tcp;ofi_rxm and shm, as `record --uprobes`
// places them: each moved one's entry is a call to its return probe's
// callee (past an endbr64), whose first instruction is a push, and every
// argument its programs read is placed; shm's send (`sub $N,%rsp` first on
// Debian's build) is moved, or says why not.
TEST(ProbePlace, TheRealProvidersOpsArePlacedOnTheirCalls) {
  const OptableResult r = probe_optables({"tcp;ofi_rxm", "shm"}, 20000);
  size_t ops = 0, moved = 0;
  for (const OpSite& s : r.sites) {
    if (s.role != FT_UP_ROLE_OP) continue;
    ++ops;
    const uint32_t needed = op_args_read(s);
    const ProbePlace p = place_op_probe(s.path, s.offset, needed);
    if (!p.moved) {
      if (p.why.find("emulated") == std::string::npos)
        std::printf("stays: %s: %s\n", s.what().c_str(), p.why.c_str());
      continue;
    }
    ++moved;
    const int fd = ::open(s.path.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    uint8_t call[5] = {}, entry[2] = {};
    ASSERT_EQ(::pread(fd, call, 5, static_cast<off_t>(p.entry)), 5);
    ASSERT_EQ(::pread(fd, entry, 2, static_cast<off_t>(p.ret)), 2);
    ::close(fd);
    EXPECT_EQ(call[0], 0xe8) << s.what();
    int32_t rel = 0;
    std::memcpy(&rel, call + 1, 4);
    const uint64_t target = p.entry + 5 + static_cast<int64_t>(rel);
    EXPECT_TRUE(target == p.ret || target + 4 == p.ret) << s.what();
    EXPECT_TRUE(uprobe_emulated(entry, 2) && entry[0] != 0xe8) << s.what();
    for (int n = 1; n <= kProbeArgs; ++n)
      if (needed & (1u << n)) {
        EXPECT_TRUE(p.args[n].known) << s.what() << " argument " << n;
      }
  }
  std::printf("%zu of %zu op sites probed on their calls\n", moved, ops);
  const OpSite* send = nullptr;
  for (const OpSite& s : r.sites)
    if (s.has_provider("shm") && s.table == "msg" && s.op == "send") send = &s;
  ASSERT_NE(send, nullptr);
  const int fd = ::open(send->path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  uint8_t first[8] = {};
  ASSERT_GT(
      ::pread(fd, first, sizeof(first), static_cast<off_t>(probe_offset(send->path, send->offset))),
      0);
  ::close(fd);
  if (uprobe_emulated(first, sizeof(first)))
    GTEST_SKIP() << "shm's send starts with an emulated instruction";
  const ProbePlace p = place_op_probe(send->path, send->offset, op_args_read(*send));
  EXPECT_TRUE(p.moved) << p.why;
}

}  // namespace
}  // namespace fabtrace
