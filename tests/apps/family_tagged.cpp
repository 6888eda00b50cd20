// "tagged" family: fi_tsend, fi_tsendv, fi_tsendmsg and fi_tsenddata against
// exact-tag fi_trecv, fi_trecvv and fi_trecvmsg.
#include "families.h"
#include "twosided.h"

namespace ftapp {

void run_tagged(Env& env) { run_two_sided(env, true); }

}  // namespace ftapp
