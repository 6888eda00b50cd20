// The test families and what each needs from the provider.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cq_reader.h"
#include "fabric.h"

namespace ftapp {

class Env;

struct FamilyDef {
  const char* name;
  uint64_t required;                   // capabilities that must be present
  std::vector<uint64_t> optional;      // capabilities used when present
  uint64_t any_of;                     // at least one of these must remain (0: none)
  FabricSpec spec;                     // caps are filled in by the runner
  CqMethod method;                     // how completions are read
  std::vector<const char*> functions;  // reported as skipped if the family cannot run
  void (*run)(Env&);
};

const std::vector<FamilyDef>& families();
const FamilyDef* find_family(const std::string& name);

void run_msg(Env& env);
void run_tagged(Env& env);
void run_rma(Env& env);
void run_atomic(Env& env);
void run_inject(Env& env);
void run_cancel(Env& env);
void run_threads(Env& env);
void run_pingpong(Env& env);
void run_stream(Env& env);
void run_multirecv(Env& env);
void run_peek(Env& env);
void run_sep(Env& env);
void run_srx(Env& env);
void run_trigger(Env& env);
void run_sizes(Env& env);
void run_multiep(Env& env);
void run_bw(Env& env);
void run_recvtiming(Env& env);
void run_marks(Env& env);
void run_writes(Env& env);
// marks: the fi_tsend count of rank 0 in iteration i.
size_t marks_sends_in(size_t iteration);

// The message size of a family whose messages carry the payload header: --size,
// and at least the header.
size_t payload_size(Env& env);
// The families where rank 0 sends and rank 1 receives: each rank runs its half
// with payload_size(env) bytes, then both meet at "fin".
void run_by_rank(Env& env, void (*rank0)(Env&, size_t), void (*rank1)(Env&, size_t));

}  // namespace ftapp
