#include "families.h"

#include <rdma/fabric.h>

#include <algorithm>

#include "env.h"
#include "payload.h"

namespace ftapp {
namespace {

FabricSpec spec(bool thread_safe, bool single_cq, bool cq_wait, bool tx_selective) {
  FabricSpec s;
  s.thread_safe = thread_safe;
  s.single_cq = single_cq;
  s.cq_wait = cq_wait;
  s.tx_selective = tx_selective;
  return s;
}

FabricSpec multi_recv_spec() {
  FabricSpec s;
  s.rx_op_flags = FI_MULTI_RECV;  // plain fi_recv posts multi-receive buffers too
  return s;
}

FabricSpec scalable_spec() {
  FabricSpec s;
  s.contexts = 2;
  return s;
}

FabricSpec shared_rx_spec() {
  FabricSpec s;
  s.shared_rx = true;
  return s;
}

}  // namespace

const std::vector<FamilyDef>& families() {
  static const std::vector<FamilyDef> defs = {
      {"msg",
       FI_MSG,
       {FI_SOURCE},
       0,
       spec(false, false, false, false),
       CqMethod::kReadFrom,
       {"fi_send", "fi_sendv", "fi_sendmsg", "fi_senddata", "fi_recv", "fi_recvv", "fi_recvmsg"},
       run_msg},
      {"tagged",
       FI_TAGGED,
       {},
       0,
       spec(false, false, false, false),
       CqMethod::kRead,
       {"fi_tsend", "fi_tsendv", "fi_tsendmsg", "fi_tsenddata", "fi_trecv", "fi_trecvv",
        "fi_trecvmsg"},
       run_tagged},
      {"rma",
       FI_RMA,
       {},
       0,
       spec(false, false, false, false),
       CqMethod::kRead,
       {"fi_write", "fi_writev", "fi_writemsg", "fi_writedata", "fi_read", "fi_readv",
        "fi_readmsg"},
       run_rma},
      {"atomic",
       FI_ATOMIC,
       {},
       0,
       spec(false, false, false, false),
       CqMethod::kRead,
       {"fi_atomic", "fi_atomicv", "fi_atomicmsg", "fi_fetch_atomic", "fi_fetch_atomicv",
        "fi_fetch_atomicmsg", "fi_compare_atomic", "fi_compare_atomicv", "fi_compare_atomicmsg"},
       run_atomic},
      {"inject",
       FI_MSG,
       {FI_TAGGED, FI_RMA, FI_ATOMIC},
       0,
       spec(false, false, false, true),
       CqMethod::kRead,
       {"fi_inject", "fi_injectdata", "fi_tinject", "fi_tinjectdata", "fi_inject_write",
        "fi_inject_writedata", "fi_inject_atomic"},
       run_inject},
      {"cancel",
       0,
       {FI_TAGGED, FI_MSG},
       FI_TAGGED | FI_MSG,
       spec(false, false, false, false),
       CqMethod::kRead,
       {},
       run_cancel},
      {"threads",
       0,
       {FI_TAGGED, FI_MSG},
       FI_TAGGED | FI_MSG,
       spec(true, false, false, false),
       CqMethod::kRead,
       {},
       run_threads},
      {"pingpong",
       0,
       {FI_TAGGED, FI_MSG},
       FI_TAGGED | FI_MSG,
       spec(false, true, true, false),
       CqMethod::kSRead,
       {},
       run_pingpong},
      {"stream",
       0,
       {FI_TAGGED, FI_MSG},
       FI_TAGGED | FI_MSG,
       spec(false, true, false, false),
       CqMethod::kRead,
       {},
       run_stream},
      {"multirecv",
       FI_MSG | FI_MULTI_RECV,
       {},
       0,
       multi_recv_spec(),
       CqMethod::kRead,
       {"FI_MULTI_RECV:fi_recvmsg", "FI_MULTI_RECV:fi_recv"},
       run_multirecv},
      {"peek",
       FI_TAGGED,
       {},
       0,
       FabricSpec(),
       CqMethod::kRead,
       {"FI_PEEK:fi_trecvmsg", "FI_CLAIM:fi_trecvmsg"},
       run_peek},
      {"sep",
       FI_MSG,
       {},
       0,
       scalable_spec(),
       CqMethod::kRead,
       {"fi_scalable_ep:fi_send", "fi_scalable_ep:fi_sendmsg", "fi_scalable_ep:fi_recv",
        "fi_scalable_ep:fi_recvmsg"},
       run_sep},
      {"srx",
       FI_MSG,
       {FI_TAGGED},
       0,
       shared_rx_spec(),
       CqMethod::kRead,
       {"fi_srx_context:fi_recv", "fi_srx_context:fi_trecv"},
       run_srx},
      {"trigger",
       FI_MSG | FI_TRIGGER,
       {},
       0,
       FabricSpec(),
       CqMethod::kRead,
       {"FI_TRIGGER:fi_sendmsg", "FI_TRIGGER:fi_recvmsg"},
       run_trigger},
      {"sizes",
       0,
       {FI_TAGGED, FI_MSG},
       FI_TAGGED | FI_MSG,
       FabricSpec(),
       CqMethod::kRead,
       {},
       run_sizes},
      {"multiep",
       0,
       {FI_TAGGED, FI_MSG},
       FI_TAGGED | FI_MSG,
       FabricSpec(),
       CqMethod::kRead,
       {},
       run_multiep},
      {"bw", FI_TAGGED, {}, 0, FabricSpec(), CqMethod::kRead, {}, run_bw},
      {"recvtiming",
       0,
       {FI_TAGGED, FI_MSG},
       FI_TAGGED | FI_MSG,
       FabricSpec(),
       CqMethod::kRead,
       {},
       run_recvtiming},
      {"marks", FI_TAGGED, {}, 0, FabricSpec(), CqMethod::kRead, {}, run_marks},
      {"writes", FI_RMA, {}, 0, FabricSpec(), CqMethod::kRead, {"fi_read", "fi_write"}, run_writes},
  };
  return defs;
}

const FamilyDef* find_family(const std::string& name) {
  for (const FamilyDef& d : families()) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

size_t payload_size(Env& env) { return std::max(env.opt.size, kMinPayload); }

void run_by_rank(Env& env, void (*rank0)(Env&, size_t), void (*rank1)(Env&, size_t)) {
  const size_t size = payload_size(env);
  if (env.rank == 0) {
    rank0(env, size);
  } else {
    rank1(env, size);
  }
  env.sync("fin");
}

}  // namespace ftapp
