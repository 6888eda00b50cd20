// "msg" family: fi_send, fi_sendv, fi_sendmsg and fi_senddata against fi_recv,
// fi_recvv and fi_recvmsg; completions are read with fi_cq_readfrom.
#include "families.h"
#include "twosided.h"

namespace ftapp {

void run_msg(Env& env) { run_two_sided(env, false); }

}  // namespace ftapp
