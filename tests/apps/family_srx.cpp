// "srx" family: the two-sided engine with rank 1's receives posted on a shared
// receive context (fi_srx_context) bound to its endpoint: untagged, then tagged
// when the provider offers FI_TAGGED.
#include "env.h"
#include "families.h"
#include "twosided.h"

namespace ftapp {

void run_srx(Env& env) {
  if (env.fab.srx == nullptr) env.fatal("no shared receive context");
  run_two_sided(env, false);
  if (env.caps & FI_TAGGED) {
    run_two_sided(env, true);
  } else {
    env.skip("fi_srx_context:fi_trecv", "provider lacks FI_TAGGED");
  }
}

}  // namespace ftapp
