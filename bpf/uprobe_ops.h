// SPDX-License-Identifier: (BSD-3-Clause OR GPL-2.0-only)
/* The uprobe-assisted mode (`fabtrace record --uprobes`): what uprobe_ops.bpf.c
 * and the collector (userspace/record/uprobes/) share, libbpf-tools style: the maps'
 * keys and values and the attach cookie that tells one program which op it
 * probes and where that op keeps its context and its length.
 *
 * The probes sit on the provider functions a process reaches through
 * libfabric's op tables (fi_send -> ep->msg->send, fi_cq_read ->
 * cq->ops->read, fi_cq_open -> domain->ops->cq_open). The collector finds them
 * by opening the provider itself (userspace/record/uprobes/optable_probe.*).
 *
 * C, not C++: clang -target bpf compiles it too. */
#ifndef FABTRACE_UPROBE_OPS_H
#define FABTRACE_UPROBE_OPS_H

#include "fabtrace_events.h"

#define FT_UP_MAX_SITES 256     /* attach points (functions) of one session */
#define FT_UP_MAX_PENDING 65536 /* ops issued, their completion not seen yet (LRU) */
#define FT_UP_MAX_CQS 4096      /* the applications' CQs */
/* (process, op, endpoint, peer) rows: the map's most; the collector sizes it
 * down to a memory budget on machines with many CPUs (a per-CPU value of
 * 352 bytes per row and CPU, allocated as rows appear: BPF_F_NO_PREALLOC). */
#define FT_UP_MAX_STATS 65536
#define FT_UP_MAX_ADDRS 65536 /* AV entries and endpoint names (struct ft_up_addr) */
#define FT_UP_ADDR_MAX 112    /* bytes kept of one address (sockaddr_in6: 28; shm's names) */
#define FT_UP_INSERT_MAX 64   /* entries of one AV insert whose addresses are kept */
#define FT_UP_WALK_MAX 32     /* entries of one CQ read paired in the kernel */
/* An op call still in flight after 1 s: its return was missed. Not shorter: a
 * thread preempted inside an op (a loaded node) must still hide the op's
 * nested calls (1 ms counted sockets' inner recvmsg as an op of its own about
 * once in 7 runs of Uprobes.PingpongSocketsMsg beside a build). */
#define FT_UP_NESTED_MAX_NS 1000000000ULL
#define FT_UP_MAX_IOV 4 /* iovec entries summed for an op's length */

/* Where an op site's arguments are at its entry probe, when that probe is
 * not on the function's first instruction (x86-64: a `sub` the kernel would
 * single-step there; the probe on the `call` the op forwards to, its return
 * probe on the callee's entry: userspace/record/uprobes/probe_place.h). */
#define FT_UP_ARGS 16
struct ft_up_args {
  __s32 ret_sp; /* the probe's sp + ret_sp: the stack pointer its return probe's call had */
  __u32 moved;  /* 0: the probe is on the first instruction (arguments as the ABI has them) */
  /* [n]: argument n in register reg[n] - 1 (x86 numbering: 0 rax, 1 rcx,
   * 2 rdx, 3 rbx, 5 rbp, 6 rsi, 7 rdi, 8 r8 .. 15 r15), or with reg[n] 0 in
   * memory at the probe's sp + off[n] */
  __u8 reg[FT_UP_ARGS + 1];
  __u8 pad[7];
  __s16 off[FT_UP_ARGS + 1];
  __u16 pad2[7];
};

/* An op probed at the entry of the function it forwards to (where the
 * kernel makes uprobe_multi links: bpf_get_func_ip gives the probe's
 * address): one probe there serves the op's entry and its return, and tells
 * the op by its call's return address. Key: the callee's probe (its cookie:
 * the first of the sites probed there) and the return address's distance
 * from the probe (the same in every process: one text segment); value: the
 * op site's cookie. */
struct ft_up_caller_key {
  __u64 callee;
  __s64 delta;
};

/* What a probed function is. */
enum ft_up_role {
  FT_UP_ROLE_OP = 1,        /* a data-path op (ep->msg->send, ep->tagged->recv, ...) */
  FT_UP_ROLE_CQ_READ = 2,   /* cq->ops->read / readfrom: entry and return */
  FT_UP_ROLE_CQ_OPEN = 3,   /* domain->ops->cq_open: entry and return */
  FT_UP_ROLE_EP_BIND = 4,   /* ep->fid.ops->bind: which CQ (and AV) an endpoint uses */
  FT_UP_ROLE_AV_INSERT = 5, /* av->ops->insert: entry and return: fi_addr_t -> address */
  FT_UP_ROLE_GETNAME = 6,   /* ep->cm->getname: entry and return: endpoint -> its address */
  FT_UP_ROLE_EP_OPEN = 7,   /* domain->ops->endpoint: entry and return: a MSG endpoint's peer */
  FT_UP_ROLE_CONNECT = 8    /* ep->cm->connect: entry and return: the peer it connects to */
};
#define FT_UP_ROLE_LAST FT_UP_ROLE_CONNECT

/* Which side of an endpoint an op is on (the CQ it completes to). */
enum ft_up_class { FT_UP_TX = 0, FT_UP_RX = 1 };

/* Where an op's context pointer is. x86_64 passes arguments 7 and 8 on the stack. */
enum ft_up_ctx {
  FT_UP_CTX_NONE = 0, /* inject: no completion */
  FT_UP_CTX_ARG6 = 1,
  FT_UP_CTX_ARG7 = 2,
  FT_UP_CTX_ARG8 = 3,
  FT_UP_CTX_MSG = 4,  /* struct fi_msg *, argument 2: ->context */
  FT_UP_CTX_TMSG = 5, /* struct fi_msg_tagged *, argument 2: ->context */
  FT_UP_CTX_RMSG = 6, /* struct fi_msg_rma *, argument 2: ->context */
  FT_UP_CTX_AMSG = 7, /* struct fi_msg_atomic *, argument 2: ->context */
  /* The same, for the atomic msg ops whose flags are not argument 3:
   * fetch_atomicmsg(ep, msg, resultv, desc, count, flags) and
   * compare_atomicmsg(ep, msg, comparev, desc, count, resultv, desc, count, flags). */
  FT_UP_CTX_AMSG_FLAGS6 = 8,
  FT_UP_CTX_AMSG_FLAGS9 = 9
};
/* Argument n (9..16) on the stack: RMA writedata keeps its context in argument
 * 9, the atomics in 10, 12, 13, 14 or 16 (rdma/fi_atomic.h). */
#define FT_UP_CTX_STACK(n) (0x10 | (n))
#define FT_UP_CTX_IS_STACK(loc) (((loc)&0xf0) == 0x10)
#define FT_UP_CTX_STACK_ARG(loc) ((loc)&0x0f ? (loc)&0x0f : 16)

/* Where an op's peer (its fi_addr_t: dest_addr, src_addr, msg->addr) is:
 * argument n (2..16, registers or the stack as for the context), or the
 * message struct's (argument 2) ->addr; none for an op without one. */
#define FT_UP_PEER_NONE 0
#define FT_UP_PEER_ARG(n) (n)
#define FT_UP_PEER_MSG 0x20
/* struct fi_msg, fi_msg_tagged, fi_msg_rma, fi_msg_atomic: ->addr after
 * msg_iov, desc and iov_count (rdma/fi_endpoint.h, fi_tagged.h, fi_rma.h,
 * fi_atomic.h) on LP64. */
#define FT_UP_MSG_ADDR_OFF 24
/* fi_addr_t FI_ADDR_UNSPEC (rdma/fabric.h): a receive posted for any source;
 * also FI_ADDR_NOTAVAIL, an AV entry the provider did not insert. */
#define FT_UP_ADDR_UNSPEC (~0ULL)
/* struct fid's fclass (rdma/fabric.h): a bind's object is an AV. */
#define FT_UP_FI_CLASS_AV 11

/* Where an op's length is. */
enum ft_up_len {
  FT_UP_LEN_NONE = 0,
  FT_UP_LEN_ARG3 = 1, /* (ep, buf, len, ...) */
  FT_UP_LEN_IOV = 2,  /* (ep, iov, desc, count, ...) */
  FT_UP_LEN_MSG = 3,  /* (ep, msg, flags): msg->msg_iov, msg->iov_count */
  /* Atomics: bytes = elements x the size of the datatype (enum fi_datatype),
   * which is argument FT_UP_LEN_DT_ARG of the length's place, or the message's
   * ->datatype for FT_UP_LEN_AMSG. */
  FT_UP_LEN_ACOUNT = 4, /* (ep, buf, count, ...): count elements */
  FT_UP_LEN_AIOC = 5,   /* (ep, ioc, desc, count, ...): struct fi_ioc counts */
  FT_UP_LEN_AMSG = 6    /* (ep, msg, ...): struct fi_msg_atomic's fi_ioc counts */
};
/* An atomic's length place with its datatype's argument (8..14) in the high
 * nibble (the cookie keeps 8 bits for the length's place). */
#define FT_UP_LEN_ATOMIC(kind, dt_arg) ((kind) | ((dt_arg) << 4))
#define FT_UP_LEN_KIND(len) ((len)&0x0f)
#define FT_UP_LEN_DT_ARG(len) (((len) >> 4) & 0x0f)

/* struct fi_msg / fi_msg_tagged (rdma/fi_endpoint.h, fi_tagged.h) on LP64. */
#define FT_UP_MSG_IOV_OFF 0
#define FT_UP_MSG_COUNT_OFF 16
#define FT_UP_MSG_CTX_OFF 32
#define FT_UP_TMSG_CTX_OFF 48
/* struct fi_msg_rma (rdma/fi_rma.h): msg_iov and iov_count where fi_msg has them. */
#define FT_UP_RMSG_CTX_OFF 48
/* struct fi_msg_atomic (rdma/fi_atomic.h): msg_iov (struct fi_ioc: addr, count,
 * laid out as an iovec) and iov_count where fi_msg has them. */
#define FT_UP_AMSG_DT_OFF 48
#define FT_UP_AMSG_CTX_OFF 56
/* struct fi_cq_attr (rdma/fi_eq.h): size, flags, format. */
#define FT_UP_CQ_ATTR_FORMAT_OFF 16

/* The attach cookie: site index, role, OpKind (common/op_kinds.h), where the
 * context, the length and the peer are. */
#define FT_UP_COOKIE(site, role, op, ctx, len, cls, peer)                               \
  ((__u64)(site) | ((__u64)(role) << 16) | ((__u64)(op) << 24) | ((__u64)(ctx) << 32) | \
   ((__u64)(len) << 40) | ((__u64)(cls) << 48) | ((__u64)(peer) << 56))
#define FT_UP_SITE(c) ((__u32)((c)&0xffff))
#define FT_UP_ROLE(c) ((__u32)(((c) >> 16) & 0xff))
#define FT_UP_OP(c) ((__u32)(((c) >> 24) & 0xff))
#define FT_UP_CTXLOC(c) ((__u32)(((c) >> 32) & 0xff))
#define FT_UP_LENLOC(c) ((__u32)(((c) >> 40) & 0xff))
#define FT_UP_CLASS(c) ((__u32)(((c) >> 48) & 0xff))
#define FT_UP_PEERLOC(c) ((__u32)(((c) >> 56) & 0xff))

/* The rows of a process's statistics besides its ops (OpKind < 64). */
#define FT_UP_OP_POLLS 200 /* CQ reads of the application's CQs */

/* libfabric values the programs test (rdma/fabric.h). */
#define FT_UP_FI_RECV (1ULL << 10)
#define FT_UP_FI_SEND (1ULL << 11)
#define FT_UP_FI_TRANSMIT FT_UP_FI_SEND
#define FT_UP_FI_REMOTE_READ (1ULL << 12)
#define FT_UP_FI_REMOTE_WRITE (1ULL << 13)
#define FT_UP_FI_MULTI_RECV (1ULL << 16)
#define FT_UP_FI_PEEK (1ULL << 19)
#define FT_UP_FI_TRIGGER (1ULL << 20)
#define FT_UP_FI_COMPLETION (1ULL << 24)
#define FT_UP_FI_INJECT (1ULL << 25)
#define FT_UP_FI_CLAIM (1ULL << 59)
#define FT_UP_FI_SELECTIVE_COMPLETION (1ULL << 59) /* a bind's flag (an op's: FI_CLAIM) */
/* An op whose context reaches the provider unchanged in the preload (its
 * kKeepContextFlags): counted untimed there, so here too. */
#define FT_UP_KEEP_CONTEXT_FLAGS \
  (FT_UP_FI_TRIGGER | FT_UP_FI_PEEK | FT_UP_FI_CLAIM | FT_UP_FI_MULTI_RECV)
#define FT_UP_FI_EAGAIN 11 /* rdma/fi_errno.h FI_EAGAIN (= EAGAIN) */

/* The size of one element of enum fi_datatype (rdma/fi_domain.h): FI_INT8 ..
 * FI_LONG_DOUBLE_COMPLEX, FI_INT128, FI_UINT128; 0 for another value. */
static inline __u64 ft_up_datatype_size(__u32 dt) {
  switch (dt) {
    case 0: /* FI_INT8 */
    case 1: /* FI_UINT8 */
      return 1;
    case 2: /* FI_INT16 */
    case 3: /* FI_UINT16 */
      return 2;
    case 4: /* FI_INT32 */
    case 5: /* FI_UINT32 */
    case 8: /* FI_FLOAT */
      return 4;
    case 6:  /* FI_INT64 */
    case 7:  /* FI_UINT64 */
    case 9:  /* FI_DOUBLE */
    case 10: /* FI_FLOAT_COMPLEX */
      return 8;
    case 11: /* FI_DOUBLE_COMPLEX */
    case 12: /* FI_LONG_DOUBLE (x86_64: 16 bytes of storage) */
    case 14: /* FI_INT128 */
    case 15: /* FI_UINT128 */
      return 16;
    case 13: /* FI_LONG_DOUBLE_COMPLEX */
      return 32;
    default:
      return 0;
  }
}

/* An op issued and not completed yet (key: process, context pointer); also the
 * key of the application's CQs and endpoints (process, object pointer). */
struct ft_up_key {
  __u32 tgid;
  __u32 pad;
  __u64 ptr;
};

/* An op issued with a NULL context (allowed where the provider does not ask for
 * FI_CONTEXT: fi_pingpong does so on tcp;ofi_rxm and shm) cannot be found by its
 * context: it is queued on the CQ its endpoint side is bound to, and paired with
 * the next NULL-context completion of that CQ and side, in order. */
struct ft_up_fifo_key {
  __u32 tgid;
  __u32 cls; /* enum ft_up_class */
  __u64 cq;
};
struct ft_up_fifo {
  __u64 head; /* next sequence number to complete */
  __u64 tail; /* next sequence number to issue */
};
struct ft_up_seq_key {
  __u32 tgid;
  __u32 cls;
  __u64 cq;
  __u64 seq;
};

/* An op call in flight (key: tid), from its entry to its return: only an op the
 * provider accepted (returned 0) waits for a completion, and only one that
 * asked for one (not `untimed`). Every op site has a return probe: an inject
 * too, so that its refusals are told from its accepted calls and the calls it
 * makes inside (sockets' inject sends through its own sendmsg) are not ops. */
struct ft_up_call {
  __u64 sp; /* first in each in-flight call: the stack pointer at its entry */
  __u64 start, bytes, ctx, ep, peer;
  __u32 op, site, cls;
  __u32 untimed; /* 1: no completion will come (struct ft_up_stats' untimed) */
  __u32 slot;    /* where its context's record went: 0 up_pending, n: up_dup seq n - 1 */
  __u32 moved;   /* probed on the call it forwards to: its callee's entry has its sp */
};

/* An application endpoint (key: process, endpoint): its CQs, from its binds
 * (a CQ bound without FI_TRANSMIT or FI_RECV serves both sides) or learnt
 * from its memory; whether each side's bind asked for
 * FI_SELECTIVE_COMPLETION; its default op flags (the info's tx_attr and
 * rx_attr op_flags at its open), which decide with the bind whether an op
 * without a flags argument gets a completion, as the preload decides. */
struct ft_up_ep {
  __u64 cq[2];       /* [FT_UP_TX], [FT_UP_RX] */
  __u64 op_flags[2]; /* [side]: FT_UP_FI_COMPLETION, FT_UP_FI_MULTI_RECV of its info */
  __u32 selective;   /* 1 << side: bound with FI_SELECTIVE_COMPLETION */
  __u32 bound;       /* 1 << side: a bind of that side to a CQ was seen (or learnt) */
  __u32 opened;      /* 1: its open was seen (every bind of it too) */
  __u32 pad;
};
/* An op waiting for its completion (up_pending: the oldest op issued with
 * its context). A program may issue another op with a context whose earlier
 * op is still outstanding (a window of receives posted with one context, as
 * fabtests' bandwidth tests do): each later one waits in up_dup under (process,
 * context, seq), seq from dup_head to dup_tail, and a completion with that
 * context ends the oldest, whose place the next one takes. */
struct ft_up_pending {
  __u64 start; /* CLOCK_MONOTONIC ns at the op's entry */
  __u64 bytes;
  __u64 ep, peer; /* its statistics row's */
  __u32 op;
  __u32 site;
  __u32 rx; /* a receive: its completion is sized by its CQ entry's len, where it has one */
  __u32 dup_head, dup_tail; /* up_pending's entry only: the ops waiting behind it */
  __u32 pad;
};
struct ft_up_dup_key {
  __u32 tgid;
  __u32 seq;
  __u64 ptr;
};

/* An application CQ (key: process, CQ pointer), from its provider's cq_open, or
 * learnt from the provider's memory (a CQ opened before the session: its first
 * outermost read, struct ft_up_layout). */
struct ft_up_cq {
  __u32 entry_size; /* bytes of one entry of its format; 0: not known yet (an entry
                     * made by an endpoint learnt before its CQ's first read) */
  __u32 format;     /* enum fi_cq_format */
  __u32 sides;      /* endpoint sides bound to it: 1 << FT_UP_TX | 1 << FT_UP_RX */
  __u32 learnt;     /* 1: opened before the session (no cq_open seen) */
  /* Its polls (struct ft_uprobe_cq): when opened, the polls, the latest
   * poll's stamp, the gap classes, the longest gap and when it ended. */
  __u64 opened, polls, last;
  __u64 gaps[FT_UP_GAP_CLASSES];
  __u64 max_gap, max_gap_end;
};
/* The poll gap classes' upper edges (ns), as the preload's (preload/runtime.cpp). */
#define FT_UP_GAP_EDGE_NS(i) \
  ((i) == 0   ? 10000ULL     \
   : (i) == 1 ? 100000ULL    \
   : (i) == 2 ? 1000000ULL   \
   : (i) == 3 ? 10000000ULL  \
              : 100000000ULL)

/* Where a provider's CQ and endpoint keep what a CQ opened before the session
 * cannot tell the programs otherwise (userspace/record/uprobes/optable_probe.cpp's
 * helper finds it by opening CQs of each format and an endpoint bound to two
 * CQs, and comparing their memory), one per provider (a session's providers
 * may differ: libfabric's utility objects, sockets' own), picked by the
 * probed site (ft_site_layout). The CQ's format, by one of:
 * - FT_UP_CQ_FMT_FN: the CQ keeps one function per entry format (the utility
 *   CQ's read_entry, sockets' report_completion), a code pointer of the
 *   library: the format is the one whose function lies at the same distance
 *   from the probed CQ read function as in the library file;
 * - FT_UP_CQ_FMT_WORD: the CQ keeps the format itself (its fi_cq_attr), a
 *   32-bit word.
 * The endpoint's transmit and receive CQs: a word of the endpoint (the
 * utility endpoint), or one reached through up to FT_UP_EP_HOPS_MAX pointers
 * (sockets: ep->attr->tx_ctx->comp.send_cq). */
#define FT_UP_MAX_LAYOUTS 8
#define FT_UP_EP_HOPS_MAX 2
enum ft_up_cq_fmt { FT_UP_CQ_FMT_NONE = 0, FT_UP_CQ_FMT_FN = 1, FT_UP_CQ_FMT_WORD = 2 };
struct ft_up_layout {
  __u32 cq_fmt_kind; /* enum ft_up_cq_fmt */
  __u32 pad;
  __u64 cq_fmt_off; /* offset in the CQ object of the per-format function or word */
  __u64 fmt_fn[5];  /* FN: [format]: that function's file offset (0: unknown format) */
  /* [FT_UP_TX], [FT_UP_RX]: the pointers followed (ep_cq_hops of them, each
   * at its offset), then the offset of the CQ pointer */
  __u64 ep_cq_path[2][FT_UP_EP_HOPS_MAX + 1];
  __u32 ep_cq_hops[2];
};

/* A cq_open in flight (key: tid). */
struct ft_up_open {
  __u64 sp;     /* the stack pointer at entry: its own return, not a nested one's */
  __u64 cq_out; /* struct fid_cq ** */
  __u32 format;
  __u32 pad;
};

/* An application CQ read in flight (key: tid). */
struct ft_up_poll {
  __u64 sp, cq, buf;
  __u32 entry_size;
  __u32 sides;
  __u32 learnt;   /* the CQ was opened before the session */
  __u32 blocking; /* fi_cq_sread / sreadfrom: stamped at its entry */
};

/* Statistics row key: (process, op kind, endpoint, peer): the endpoint is the
 * op's first argument (the application's struct fid_ep *), the peer its
 * fi_addr_t (FT_UP_ADDR_UNSPEC: a receive from any source; 0 for an op without
 * one). The polls row (op FT_UP_OP_POLLS) has endpoint and peer 0. */
struct ft_up_stat_key {
  __u32 tgid;
  __u32 op;
  __u64 ep;
  __u64 peer;
  __u32 size_class; /* ft_up_size_class of the row's bytes (0 in the polls row) */
  /* 1: a receive's row sized as posted: its calls, refusals and pending ops,
   * and its completions whose CQ entry has no length (FI_CQ_FORMAT_CONTEXT);
   * 0: sized as sent, or as arrived (the CQ entry's len), as the preload's */
  __u32 posted;
};

/* What an address is (the collector formats it as the provider's straddr
 * would, from the site's address format): AV entries (key: process, AV,
 * fi_addr_t), endpoint names (key ft_up_key: process, endpoint). */
struct ft_up_av_key {
  __u32 tgid;
  __u32 pad;
  __u64 av;
  __u64 fi_addr;
};
struct ft_up_addr {
  __u32 len;  /* bytes of the address (kept: at most FT_UP_ADDR_MAX) */
  __u32 site; /* the probe that saw it: its provider's address format */
  __u8 bytes[FT_UP_ADDR_MAX];
};

/* An AV insert or a getname in flight (key: tid). */
struct ft_up_name_call {
  __u64 sp;
  __u64 obj;   /* the AV; the endpoint */
  __u64 addr;  /* the addresses inserted; getname's buffer */
  __u64 count; /* entries inserted; getname: its size_t *addrlen */
  __u64 out;   /* insert's fi_addr_t array */
  /* connect: the kernel socket the call moved to SYN_SENT (ft_up_sk_state),
   * whose local address the connect's return reads: the endpoint's own. */
  __u64 sk;
  __u32 site, role; /* role: enum ft_up_role of the probe */
};

/* A connected (FI_EP_MSG) endpoint (key ft_up_key: process, endpoint), from
 * the endpoint open that made it and the connect it was given: its one peer
 * (the info's dest_addr: the connection request's source on the passive side,
 * what fi_getinfo resolved on the active side; replaced by fi_connect's
 * address) and its own address as the info gave it (src_addr). A length of 0:
 * not known. Its own map, not up_ep_names: that one holds what the
 * endpoint's getname said, which wins over src_addr where both are known. */
struct ft_up_conn {
  __u32 addr_format; /* the info's (enum fi_addr_format); the site's for a connect
                      * of an endpoint opened before the session */
  __u32 site;        /* the probe that made the entry */
  __u32 peer_len, local_len;
  __u8 peer[FT_UP_ADDR_MAX];
  __u8 local[FT_UP_ADDR_MAX];
};
/* An endpoint open in flight (key: tid): what the info said, for its return:
 * every endpoint's default op flags, a MSG endpoint's addresses. */
struct ft_up_conn_call {
  __u64 sp;
  __u64 ep_out;      /* struct fid_ep ** */
  __u64 op_flags[2]; /* [side] (struct ft_up_ep) */
  __u32 msg;         /* an FI_EP_MSG endpoint: `conn` holds its addresses */
  __u32 pad;
  struct ft_up_conn conn;
};
/* struct fi_info (rdma/fabric.h) on LP64: what an endpoint open reads of it. */
#define FT_UP_INFO_ADDR_FORMAT_OFF 24
#define FT_UP_INFO_SRC_ADDRLEN_OFF 32
#define FT_UP_INFO_DEST_ADDRLEN_OFF 40
#define FT_UP_INFO_SRC_ADDR_OFF 48
#define FT_UP_INFO_DEST_ADDR_OFF 56
#define FT_UP_INFO_TX_ATTR_OFF 72
#define FT_UP_INFO_RX_ATTR_OFF 80
#define FT_UP_INFO_EP_ATTR_OFF 88
/* struct fi_tx_attr and fi_rx_attr: caps, mode, then op_flags. */
#define FT_UP_ATTR_OP_FLAGS_OFF 16
/* struct fi_ep_attr starts with its type (enum fi_ep_type); FI_EP_MSG's value. */
#define FT_UP_FI_EP_MSG 1
/* Address families a connect's sockaddr may have (the preload names the peer
 * from it only then): AF_INET, AF_INET6. */
#define FT_UP_AF_INET 2
#define FT_UP_AF_INET6 10
/* enum of include/net/tcp_states.h */
#define FT_UP_TCP_SYN_SENT 2
/* libfabric's enum fi_addr_format values whose addresses are sockaddrs. */
#define FT_UP_FI_SOCKADDR 1
#define FT_UP_FI_SOCKADDR_IN6 3

/* Events the programs could not keep, in up_lost (per CPU). */
enum ft_up_lost {
  FT_UP_LOST_STATS = 0,     /* a statistics row not created: the map was full */
  FT_UP_LOST_ADDRS = 1,     /* an AV entry or endpoint name not kept: full */
  FT_UP_LOST_QUOTA = 2,     /* a statistics row not created: its process holds its quota */
  FT_UP_LOST_OBJ_QUOTA = 3, /* a CQ, endpoint or address not kept: its process holds its share */
  FT_UP_LOST_INFLIGHT_QUOTA = 4, /* an op not timed: its process holds its share of ops in flight */
  FT_UP_LOST_KINDS = 5
};

/* A process's share of the statistics rows (up_quota, key: tgid): the rows it
 * holds and the updates of new rows refused over its quota (the collector's
 * ft_up_rows_per_proc), so that one process cannot take the rows of all. The
 * same for the set-up maps, whose entries a process makes from its own
 * pointers and never frees while the session runs: the entries it made in the
 * CQ and endpoint maps (up_cqs, up_eps, up_ep_av, up_fifo: `objs`, at most
 * ft_up_objs_per_proc) and in the address maps (up_av_addrs, up_ep_names,
 * up_ep_conns: `addrs`, at most ft_up_addrs_per_proc), and the new entries
 * refused over either share (`objs_over`). And its ops in flight (up_pending,
 * up_dup, up_seq_pending: `inflight`, at most FT_UP_INFLIGHT_PER_PROC), so
 * that a process issuing ops that never complete cannot push the others' out
 * of those LRU maps, and the ops refused a place over that share
 * (`inflight_over`: not timed, their completions counted unmatched). An entry
 * the LRU evicts is not given back: `inflight` then errs high, which only
 * happens once the maps hold more than the shares of 8 processes. */
struct ft_up_quota {
  __u64 rows;
  __u64 over;
  __u64 objs;
  __u64 addrs;
  __u64 objs_over;
  __u64 inflight;
  __u64 inflight_over;
};
/* The shares of the set-up maps: a sixteenth of each, as for the rows. */
#define FT_UP_OBJS_PER_PROC (FT_UP_MAX_CQS / 16)
#define FT_UP_ADDRS_PER_PROC (FT_UP_MAX_ADDRS / 16)
/* Ops in flight: an eighth of one map's entries, across the three. */
#define FT_UP_INFLIGHT_PER_PROC (FT_UP_MAX_PENDING / 8)
#define FT_UP_MAX_PROCS 4096 /* processes with rows (LRU: the least recent is forgotten) */

/* floor(log2(x)), 0 for 0 and 1, without a loop the verifier must unroll on
 * data (BPF has no count-leading-zeros instruction), and without a branch:
 * each step's "are the upper w bits of the w*2 still searched non-zero" is
 * arithmetic ((t + 2^w - 1) >> w, t < 2^w), so the verifier sees one path
 * with an unknown result, not one path per result (a branch per step made it
 * walk a CQ read's 32 entries times 2^5 paths each, past its instruction
 * budget). */
static inline __u32 ft_up_log2(__u64 x) {
  __u32 b = 0;
  for (int i = 5; i >= 1; --i) {
    /* halve the width still to search: 32, 16, 8, 4, 2 bits */
    const __u32 w = 1u << i;
    const __u64 t = x >> w; /* < 2^w: x has at most 2^(i+1) bits here */
    const __u32 shift = (__u32)((t + ((1ULL << w) - 1)) >> w) << i;
    x >>= shift;
    b |= shift;
  }
  return b | (__u32)(x >> 1);
}

/* The histogram bucket of a latency: floor(log2(ns)) (0 for 0 and 1 ns), at
 * most FT_UP_HIST - 1. One home for the BPF program and the readers. */
static inline __u32 ft_up_hist_bucket(__u64 ns) {
  const __u32 b = ft_up_log2(ns);
  return b < FT_UP_HIST - 1 ? b : FT_UP_HIST - 1;
}

/* An op's size class, a statistics row's key: 0 for 0 bytes, else
 * 1 + floor(log2(bytes)): [2^(c-1), 2^c) bytes, 1 to 64. A row's size is the
 * mean of its ops', exact wherever a class holds one size (a program's sizes
 * are mostly powers of two or few), and the rows per link stay bounded. */
static inline __u32 ft_up_size_class(__u64 bytes) { return bytes ? 1 + ft_up_log2(bytes) : 0; }

#endif /* FABTRACE_UPROBE_OPS_H */
